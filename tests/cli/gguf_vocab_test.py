#!/usr/bin/python3
"""A GGUF's own vocabulary (tokenizer.ggml.*) through `attn tokenize model.gguf` and
`--text` with `--params model.gguf`, against oracles attn did not write:
- byte-level BPE ("gpt2" with the pre-tokenizers gpt-2, llama-bpe, qwen2): the same
  vocabulary and merges written by llama.cpp's gguf-py and as a tokenizer.json
  (tests/unit/gguf_vocab_fixtures.py); every text of tests/tokenizer/texts.py gives the
  same ids and tokens both ways, and the tokenizer.json's ids are Hugging Face tokenizers'
  own when the npm oracle is installed;
- SentencePiece ("llama"): a model trained with python3-sentencepiece, converted as
  convert_hf_to_gguf.py does (pieces, scores, token types): sentencepiece's ids (recomputed
  live when python3-sentencepiece is there, else the committed spm_expected.json), with BOS
  or EOS as add_bos_token/add_eos_token say;
- hostile vocabulary metadata: exit 2 with one line naming the key.

    /usr/bin/python3 tests/cli/gguf_vocab_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import shutil
import struct
import sys

from harness import ROOT, case, check, main, path, run, test
from tokenizer_documents import ALL_TEXTS, TEXTS, node_installed, node_oracle
from tokenizer_documents import attn_tokenize as tokenize

VOCAB = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf", "vocab")
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
from gguf_vocab_fixtures import tiny_tokenizer_json  # noqa: E402


def compare(name, ours, theirs, texts, tokens=True):
    check(f"{name}: one result per text", len(ours) == len(theirs) == len(texts),
          f"{len(ours)} vs {len(theirs)}")
    for text, a, b in zip(texts, ours, theirs):
        # attn's documents say "token_ids"; the Node oracle (oracle.js) says "ids".
        want = (b["token_ids"] if "token_ids" in b else b["ids"]) if isinstance(b, dict) else b
        ok = a["token_ids"] == want and (not tokens or not isinstance(b, dict)
                                         or a["tokens"] == b["tokens"])
        check(f"{name}: {text[:40]!r}", ok, f"{a} != {b}")


def bpe_test(pre):
    gguf = os.path.join(VOCAB, f"bpe_{pre}.gguf")
    doc = os.path.join(VOCAB, f"bpe_{pre}.json")
    ours = tokenize(gguf, ALL_TEXTS)
    compare(f"{pre} gguf vs tokenizer.json", ours, tokenize(doc, ALL_TEXTS), ALL_TEXTS)
    compare(f"{pre} --no-special-tokens", tokenize(gguf, TEXTS[:4], False),
            tokenize(doc, TEXTS[:4], False), TEXTS[:4])
    if node_installed():
        theirs = node_oracle([{"tokenizer": doc, "texts": ALL_TEXTS, "special": True}])[0]
        compare(f"{pre} gguf vs Hugging Face tokenizers", ours, theirs, ALL_TEXTS,
                tokens=False)


for pre in ("gpt-2", "llama-bpe", "qwen2"):
    test(f"byte-level BPE, pre {pre}: GGUF vs tokenizer.json")(lambda pre=pre: bpe_test(pre))


def sentencepiece_ids():
    """sentencepiece's ids for TEXTS, live when the module is there."""
    with open(os.path.join(VOCAB, "spm_expected.json"), encoding="utf-8") as f:
        want = json.load(f)
    check("spm_expected.json holds today's texts", want["texts"] == TEXTS, "regenerate it")
    try:
        import sentencepiece as spm
    except ImportError:
        return want
    sp = spm.SentencePieceProcessor(model_file=os.path.join(VOCAB, "spm.model"))
    return {"ids": [sp.encode(t) for t in TEXTS], "bos": sp.bos_id(), "eos": sp.eos_id()}


@test("llama (SentencePiece) vocabulary: GGUF vs sentencepiece")
def _():
    want = sentencepiece_ids()
    gguf = os.path.join(VOCAB, "spm.gguf")
    compare("spm.gguf vs sentencepiece", tokenize(gguf, TEXTS),
            [[want["bos"]] + ids for ids in want["ids"]], TEXTS)
    compare("spm.gguf --no-special-tokens", tokenize(gguf, TEXTS, False), want["ids"], TEXTS)
    compare("spm_eos.gguf (add_bos_token false, add_eos_token true)",
            tokenize(os.path.join(VOCAB, "spm_eos.gguf"), TEXTS),
            [ids + [want["eos"]] for ids in want["ids"]], TEXTS)
    # The vocabulary strings as the tokenizer.model gives them.
    compare("spm.gguf tokens vs spm.model", tokenize(gguf, TEXTS),
            tokenize(os.path.join(VOCAB, "spm.model"), TEXTS), TEXTS)


def tiny_hf_folder():
    """fixtures/gguf/models/llama as a Hugging Face folder (config.json, model.safetensors
    from llama_hf.npz) with TINY_SPM of gguf_vocab_fixtures.py as a llama-2 style
    tokenizer.json (Prepend + Replace normalizer, BPE with byte fallback, BOS template)."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    import reference as ref
    models = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf", "models")
    folder = path("hf-llama")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(models, "llama_config.json")) as f:
        config = json.load(f)
    # The ids a converted llama's config.json holds (the GGUF's bos/eos): a list of texts
    # pads with EOS on both sides.
    config.update({"bos_token_id": 1, "eos_token_id": 2})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    t = np.load(os.path.join(models, "llama_hf.npz"))
    ref.write_safetensors(os.path.join(folder, "model.safetensors"),
                          [(k, "F32", t[k]) for k in sorted(t.files)])
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tiny_tokenizer_json(), f)
    return folder


@test("--text through a whole model: GGUF with its vocabulary vs the Hugging Face folder")
def _():
    import numpy as np
    folder = tiny_hf_folder()
    gguf = os.path.join(VOCAB, "llama_vocab.gguf")
    texts = ["a b ab ba", "ba a"]
    for label, extra in (("one text", ["--text", texts[0]]),
                         ("two texts", ["--text", texts[0], "--text", texts[1]])):
        docs = []
        for params in (folder, gguf):
            rc, so, se = run(["compute", "--params", params, "--return", "hidden_states"]
                             + extra)
            check(f"{label}: {os.path.basename(params)} exit 0", rc == 0, se)
            if rc != 0:
                return
            docs.append(json.loads(so))
        hf, gg = docs
        check(f"{label}: the same labels", hf["key_tokens"] == gg["key_tokens"],
              f"{hf['key_tokens']} != {gg['key_tokens']}")
        for key in ("weights", "hidden_states"):
            a, b = np.array(hf[key], dtype=np.float64), np.array(gg[key], dtype=np.float64)
            # float32 tensors on both sides, the same forward pass: equal but for the
            # order of float32 sums.
            err = float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")
            check(f"{label}: {key} agree (max |diff| {err:.2g} <= 1e-5)", err <= 1e-5,
                  f"shapes {a.shape} {b.shape}")
    ids = tokenize(gguf, texts)
    check("the GGUF's ids for the texts", [d["token_ids"] for d in ids] ==
          [[1, 6, 7, 6, 5, 7, 4], [1, 7, 4, 6]], ids)


# ---- hostile vocabulary metadata -------------------------------------------------------

def gguf_string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value(kind, v):
    """(type code, payload) of a GGUF metadata value: 'str', 'u32', 'i32', 'f32', 'bool',
    'u8', or ('arr', element kind, items)."""
    codes = {"u8": 0, "u32": 4, "i32": 5, "f32": 6, "bool": 7, "str": 8}
    fmt = {"u8": "<B", "u32": "<I", "i32": "<i", "f32": "<f", "bool": "<?"}
    if kind == "str":
        return codes["str"], gguf_string(v)
    if kind in fmt:
        return codes[kind], struct.pack(fmt[kind], v)
    elem, items = v
    body = b"".join(value(elem, x)[1] for x in items)
    return 9, struct.pack("<IQ", codes[elem], len(items)) + body


def vocab_gguf(name, kv):
    """A GGUF with metadata only: kv is {key: (kind, value)}."""
    body = b""
    for key, (kind, v) in kv.items():
        code, payload = value(kind, v)
        body += gguf_string(key) + struct.pack("<I", code) + payload
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)) + body
    with open(path(name), "wb") as f:
        f.write(data)
    return path(name)


TOKENS = ["a", "b", "ab", "\u0120", "<s>"]
GOOD = {"general.architecture": ("str", "llama"), "tokenizer.ggml.model": ("str", "gpt2"),
        "tokenizer.ggml.pre": ("str", "gpt-2"),
        "tokenizer.ggml.tokens": ("arr", ("str", TOKENS)),
        "tokenizer.ggml.token_type": ("arr", ("i32", [1, 1, 1, 1, 3])),
        "tokenizer.ggml.merges": ("arr", ("str", ["a b"]))}
SPM = {"general.architecture": ("str", "llama"), "tokenizer.ggml.model": ("str", "llama"),
       "tokenizer.ggml.tokens": ("arr", ("str", ["<unk>", "<s>", "</s>", "\u2581a", "a",
                                                 "\u2581"])),
       "tokenizer.ggml.scores": ("arr", ("f32", [0, 0, 0, -1, -2, -3])),
       "tokenizer.ggml.token_type": ("arr", ("i32", [2, 3, 3, 1, 1, 1]))}


def hostile(name, base, changes, err):
    kv = dict(base)
    for k, v in changes.items():
        if v is None:
            kv.pop(k, None)
        else:
            kv[k] = v
    file = vocab_gguf(f"vocab-{len(HOSTILE)}.gguf", kv)
    HOSTILE.append(name)
    case(f"hostile vocabulary: {name}", ["tokenize", file, "--text", "ab"], code=2, err=err)


HOSTILE = []
case("a good tiny vocabulary", ["tokenize", vocab_gguf("good.gguf", GOOD), "--ids", "--text",
                                "ab<s>b"], out=lambda o: o == b"2 4 1\n" or o)
case("a good tiny llama vocabulary",
     ["tokenize", vocab_gguf("spm.gguf", SPM), "--ids", "--text", "a a"],
     out=lambda o: o == b"1 3 3\n" or o)
hostile("no vocabulary", GOOD, {"tokenizer.ggml.model": None}, "no vocabulary")
hostile("unknown tokenizer model", GOOD, {"tokenizer.ggml.model": ("str", "bert")},
        "tokenizer 'bert' is not supported")
hostile("tokens of the wrong type", GOOD, {"tokenizer.ggml.tokens": ("arr", ("i32", [1, 2]))},
        "tokenizer.ggml.tokens': expected an array of string, got an array of int32")
hostile("tokens not an array", GOOD, {"tokenizer.ggml.tokens": ("str", "a")},
        "tokenizer.ggml.tokens': expected an array of string, got string")
hostile("token types of another length", GOOD,
        {"tokenizer.ggml.token_type": ("arr", ("i32", [1, 1]))}, "2 entries for 5 tokens")
hostile("more token types than tokens", GOOD,
        {"tokenizer.ggml.token_type": ("arr", ("i32", [1] * 7))}, "7 entries for 5 tokens")
hostile("an unknown token type", GOOD,
        {"tokenizer.ggml.token_type": ("arr", ("i32", [1, 1, 1, 9, 1]))}, "has type 9")
hostile("scores of another length", SPM,
        {"tokenizer.ggml.scores": ("arr", ("f32", [0.0]))}, "1 entries for 6 tokens")
hostile("scores of the wrong type", SPM,
        {"tokenizer.ggml.scores": ("arr", ("u32", [0] * 6))}, "expected an array of float32")
hostile("a llama token of characters that are no tokens", SPM,
        {"tokenizer.ggml.tokens": ("arr", ("str", ["<unk>", "<s>", "</s>", "\u2581a", "a", "b"]))},
        "token 3 .* holds the character .* that is no token")
hostile("llama vocabulary without scores", SPM, {"tokenizer.ggml.scores": None},
        "tokenizer.ggml.scores': missing")
hostile("a merge naming a missing token", GOOD,
        {"tokenizer.ggml.merges": ("arr", ("str", ["a c"]))}, "the token \"c\" is not in")
hostile("a merge whose result is missing", GOOD,
        {"tokenizer.ggml.merges": ("arr", ("str", ["b a"]))}, "merged token \"ba\" is not in")
hostile("a merge without a space", GOOD, {"tokenizer.ggml.merges": ("arr", ("str", ["ab"]))},
        "is not two tokens and a space")
hostile("no merges", GOOD, {"tokenizer.ggml.merges": None}, "merges': missing")
hostile("BOS id out of range", GOOD, {"tokenizer.ggml.bos_token_id": ("u32", 5)},
        "bos_token_id': expected a token id below the vocabulary's 5 tokens")
hostile("EOS id of the wrong type", GOOD, {"tokenizer.ggml.eos_token_id": ("str", "1")},
        "eos_token_id': expected a token id")
hostile("add_bos_token without a BOS id", GOOD,
        {"tokenizer.ggml.add_bos_token": ("bool", True)}, "bos_token_id': missing, but")
hostile("add_bos_token not a bool", GOOD, {"tokenizer.ggml.add_bos_token": ("u8", 1)},
        "add_bos_token': expected a bool, got uint8")
hostile("an unknown pre-tokenizer", GOOD, {"tokenizer.ggml.pre": ("str", "falcon")},
        "pre-tokenizer 'falcon' is not supported \\(supported: gpt-2")
hostile("no pre-tokenizer", GOOD, {"tokenizer.ggml.pre": None}, "tokenizer.ggml.pre': missing")
hostile("two tokens with one text", GOOD,
        {"tokenizer.ggml.tokens": ("arr", ("str", ["a", "b", "ab", "a", "<s>"]))},
        "tokens 0 and 3 are both \"a\"")
hostile("invalid UTF-8 in a token", GOOD,
        {"tokenizer.ggml.tokens": ("arr", ("str", ["a", "b", "ab", b"\xff", "<s>"]))},
        "tokens\\[3\\]: invalid UTF-8")

main()

#!/usr/bin/python3
"""CLI tests of GGUF files (llama.cpp's checkpoints): `attn info model.gguf` lists the
architecture, the {arch}.* hyper-parameters, the metadata, the tensor table and the config
the model maps to, as text and as JSON (values as gguf-py wrote them: the fixtures of
tests/unit/fixtures/gguf/, see gguf_fixtures.py and gguf_model_fixtures.py); hostile files
(bad magic, truncated anywhere, huge counts, unknown types) are one-line errors, exit 2.

    /usr/bin/python3 tests/cli/gguf_test.py PATH/TO/attn [--case NAME]   (from the repo root)
    /usr/bin/python3 tests/cli/gguf_test.py --list
"""
import json
import os
import struct

from harness import ROOT, case, check, expect, main, path, test

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf")
LLAMA = os.path.join(FIXTURES, "models", "llama.gguf")
QUANTS = os.path.join(FIXTURES, "quants.gguf")
METADATA = os.path.join(FIXTURES, "metadata.gguf")


def contains(*needles):
    def check_out(out):
        text = out.decode()
        missing = [n for n in needles if n not in text]
        return not missing or f"missing {missing}"
    return check_out


case("info lists a llama GGUF", ["info", LLAMA],
     out=contains("GGUF v3, 21 tensors", "architecture: llama",
                  "llama.attention.head_count = 4", "llama.attention.layer_norm_rms_epsilon = 1e-06",
                  "llama.rope.freq_base = 500000.0", "blk.0.attn_q.weight",
                  '"model_type":"llama"', '"num_key_value_heads":2'))


@test("info --json: the tensor table and the config")
def _():
    out = expect(["info", "--json", QUANTS], name="info --json quants")
    j = json.loads(out)
    types = {t["name"]: t["type"] for t in j["tensors"]}
    check("types", types["q4_k.random"] == "Q4_K" and types["iq4_nl.random"] == "IQ4_NL"
          and types["bf16"] == "BF16", types)
    check("shape", all(t["shape"] == [2, 256] for t in j["tensors"]), j["tensors"][:2])
    check("not a model", "architecture 'quants' is not supported" in j["config_error"], j)
    out = expect(["info", "--json", LLAMA], name="info --json llama")
    j = json.loads(out)
    check("config", j["config"]["num_attention_heads"] == 4 and j["config"]["head_dim"] == 4
          and j["config"]["rms_norm_eps"] == 1e-6, j["config"])


@test("info --json: metadata of every type as gguf-py wrote it")
def _():
    want = json.load(open(os.path.join(FIXTURES, "metadata_expected.json")))
    j = json.loads(expect(["info", "--json", METADATA], name="info --json metadata"))
    for key, (kind, value) in want["metadata"].items():
        if key == "general.architecture":
            check(key, j["architecture"] == value, j["architecture"])
            continue
        got = j["metadata"][key]
        if kind == "float32":
            check(key, abs(got - value) < 1e-7, got)
        else:
            check(key, got == value, f"{got!r} != {value!r}")


def write_bytes(name, data):
    with open(path(name), "wb") as f:
        f.write(data)
    return path(name)


whole = open(METADATA, "rb").read()
for cut in (0, 3, 4, 8, 20, 30, 100, len(whole) // 2, len(whole) - 1):
    case(f"truncated at {cut} bytes", ["info", write_bytes(f"cut{cut}.gguf", whole[:cut])],
         code=2, err=r"cut\d+\.gguf: (not a GGUF file|truncated|.*(reach|bytes left))")


def header(n_tensors, n_kv, version=3):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


case("bad magic", ["info", write_bytes("magic.gguf", b"GGML" + whole[4:])], code=2,
     err="not a GGUF file")
case("huge tensor count", ["info", write_bytes("count.gguf", header(2 ** 64 - 1, 0))], code=2,
     err="tensor count: count 18446744073709551615")
case("huge string length",
     ["info", write_bytes("string.gguf", header(0, 1) + struct.pack("<Q", 2 ** 63) + b"k" * 16)],
     code=2, err="string length 9223372036854775808 at offset 24 reaches past the end")
case("big-endian file", ["info", write_bytes("be.gguf", b"GGUF" + struct.pack(">IQQ", 3, 0, 0))],
     code=2, err="big-endian")
tensor = struct.pack("<Q", 1) + b"w" + struct.pack("<IQIQ", 1, 32, 77, 0)
case("unknown tensor type", ["info", write_bytes("type.gguf", header(1, 0) + tensor)], code=2,
     err="tensor 'w': unknown ggml type 77")
case("missing file", ["info", "nope.gguf"], code=2, err="nope.gguf: cannot read")

main()

#!/usr/bin/env python3
"""CLI tests of the score-feature flags of `attn compute` (and `explain`, which shares
them): each flag gives exactly what the problem field of the same meaning gives, a flag
overrides the field, malformed values are one-line errors (exit 2), and --help documents
every flag. Also `--precision f64` with `--dtype`, `--prefix`/`--layout` with a
.safetensors checkpoint, and `attn info` on .safetensors files.

Run from the repository root: /usr/bin/python3 tests/cli/features_cli_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import json
import os
import re
import struct

import numpy as np

import harness
from harness import TMP, check, main, test, write


def run(args, stdin=None):
    rc, so, se = harness.run(args, stdin, timeout=60)
    return rc, so.decode(), se


def _error_case(name, args, pattern, stdin=None):
    rc, out, err = run(args, stdin)
    lines = err.strip().splitlines()
    check(name, rc == 2 and len(lines) == 1 and lines[0].startswith("attn: error: ")
          and re.search(pattern, lines[0]) is not None and out == "",
          f"exit {rc}, stderr {err.strip()[:300]!r}")


def error_case(name, args, pattern, stdin=None, before=None):
    """A case of the table: exit 2, one error line matching pattern, nothing on stdout;
    before() runs first (it writes the case's input)."""
    def body():
        if before is not None:
            before()
        _error_case(name, args, pattern, stdin)
    test(name)(body)


rng = np.random.default_rng(7)
H, LQ, LK, D = 2, 5, 7, 4
q = rng.standard_normal((1, H, LQ, D))
k = rng.standard_normal((1, H, LK, D))
v = rng.standard_normal((1, H, LK, 3))
for name, arr in (("q.npy", q), ("k.npy", k), ("v.npy", v)):
    write(name, arr)
QKV = ["-q", "q.npy", "-k", "k.npy", "-v", "v.npy"]
BASE = {"query": "q.npy", "key": "k.npy", "value": "v.npy"}


def same_as_field(name, flags, fields, base_fields=None, extra=()):
    """A case of the table: see _same_as_field."""
    test(name)(lambda: _same_as_field(name, flags, fields, base_fields, extra))


def _same_as_field(name, flags, fields, base_fields=None, extra=()):
    """`compute --flags` (on a problem holding base_fields) == `compute` of a problem holding
    fields: the flag means the field, and overrides it."""
    p_flag = write(f"flag_{abs(hash(name))}.json", dict(BASE, **(base_fields or {})))
    p_field = write(f"field_{abs(hash(name))}.json", dict(BASE, **fields))
    rc1, out1, err1 = run(["compute", p_flag, *flags, *extra])
    rc2, out2, err2 = run(["compute", p_field, *extra])
    check(name, rc1 == 0 and rc2 == 0 and out1 == out2 and out1 != "",
          f"exit {rc1}/{rc2} {err1.strip()[:200]} {err2.strip()[:200]}\n{out1[:200]}\n{out2[:200]}")
    return out1


# --- each flag is its field --------------------------------------------------------------
same_as_field("--window", ["--window", "2,1"], {"window": [2, 1]})
same_as_field("--window -1", ["--window", "-1,0"], {"window": [-1, 0]})
same_as_field("--window-align", ["--window", "1,1", "--window-align", "bottom-right"],
              {"window": [1, 1], "window_align": "bottom-right"})
same_as_field("--softcap", ["--softcap", "0.5"], {"softcap": 0.5})
same_as_field("--softcap none", ["--softcap", "none"], {}, {"softcap": 0.5})
same_as_field("--alibi", ["--alibi"], {"alibi": True})
same_as_field("--alibi=slopes", ["--alibi=0.5,0.25"], {"alibi": [0.5, 0.25]})
same_as_field("--alibi=none", ["--alibi=none"], {}, {"alibi": True})
same_as_field("--sinks", ["--sinks", "0.5,-1"], {"sinks": [0.5, -1]})
same_as_field("--sinks none", ["--sinks", "none"], {}, {"sinks": [1, 2]})
same_as_field("--return", ["--return", "lse,entropy,argmax"],
              {"return": ["lse", "entropy", "argmax"]}, extra=["--no-weights"])
same_as_field("--top-k", ["--top-k", "3"], {"return": ["top_k"], "top_k": 3})
same_as_field("--top-k with --return", ["--return", "lse", "--top-k", "2"],
              {"return": ["lse", "top_k"], "top_k": 2})
same_as_field("--precision f64", ["--precision", "f64"], {"precision": "f64"})
same_as_field("--precision overrides", ["--precision", "f32"], {}, {"precision": "f64"})
same_as_field("--window overrides", ["--window", "0,0"], {"window": [0, 0]}, {"window": [3, 3]})
same_as_field("all together",
              ["--window", "3,0", "--softcap", "2", "--alibi", "--sinks", "0,1",
               "--return", "lse", "--causal=bottom-right"],
              {"window": [3, 0], "softcap": 2, "alibi": True, "sinks": [0, 1],
               "return": ["lse"], "causal": "bottom-right"})

# Flags alone (no PROBLEM) work too, and actually change the result.


@test("flags alone change the result")
def _():
    rc, plain, _ = run(["compute", *QKV])
    rc2, windowed, err = run(["compute", *QKV, "--window", "0,0"])
    check("flags alone", rc == 0 and rc2 == 0 and plain != windowed, err)
    w = np.array(json.loads(windowed)["weights"])
    check("--window 0,0 sees only the diagonal", np.allclose(w, np.eye(LQ, LK)[None]), str(w))
    rc, out, err = run(["compute", *QKV, "--top-k", "2", "--no-weights"])
    r = json.loads(out) if rc == 0 else {}
    check("--top-k result", rc == 0 and np.array(r["top_k"]["indices"]).shape == (1, H, LQ, 2)
          and "weights" not in r, err)



# --- mask conventions --------------------------------------------------------------------
keep = rng.random((LQ, LK)) > 0.4
keep[:, 0] = True
write("keep.npy", keep)
write("ignore.npy", ~keep)
write("additive.npy", np.where(keep, 0.0, -np.inf))


@test("--mask-convention keep, torch-mha, additive")
def _():
    rc, want, _ = run(["compute", *QKV, "--mask", "keep.npy"])
    for conv, f in (("keep", "keep.npy"), ("torch-mha", "ignore.npy"), ("additive", "additive.npy")):
        rc, out, err = run(["compute", *QKV, "--mask", f, "--mask-convention", conv])
        check(f"--mask-convention {conv}", rc == 0 and out == want, err)


same_as_field("--mask-convention is the field", ["--mask", "ignore.npy", "--mask-convention",
              "torch-mha"], {"mask": "ignore.npy", "mask_convention": "torch-mha"})

# --- precision and dtype -----------------------------------------------------------------


@test("--precision f64 with --dtype, stdin and --output")
def _():
    rc, out, err = run(["compute", *QKV, "--precision", "f64", "--dtype", "f64",
                        "-o", "o64.npy", "--weights", "w64.npy"])
    rc2, doc64, err2 = run(["compute", *QKV, "--precision", "f64"])
    if rc == 0 and rc2 == 0:
        r = json.loads(doc64)
        check("f64 --dtype f64 output exact", np.array_equal(np.load(os.path.join(TMP, "o64.npy")),
                                                              np.array(r["output"])))
        check("f64 --dtype f64 weights exact", np.array_equal(np.load(os.path.join(TMP, "w64.npy")),
                                                               np.array(r["weights"])))
        want = np.einsum("bhij,bhjd->bhid", np.array(r["weights"]), v)
        check("f64 result document has float64 digits",
              np.allclose(np.array(r["output"]), want, rtol=1e-13, atol=1e-13))
    else:
        check("f64 --dtype f64", False, err + err2)
    # Arrays from stdin (NPY f8 or JSON) are not rounded through float32 on the way either.
    q_bytes = open(os.path.join(TMP, "q.npy"), "rb").read()
    rc, out, err = run(["compute", "-q", "-", "-k", "k.npy", "-v", "v.npy", "--precision", "f64"],
                       q_bytes)
    check("f64 stdin npy == file", rc == 0 and out == doc64, err)
    rc, out, err = run(["compute", "-q", "-", "-k", "k.npy", "-v", "v.npy", "--precision", "f64"],
                       json.dumps(q.tolist()).encode())
    check("f64 stdin json == file", rc == 0 and out == doc64, err)
    write("f64.json", dict(BASE, precision="f64", query="-"))
    rc, out, err = run(["compute", "f64.json", "-q", "-"], q_bytes)
    check("f64 field, stdin npy == file", rc == 0 and out == doc64, err)
    rc, out, err = run(["compute", *QKV, "--precision", "f64", "-o", "o32.json"])
    check("f64 --output .json writes doubles", rc == 0 and
          json.load(open(os.path.join(TMP, "o32.json"))) == json.loads(doc64)["output"], err)



# --- malformed values --------------------------------------------------------------------
error_case("--window one number", ["compute", *QKV, "--window", "2"], r"--window: expected L,R")
error_case("--window -2", ["compute", *QKV, "--window", "-2,0"], r"--window: expected L,R")
error_case("--window junk", ["compute", *QKV, "--window", "a,b"], r"--window")
error_case("--softcap junk", ["compute", *QKV, "--softcap", "x"], r"--softcap: expected")
error_case("--softcap 0", ["compute", *QKV, "--softcap", "0"], r"softcap: expected .*> 0")
error_case("--alibi bad slope", ["compute", *QKV, "--alibi=0.5,x"], r"--alibi: expected")
error_case("--alibi wrong count", ["compute", *QKV, "--alibi=0.5"], r"alibi: expected a list of 2")
error_case("--sinks wrong count", ["compute", *QKV, "--sinks", "1,2,3"],
           r"sinks: expected a list of 2")
error_case("--return unknown", ["compute", *QKV, "--return", "lse,max"], r"return: expected")
error_case("--top-k 0", ["compute", *QKV, "--top-k", "0"], r"--top-k")
error_case("--precision f16", ["compute", *QKV, "--precision", "f16"], r"--precision")
error_case("--mask-convention bad", ["compute", *QKV, "--mask-convention", "ignore"],
           r"--mask-convention")
error_case("--window-align bad", ["compute", *QKV, "--window-align", "left"], r"--window-align")
error_case("--prefix without checkpoint", ["compute", *QKV, "--prefix", "h.0."],
           r"--prefix: needs --params FILE.safetensors")
error_case("--layout bad", ["compute", *QKV, "--layout", "bert"], r"--layout")

# --- help ----------------------------------------------------------------------------------


@test("--help documents every feature flag; explain shares them")
def _():
    rc, help_text, _ = run(["compute", "--help"])
    for flag in ("--window", "--window-align", "--softcap", "--alibi", "--sinks",
                 "--mask-convention", "--return", "--top-k", "--precision", "--prefix", "--layout"):
        check(f"compute --help documents {flag}", re.search(re.escape(flag) + r"\b", help_text)
              is not None)
    check("--params help names safetensors", ".safetensors" in help_text)
    rc, explain_help, _ = run(["explain", "--help"])
    check("explain shares the flags", rc == 0 and "--window" in explain_help and
          "--precision" in explain_help)
    rc, out, err = run(["explain", *QKV, "--window", "1,0", "--softcap", "3"])
    check("explain takes the flags", rc == 0 and "softcap" in out, err)


# --- safetensors: --prefix / --layout, and attn info --------------------------------------
E = 4
x = rng.standard_normal((3, E))
write("x.npy", x)
gpt2 = {f"h.{i}.attn.c_attn.weight": rng.standard_normal((E, 3 * E)) / 2 for i in range(2)}
gpt2.update({f"h.{i}.attn.c_attn.bias": rng.standard_normal(3 * E) / 5 for i in range(2)})
gpt2.update({f"h.{i}.attn.c_proj.weight": rng.standard_normal((E, E)) / 2 for i in range(2)})
gpt2["wte.weight"] = rng.standard_normal((10, E))
write("gpt2.safetensors", gpt2, metadata={"format": "pt"})


@test("--prefix/--layout: a gpt2 checkpoint")
def _():
    rc1, out1, err1 = run(["compute", "-x", "x.npy", "--params", "gpt2.safetensors",
                           "--prefix", "h.1.attn.", "--layout", "gpt2", "--heads", "2"])
    write("ckpt.json", {"input": "x.npy", "num_heads": 2, "params": {
        "file": "gpt2.safetensors", "prefix": "h.1.attn.", "layout": "gpt2"}})
    rc2, out2, err2 = run(["compute", "ckpt.json"])
    check("--prefix/--layout == params object", rc1 == 0 and rc2 == 0 and out1 == out2,
          err1 + err2)
    rc3, out3, err3 = run(["compute", "ckpt.json", "--prefix", "h.0.attn."])
    check("--prefix overrides the problem's prefix", rc3 == 0 and out3 != out2, err3)
    # the reference: GPT-2 Conv1D y = x·W + b, fused q|k|v columns
    W, b, Wo = gpt2["h.1.attn.c_attn.weight"], gpt2["h.1.attn.c_attn.bias"], \
        gpt2["h.1.attn.c_proj.weight"]
    y = x @ W + b
    qq, kk, vv = y[:, :E], y[:, E:2 * E], y[:, 2 * E:]
    heads = []
    for h in range(2):
        sl = slice(h * E // 2, (h + 1) * E // 2)
        s = qq[:, sl] @ kk[:, sl].T / np.sqrt(E // 2)
        p = np.exp(s - s.max(1, keepdims=True))
        heads.append(p / p.sum(1, keepdims=True) @ vv[:, sl])
    want = np.concatenate(heads, 1) @ Wo
    check("gpt2 checkpoint result", rc1 == 0 and np.allclose(np.array(json.loads(out1)["output"]),
                                                             want, rtol=1e-5, atol=1e-5))





@test("info safetensors: tensors, layers, --json")
def _():
    rc, out, err = run(["info", "gpt2.safetensors"])
    lines = out.splitlines()
    check("info safetensors exit 0", rc == 0, err)
    check("info safetensors lists tensors",
          any(re.search(r"h\.0\.attn\.c_attn\.weight\s+F32\s+\[4, 12\]\s+192 B", ln) for ln in lines),
          out)
    check("info safetensors counts", re.search(r"7 tensors", out) is not None, out)
    check("info safetensors recognises layers",
          re.search(r"gpt2 .*prefix 'h\.0\.attn\.'", out) is not None and
          re.search(r"gpt2 .*prefix 'h\.1\.attn\.'", out) is not None, out)
    rc, out, err = run(["info", "gpt2.safetensors", "--json"])
    j = json.loads(out) if rc == 0 else {}
    check("info safetensors --json", rc == 0 and j.get("format") == "safetensors" and
          {"name": "wte.weight", "dtype": "F32", "shape": [10, 4], "bytes": 160} in j["tensors"]
          and {"layout": "gpt2", "prefix": "h.0.attn."} in j["layers"]


      and j.get("metadata") == {"format": "pt"}, out)
llama = {"model.layers.0.self_attn.q_proj.weight": rng.standard_normal((4, 4)),
         "model.layers.0.self_attn.k_proj.weight": rng.standard_normal((2, 4)),
         "model.layers.0.self_attn.v_proj.weight": rng.standard_normal((2, 4)),
         "model.layers.0.self_attn.o_proj.weight": rng.standard_normal((4, 4))}
write("llama.safetensors", llama)


@test("info safetensors: a llama layer")
def _():
    rc, out, err = run(["info", "llama.safetensors"])
    check("info llama layer", rc == 0 and re.search(r"llama .*prefix 'model\.layers\.0\.self_attn\.'",
                                                    out) is not None, out + err)


write("none.safetensors", {"embed": np.zeros((2, 2))})


@test("info safetensors without attention layers")
def _():
    rc, out, err = run(["info", "none.safetensors"])
    check("info without attention layers", rc == 0 and "no attention layer" in out, out + err)


# hostile files: one line, exit 2
good = open(os.path.join(TMP, "gpt2.safetensors"), "rb").read()
hostile = {
    "truncated": good[:-5],
    "header length beyond file": struct.pack("<Q", 1 << 40) + good[8:],
    "not json": struct.pack("<Q", 4) + b"abcd",
    "offsets out of range": None,
    "empty": b"",
}
hdr = json.dumps({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 64]}}).encode()
hostile["offsets out of range"] = struct.pack("<Q", len(hdr)) + hdr + b"\0" * 16
def write_bytes(name, data):
    with open(os.path.join(TMP, name), "wb") as f:
        f.write(data)


for name, data in hostile.items():
    error_case(f"info hostile safetensors: {name}", ["info", "bad.safetensors"],
               r"bad\.safetensors", before=lambda data=data: write_bytes("bad.safetensors", data))

main()

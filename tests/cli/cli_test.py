#!/usr/bin/env python3
"""CLI acceptance tests for attn: a table of (args, stdin, exit code, stderr regex,
checks), the bundled samples against samples/expected/, and the README's commands.

Run from the repository root: /usr/bin/python3 tests/cli/cli_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import glob
import json
import os
import re
import shlex
import subprocess

import numpy as np

from harness import ROOT, SAMPLES, TMP, case, check, main, run, test, write  # noqa: I001
import harness
from leak_rule import leak_env
from seed_example import CTX, SEED, W


def doc(so):
    return json.loads(so)


def close(a, b, tol=1e-5):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


# --- the seed's worked example ----------------------------------------------------------
write("seed.json", dict(SEED, variant="dot"))
case("seed dot weights and context", ["compute", "seed.json"],
     out=lambda so: close(doc(so)["weights"], W) and close(doc(so)["output"], CTX))
case("stdin problem", ["compute", "-"], stdin=json.dumps(dict(SEED, scale=1)).encode(),
     out=lambda so: close(doc(so)["weights"], W))
q, k, v = (np.array(SEED[n], dtype=np.float32) for n in ("query", "key", "value"))
write("q.npy", q)
write("k.npy", k)
write("v.npy", v)
write("v64.npy", v.astype(np.float64))
case("flags only -q -k -v", ["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy",
                             "--scale", "1"],
     out=lambda so: close(doc(so)["weights"], W))
case("long flags, f64 value", ["compute", "--query", "q.npy", "--key", "k.npy", "--value",
                               "v64.npy", "--variant", "dot"],
     out=lambda so: close(doc(so)["output"], CTX))
case("default scale is 1/sqrt(d)", ["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy"],
     out=lambda so: close(doc(so)["weights"],
                          np.exp(np.array([[2, 1, 1], [1, 1, 2]]) / np.sqrt(3)) /
                          np.exp(np.array([[2, 1, 1], [1, 1, 2]]) / np.sqrt(3)).sum(1,
                                                                               keepdims=True)))
case("--scale default", ["compute", "seed.json", "--scale", "default"],
     out=lambda so: not close(doc(so)["weights"], W))
case("flag overrides problem field", ["compute", "seed.json", "--scale", "0"],
     out=lambda so: close(doc(so)["weights"], np.full((2, 3), 1 / 3)))
case("--causal is top-left", ["compute", "seed.json", "--causal"],
     out=lambda so: close(doc(so)["weights"], [[1, 0, 0], [0.5, 0.5, 0]]))
case("--causal=bottom-right", ["compute", "seed.json", "--causal=bottom-right"],
     out=lambda so: close(doc(so)["weights"][0][2], 0) and doc(so)["weights"][0][1] > 0)

# --- outputs -------------------------------------------------------------------------------
@test("--output npy + --weights json")
def _():
    harness.expect(["compute", "seed.json", "--output", "o.npy", "--weights", "w.json"],
          out=lambda so: so == b"", name="--output npy + --weights json")
    check("output.npy content", os.path.exists(os.path.join(TMP, "o.npy")) and
          close(np.load(os.path.join(TMP, "o.npy")), CTX))
    check("output.npy is float32", np.load(os.path.join(TMP, "o.npy")).dtype == np.float32)
    check("weights.json content", close(json.load(open(os.path.join(TMP, "w.json"))), W))


@test("--dtype f64")
def _():
    harness.expect(["compute", "seed.json", "--output", "o64.npy", "--dtype", "f64"],
                   name="--dtype f64")
    check("f64 npy", np.load(os.path.join(TMP, "o64.npy")).dtype == np.float64)


@test("--output json")
def _():
    harness.expect(["compute", "seed.json", "-o", "o.json"], name="--output json")
    check("output.json content", close(json.load(open(os.path.join(TMP, "o.json"))), CTX))


case("--no-weights on stdout", ["compute", "seed.json", "--no-weights"],
     out=lambda so: "weights" not in doc(so) and close(doc(so)["output"], CTX))
case("--threads 1", ["compute", "seed.json", "--threads", "1"],
     out=lambda so: close(doc(so)["weights"], W))
case("--no-weights with --weights", ["compute", "seed.json", "--no-weights", "--weights",
                                     "x.npy"], code=2, err="--no-weights")


@test("unknown output extension")
def _():
    harness.expect(["compute", "seed.json", "-o", "out.txt"], code=2, err=r"out\.txt",
                   name="unknown output extension")
    check("no file for a refused output", not os.path.exists(os.path.join(TMP, "out.txt")))


# A failed write leaves the old file untouched and no temp file behind.
case("unwritable output dir", ["compute", "seed.json", "-o", "missing/dir/o.npy"], code=1,
     err="cannot write")


@test("failed compute keeps old output")
def _():
    with open(os.path.join(TMP, "keep.npy"), "wb") as f:
        f.write(b"old")
    harness.expect(["compute", "seed.json", "-o", "keep.npy", "--heads", "2"], code=2,
                   err="divisible", name="failed compute keeps old output")
    check("old file untouched", open(os.path.join(TMP, "keep.npy"), "rb").read() == b"old")
    check("no temp files left", not [n for n in os.listdir(TMP) if ".tmp" in n],
          str(os.listdir(TMP)))


# --- ids, tokens, non-finite ------------------------------------------------------------
case("id and tokens echoed", ["compute", "-"], stdin=json.dumps(
    dict(SEED, id={"n": 7}, query_tokens=["a", "b"], key_tokens=["x", "y", "z"])).encode(),
    out=lambda so: doc(so)["id"] == {"n": 7} and doc(so)["key_tokens"] == ["x", "y", "z"])
case("tokens for both needs Lq == Lk", ["compute", "-"],
     stdin=json.dumps(dict(SEED, tokens=["a", "b"])).encode(), code=2, err="tokens")
case("inf in bias blocks; strings in output", ["compute", "-"], stdin=json.dumps(
    dict(SEED, scale=1, bias=[["-inf", 0, 0], [0, 0, 0]])).encode(),
    out=lambda so: doc(so)["weights"][0][0] == 0)
case("nan input propagates as string", ["compute", "-"], stdin=json.dumps(
    dict(SEED, query=[["nan", 0, 1], [0, 1, 1]])).encode(),
    out=lambda so: doc(so)["output"][0][0] == "nan")
case("fully masked row warns", ["compute", "-"], stdin=json.dumps(
    dict(SEED, mask=[[0, 0, 0], [1, 1, 1]])).encode(), err=r"warning: 1 query row",
     out=lambda so: doc(so)["weights"][0] == [0, 0, 0] and doc(so)["output"][0] == [0, 0])


@test("--quiet silences the warning")
def _():
    harness.expect(["compute", "-", "--quiet"], stdin=json.dumps(
        dict(SEED, mask=[[0, 0, 0], [1, 1, 1]])).encode(), out=lambda so: True,
        name="--quiet silences the warning")
    rc, so, se = run(["compute", "-", "--quiet"],
                     json.dumps(dict(SEED, mask=[[0, 0, 0], [1, 1, 1]])).encode())
    check("--quiet stderr empty", se == "", se)


case("bool mask accepted", ["compute", "-"], stdin=json.dumps(
    dict(SEED, mask=[[True, False, True], [True, True, True]])).encode(),
    out=lambda so: doc(so)["weights"][0][1] == 0)
case("key padding [Lk]", ["compute", "-"], stdin=json.dumps(
    dict(SEED, key_padding_mask=[1, 1, 0])).encode(),
    out=lambda so: doc(so)["weights"][0][2] == 0 and doc(so)["weights"][1][2] == 0)

# --- relative paths ------------------------------------------------------------------------
os.makedirs(os.path.join(TMP, "sub"), exist_ok=True)
np.save(os.path.join(TMP, "sub", "q.npy"), q)
write("sub/p.json", {"query": "q.npy", "key": "../k.npy", "value": [[10, 0], [0, 10], [5, 5]],
                     "scale": 1})
case("paths relative to the problem file", ["compute", "sub/p.json"],
     out=lambda so: close(doc(so)["weights"], W))
case("flag paths relative to the working folder", ["compute", "sub/p.json", "-k", "k.npy"],
     out=lambda so: close(doc(so)["weights"], W))

# --- errors: exit 2, one line naming the culprit ----------------------------------------
BAD = [
    ("invalid JSON", "{", "invalid JSON"),
    ("not an object", "[1, 2]", "expected a JSON object"),
    ("unknown field", json.dumps(dict(SEED, quary=1)), "unknown field 'quary'"),
    ("unknown variant", json.dumps(dict(SEED, variant="fancy")), "variant"),
    ("self without weights", json.dumps({"variant": "self", "input": [[1.0]]}),
     "params or init"),
    ("ragged array", json.dumps(dict(SEED, query=[[1, 0, 1], [0, 1]])), "query"),
    ("deep array", json.dumps(dict(SEED, query=[[[[[1]]]]])), "query"),
    ("string in numbers", json.dumps(dict(SEED, query=[["x", 0, 1], [0, 1, 1]])), "query"),
    ("bool in numbers", json.dumps(dict(SEED, query=[[True, 0, 1], [0, 1, 1]])), "query"),
    ("null in numbers", json.dumps(dict(SEED, value=[[None, 0], [0, 10], [5, 5]])), "value"),
    ("key feature mismatch", json.dumps(dict(SEED, key=[[1, 0], [1, 1], [0, 1]])),
     r"key.*expected shape \[1, 2, 3\]|key"),
    ("value length mismatch", json.dumps(dict(SEED, value=[[10, 0], [0, 10]])),
     r"value: expected shape"),
    ("mask shape", json.dumps(dict(SEED, mask=[[1, 1], [1, 1]])),
     r"mask: expected shape \[Lq, Lk\] = \[2, 3\], got \[2, 2\]"),
    # [1, 1, 3] broadcasts (rank 3 is [B, Lq, Lk]); [1, 1, 4] does not.
    ("bias shape", json.dumps(dict(SEED, bias=[[[0, 0, 0, 0]]])), r"bias: expected shape"),
    ("key padding shape", json.dumps(dict(SEED, key_padding_mask=[1, 1])),
     r"key_padding_mask: expected shape"),
    ("heads do not divide", json.dumps(dict(SEED, num_heads=2)), "divisible"),
    ("kv heads do not divide", json.dumps(dict(SEED, num_heads=3, num_kv_heads=2)),
     "num_kv_heads"),
    ("bad num_heads type", json.dumps(dict(SEED, num_heads="2")), "num_heads"),
    ("bad causal", json.dumps(dict(SEED, causal="sideways")), "causal"),
    ("bad scale", json.dumps(dict(SEED, scale="inf")), "scale"),
    ("missing value", json.dumps({"query": SEED["query"], "key": SEED["key"]}), "value"),
    ("no query", json.dumps({"key": SEED["key"], "value": SEED["value"]}), "query"),
    ("query and input", json.dumps(dict(SEED, input=SEED["query"])), "query"),
    ("missing file", json.dumps(dict(SEED, query="nope.npy")), r"query: .*nope\.npy"),
    ("unknown param", json.dumps({"input": [[1.0, 2.0]], "params": {"wq": [[1.0]]}}),
     "unknown weight 'wq'"),
    ("param shape", json.dumps({"input": [[1.0, 2.0]],
                                "params": {"w_q": [[1.0]], "w_k": None, "w_v": None}}),
     r"w_q: expected shape \[\*, 2\], got \[1, 1\]"),
    ("params and init", json.dumps({"input": [[1.0]], "params": {}, "init": {}}), "init"),
    ("rank-4 with params", json.dumps({"query": [[[[1.0]]]], "key": [[[[1.0]]]],
                                       "value": [[[[1.0]]]], "init": {"seed": 1}}), "params"),
    ("rank-4 num_heads disagree", json.dumps({"query": [[[[1.0]]]], "key": [[[[1.0]]]],
                                              "value": [[[[1.0]]]], "num_heads": 2}),
     "num_heads"),
    ("rank-1 query", json.dumps(dict(SEED, query=[1, 2, 3])), "query"),
]
for name, text, err in BAD:
    case("error: " + name, ["compute", "-"], stdin=text.encode(), code=2, err=err)

with open(os.path.join(TMP, "trunc.npy"), "wb") as f:
    f.write(open(os.path.join(TMP, "q.npy"), "rb").read()[:-4])
case("truncated npy", ["compute", "-q", "trunc.npy", "-k", "k.npy", "-v", "v.npy"], code=2,
     err=r"query: .*trunc\.npy")
case("missing problem file", ["compute", "nope.json"], code=2, err="nope.json")
case("no problem at all", ["compute"], code=2, err="no problem")
case("unknown flag", ["compute", "--frobnicate"], code=2, err="frobnicate")
case("bad --heads", ["compute", "seed.json", "--heads", "0"], code=2, err="heads")
case("bad --dtype", ["compute", "seed.json", "--dtype", "f16"], code=2, err="dtype")
case("bad --scale", ["compute", "seed.json", "--scale", "abc"], code=2, err="scale")
case("unknown subcommand", ["frobnicate"], code=2)
case("no subcommand prints help", [], code=0)  # as `attn help`: usage on stdout, exit 0

# --- help and version -------------------------------------------------------------------
PROJECT_VERSION = re.search(r"project\(attn VERSION ([0-9.]+)",
                            open(os.path.join(ROOT, "CMakeLists.txt")).read()).group(1)
for args in (["--version"], ["compute", "--version"], ["info", "--version"]):
    case("version " + " ".join(args), args,
         # The SIMD lines after the first are checked in simd_cli_test.py.
         out=lambda so: so.decode().splitlines()[0] == "attn " + PROJECT_VERSION)
for args in (["--help"], ["compute", "--help"], ["info", "--help"], ["batch", "--help"],
             ["heatmap", "--help"]):
    case("help " + " ".join(args), args, out=lambda so: b"Usage" in so or b"usage" in so)
case("compute help lists every flag", ["compute", "--help"], out=lambda so: all(
    f.encode() in so for f in ["--query", "--key", "--value", "--input", "--context",
                               "--params", "--heads", "--kv-heads", "--scale", "--causal",
                               "--mask", "--bias", "--key-padding", "--seed", "--variant",
                               "--output", "--weights", "--heatmap", "--no-weights",
                               "--dtype", "--threads"]))

# --- info --------------------------------------------------------------------------------
write("w.json", W.tolist())
case("info npy", ["info", "q.npy"], out=lambda so: b"[2, 3]" in so and b"float32" in so)
case("info json", ["info", "w.json"], out=lambda so: b"[2, 3]" in so)
case("info --json", ["info", "v64.npy", "--json"],
     out=lambda so: doc(so)["shape"] == [3, 2] and doc(so)["dtype"] == "float64")
case("info bad file", ["info", "trunc.npy"], code=2, err="trunc.npy")
case("info missing", ["info", "none.npy"], code=2, err="none.npy")

# --- batch -------------------------------------------------------------------------------
lines = "\n".join([json.dumps(dict(SEED, id=1, scale=1)), "", "not json",
                   json.dumps(dict(SEED, id=3, num_heads=2)), json.dumps(dict(SEED, id=4))])
case("batch: order, errors, exit 1", ["batch"], stdin=lines.encode(), code=1,
     out=lambda so: [json.loads(x).get("id") for x in so.decode().splitlines()] ==
     [1, None, 3, 4] and "error" in json.loads(so.decode().splitlines()[2]) and
     close(json.loads(so.decode().splitlines()[0])["weights"], W))

# --- samples against samples/expected (computed by tests/oracle/reference.py) ---------------
def sample_case(name):
    exp_path = os.path.join(SAMPLES, "expected", name)
    if not check("sample has expected output " + name, os.path.exists(exp_path)):
        return
    expected = json.load(open(exp_path))
    harness.expect(["compute", os.path.join(SAMPLES, name)], out=lambda so: close(
        doc(so)["output"], expected["output"]) and close(doc(so)["weights"],
                                                         expected["weights"]),
        name="sample " + name)


for name in sorted(os.listdir(SAMPLES)):
    if not name.endswith(".json") or name.endswith(".params.json"):
        continue
    test("sample " + name)(lambda name=name: sample_case(name))

# --- README: every `$ attn ...` command in a ```console block runs, and prints what the
# README shows under it (the README cannot lie). -------------------------------------------

def same_numbers(a, b):
    """JSON values equal in structure and strings, numbers within float32 noise (the last
    digit of a float32 may differ between kernels and BLAS builds)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-5 * max(1.0, abs(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_numbers(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_numbers(a[k], b[k]) for k in a)
    return a == b


def same_text_or_numbers(got, shown):
    """Line by line: JSON lines compare as JSON (numbers within float32 noise), other lines
    compare as text."""
    got_lines, shown_lines = got.splitlines(), shown.splitlines()
    if len(got_lines) != len(shown_lines):
        return False
    for g, s in zip(got_lines, shown_lines):
        try:
            if not same_numbers(json.loads(g), json.loads(s)):
                return False
        except ValueError:
            if g != s:
                return False
    return True


# README.md and the documents it links (docs/*.md): one case per console block, named by
# the file; a block's commands run in order (one may read what the one before it wrote).
doc_paths = [os.path.join(ROOT, "README.md")]
if os.path.isdir(os.path.join(ROOT, "docs")):
    doc_paths += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
blocks = []  # (the document's name, [(command, what it prints)])
for doc_path in doc_paths:
    text = open(doc_path, encoding="utf-8").read() if os.path.exists(doc_path) else ""
    doc_name = "README" if doc_path.endswith("README.md") else os.path.relpath(doc_path, ROOT)
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        examples = []
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            cmd, _, shown = chunk.partition("\n")
            if cmd.startswith("attn "):
                examples.append((cmd, shown))
        if examples:
            blocks.append((doc_name, examples))
n_examples = sum(len(e) for _, e in blocks)
test("README has example commands")(lambda: check(
    "README and docs have example commands", n_examples >= 5, str(n_examples)))


def readme_case(examples):
    for cmd, shown in examples:
        args = shlex.split(cmd)[1:]
        p = subprocess.run([harness.ATTN] + args, cwd=ROOT, capture_output=True, timeout=60,
                           env=leak_env(args, ROOT))
        # `attn batch` exits 1 when a line failed (the README shows one that does).
        want = (0, 1) if cmd.startswith("attn batch") else (0,)
        check("README command: " + cmd, p.returncode in want, f"exit {p.returncode}")
        check("README output of: " + cmd, same_text_or_numbers(p.stdout.decode(), shown),
              f"prints {p.stdout.decode()[:200]!r}, README shows {shown[:200]!r}")


for doc_name, examples in blocks:
    test(doc_name + ": " + examples[0][0])(lambda examples=examples: readme_case(examples))

main()

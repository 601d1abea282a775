#!/usr/bin/env python3
"""CLI tests of `-` as stdin and stdout: an array, a mask, params or the whole problem read
from stdin (once), results, weights and heatmaps written to stdout, `info -` and
`explain -`, and --format against the extension.

Run from the repository root: /usr/bin/python3 tests/cli/stdio_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import io
import json
import os

import numpy as np

import seed_example
from harness import case, check, main, path, run, run_case, test, write
from seed_example import CTX, W

SEED = dict(seed_example.SEED, scale=1)

# --- "-" everywhere -------------------------------------------------------------------------
q, k, v = (np.array(SEED[n], dtype=np.float32) for n in ("query", "key", "value"))
np.save(path("q.npy"), q)
np.save(path("k.npy"), k)
np.save(path("v.npy"), v)
buf = io.BytesIO()
np.save(buf, q)
Q_NPY = buf.getvalue()
case("compute -q - (NPY on stdin)", ["compute", "-q", "-", "-k", "k.npy", "-v", "v.npy",
                                     "--scale", "1"], stdin=Q_NPY,
     out=lambda so: np.allclose(json.loads(so)["weights"], W, atol=1e-6))
case("compute -q - (JSON on stdin)", ["compute", "-q", "-", "-k", "k.npy", "-v", "v.npy",
                                      "--scale", "1"], stdin=json.dumps(SEED["query"]).encode(),
     out=lambda so: np.allclose(json.loads(so)["weights"], W, atol=1e-6))
case("compute --mask - (bool NPY on stdin)",
     ["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy", "--mask", "-"],
     stdin=(lambda b: (np.save(b, np.array([[1, 0, 1], [1, 1, 1]], dtype=bool)),
                       b.getvalue())[1])(io.BytesIO()),
     out=lambda so: json.loads(so)["weights"][0][1] == 0)
case("compute --params - ", ["compute", "-x", "q.npy", "--params", "-"],
     stdin=json.dumps({"w_q": np.eye(3).tolist(), "w_k": None, "w_v": None}).encode(),
     out=lambda so: np.array(json.loads(so)["output"]).shape == (2, 3))
for flag in ("-k", "-v"):
    files = {"-q": "q.npy", "-k": "k.npy", "-v": "v.npy"}
    src = {"-k": k, "-v": v}[flag]
    args = ["compute", "--scale", "1"]
    for f_, name_ in files.items():
        args += [f_, "-" if f_ == flag else name_]
    case(f"compute {flag} - (NPY on stdin)", args,
         stdin=(lambda b: (np.save(b, src), b.getvalue())[1])(io.BytesIO()),
         out=lambda so: np.allclose(json.loads(so)["weights"], W, atol=1e-6))
case("compute - with file paths relative to the working folder", ["compute", "-"],
     stdin=json.dumps(dict(SEED, query="q.npy", key="k.npy")).encode(),
     out=lambda so: np.allclose(json.loads(so)["output"], CTX, atol=1e-5))


@test("compute - | heatmap - -o - (PNG on stdout)")
def _():
    run_case("compute - | heatmap - -o - (PNG on stdout)", ["heatmap", "-", "-o", "-"],
         stdin=run(["compute", "-"], json.dumps(SEED).encode())[1],
         out=lambda so: so.startswith(b"\x89PNG\r\n\x1a\n") and so.endswith(b"IEND\xaeB`\x82"))


case("compute --heatmap - (PNG on stdout)", ["compute", "-", "--heatmap", "-", "--output",
                                             "o2.npy"], stdin=json.dumps(SEED).encode(),
     out=lambda so: so.startswith(b"\x89PNG\r\n\x1a\n"))
case("compute: stdin only once", ["compute", "-", "-q", "-"], stdin=b"{}", code=2,
     err="only one input can be -")
write("seed.json", SEED)
so = case("compute --output - --format npy", ["compute", "seed.json", "--output", "-",
                                              "--format", "npy"],
          out=lambda so: np.allclose(np.load(io.BytesIO(so)), CTX, atol=1e-5) and
          np.load(io.BytesIO(so)).dtype == np.float32)
case("compute --output - defaults to JSON", ["compute", "seed.json", "-o", "-"],
     out=lambda so: np.allclose(json.loads(so), CTX, atol=1e-5))
case("compute --weights - --format npy --dtype f64",
     ["compute", "seed.json", "--weights", "-", "--format", "npy", "--dtype", "f64"],
     out=lambda so: np.load(io.BytesIO(so)).dtype == np.float64 and
     np.allclose(np.load(io.BytesIO(so)), W, atol=1e-6))


@test("compute --weights - and --output FILE")
def _():
    run_case("compute --weights - and --output FILE", ["compute", "seed.json", "--weights", "-",
                                                   "--output", "o.npy"],
         out=lambda so: np.allclose(json.loads(so), W, atol=1e-6))
    check("... the FILE is written too", os.path.exists(path("o.npy")) and
          np.allclose(np.load(path("o.npy")), CTX, atol=1e-5))


@test("compute --format overrides the extension")
def _():
    run_case("compute --format overrides the extension", ["compute", "seed.json", "-o", "o.bin",
                                                      "--format", "npy"])
    check("... o.bin is NPY", os.path.exists(path("o.bin")) and
          np.allclose(np.load(path("o.bin")), CTX, atol=1e-5))


case("compute: two outputs on stdout", ["compute", "seed.json", "-o", "-", "--weights", "-"],
     code=2, err="only one of them can be -")
case("compute bad --format", ["compute", "seed.json", "-o", "-", "--format", "csv"], code=2,
     err="format")
case("info - (NPY)", ["info", "-"], stdin=Q_NPY,
     out=lambda so: b"[2, 3]" in so and b"float32" in so)
case("info - (JSON)", ["info", "-", "--json"], stdin=b"[[1, 2], [3, 4], [5, 6]]",
     out=lambda so: json.loads(so)["shape"] == [3, 2])
case("info - (garbage)", ["info", "-"], stdin=b"\x93NUMPY garbage", code=2, err="stdin")
case("explain -", ["explain", "-"], stdin=json.dumps(SEED).encode(),
     out=lambda so: b"output       [2, 2]" in so)


main()

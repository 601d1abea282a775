#!/usr/bin/env python3
"""CLI tests of `attn diff`: numpy.allclose's rule with B as the reference (on the boundary,
on random pairs), the worst index, float64 kept as float64, NaN and inf, shapes, result
documents against arrays, and its errors.

Run from the repository root: /usr/bin/python3 tests/cli/diff_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import json
import re

import numpy as np

import seed_example
from harness import case, check, main, path, run, run_case, test, write
from seed_example import CTX, W

rng = np.random.default_rng(4)
SEED = dict(seed_example.SEED, scale=1)
write("seed.json", SEED)

# --- diff: numpy.allclose's rule, B is the reference ----------------------------------------


def npy(name, a, dtype=np.float32):
    np.save(path(name), np.asarray(a, dtype=dtype))
    return name


base = rng.standard_normal((3, 4, 5)).astype(np.float32)
npy("a.npy", base)
case("diff identical", ["diff", "a.npy", "a.npy"],
     out=lambda so: b"identical" in so and so.decode().splitlines()[-1].startswith("equal"))
write("a.json", json.dumps(base.tolist()))
case("diff .npy vs .json of the same values", ["diff", "a.npy", "a.json"],
     out=lambda so: b"identical" in so)
case("diff -: A from stdin", ["diff", "-", "a.npy"], stdin=open(path("a.npy"), "rb").read(),
     out=lambda so: b"identical" in so)
case("diff both -", ["diff", "-", "-"], stdin=b"[1]", code=2, err="only one")

# Random pairs near the threshold: the exit code must agree with numpy.allclose on the same
# float32 values, compared in float64.


@test("diff agrees with numpy.allclose on random pairs")
def _():
    agree = True
    detail = ""
    for trial in range(40):
        rtol = [1e-5, 1e-3, 0.0, 1e-7][trial % 4]
        atol = [1e-6, 0.0, 1e-4, 1e-8][(trial // 4) % 4]
        a = rng.standard_normal(50).astype(np.float32)
        b = a.astype(np.float64) * (1 + rng.uniform(-3, 3, 50) * rtol) + \
            rng.uniform(-3, 3, 50) * atol
        b = b.astype(np.float32)
        if trial % 5 == 0:
            a[3] = b[3] = np.nan
        want = bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol,
                                equal_nan=True))
        npy("ra.npy", a)
        npy("rb.npy", b)
        rc, so, se = run(["diff", "ra.npy", "rb.npy", "--rtol", repr(rtol), "--atol", repr(atol)])
        if rc != (0 if want else 1):
            agree = False
            detail = f"trial {trial}: exit {rc}, numpy says {want}; {so.decode()} {se}"
            break
    check("diff agrees with numpy.allclose(equal_nan=True) on 40 random pairs", agree, detail)


# Worst index, error values, tolerance flags.
b2 = base.copy()
b2[1, 2, 3] += 0.5
b2[2, 0, 0] += 1e-3
npy("b2.npy", b2)
case("diff reports the worst index and values", ["diff", "a.npy", "b2.npy"], code=1,
     out=lambda so: b"max abs err 0.5 at [1, 2, 3]" in so and
     b"2 outside tolerance, worst at [1, 2, 3]" in so and
     # float32 values print as float32 (at most 9 digits), not as 17-digit doubles
     re.search(rb"worst at \[1, 2, 3\] \(A [-0-9.e]{1,13}, B [-0-9.e]{1,13}\)", so) and
     so.decode().splitlines()[-1].startswith("different"))
case("diff --atol loosens", ["diff", "a.npy", "b2.npy", "--atol", "0.6"])
case("diff --quiet prints nothing", ["diff", "a.npy", "b2.npy", "--quiet"], code=1,
     out=lambda so: so == b"")
npy("z.npy", [0.0, 1.0])
npy("z2.npy", [1e-7, 1.0])
case("diff default atol 1e-6 accepts 1e-7 near zero", ["diff", "z.npy", "z2.npy"])
case("diff --atol 0 --rtol 0 does not", ["diff", "z.npy", "z2.npy", "--atol", "0", "--rtol",
                                         "0"], code=1)
npy("rel_a.npy", [100.0])
npy("rel_b.npy", [100.0009])
case("diff rtol scales with |B|", ["diff", "rel_a.npy", "rel_b.npy", "--rtol", "1e-5", "--atol",
                                   "0"])
case("diff rtol: just outside", ["diff", "rel_a.npy", "rel_b.npy", "--rtol", "8e-6", "--atol",
                                 "0"], code=1)
# On the boundary |a - b| == atol + rtol·|B| is within (numpy's <=); every value here is
# exact in binary, so the boundary is exact too.
npy("e1.npy", [5.0, 1.0])
npy("e2.npy", [4.0, 1.0])
case("diff boundary: |a-b| == atol + rtol·|B| is within",
     ["diff", "e1.npy", "e2.npy", "--atol", "0.5", "--rtol", "0.125"],
     out=lambda so: b"within tolerance" in so)
case("diff boundary: a hair less atol is not",
     ["diff", "e1.npy", "e2.npy", "--atol", "0.4999999", "--rtol", "0.125"], code=1,
     out=lambda so: b"1 outside tolerance, worst at [0] (A 5, B 4)" in so)
case("diff boundary: atol alone", ["diff", "e1.npy", "e2.npy", "--atol", "1", "--rtol", "0"])
case("diff boundary: rtol alone", ["diff", "e1.npy", "e2.npy", "--atol", "0", "--rtol", "0.25"])
npy("e3.npy", [3.0, 1.0])
case("diff: rtol scales |B|: |3 - 4| <= 0.25·4", ["diff", "e3.npy", "e2.npy", "--atol", "0",
                                                  "--rtol", "0.25"])
case("diff: rtol scales |B|, not |A|: |4 - 3| > 0.25·3",
     ["diff", "e2.npy", "e3.npy", "--atol", "0", "--rtol", "0.25"], code=1)
# The worst index is the one furthest outside its own tolerance, not the largest error.
npy("w1.npy", [1000.5, 0.01], np.float64)
npy("w2.npy", [1000.0, 0.0], np.float64)
case("diff: worst index by error/tolerance, max abs error reported apart",
     ["diff", "w1.npy", "w2.npy"], code=1,
     out=lambda so: b"max abs err 0.5 at [0]" in so and b"max rel err inf at [1]" in so and
     b"2 outside tolerance, worst at [1] (A 0.01, B 0)" in so)
# float64 arrays are compared as float64, never rounded to float32 first.
npy("f1.npy", [1.0, 1e300, 0.1], np.float64)
npy("f2.npy", [1.0 + 1e-9, 2e300, 0.1], np.float64)
case("diff float64: 1e-9 apart is not identical", ["diff", "f1.npy", "f2.npy", "--atol", "0",
                                                    "--rtol", "0"], code=1,
     out=lambda so: b"max abs err 1e+300 at [1]" in so and b"2 outside tolerance" in so)
npy("f3.npy", [1.0 + 1e-9, 1e300, 0.1], np.float64)
case("diff float64: within a tolerance float32 could not resolve",
     ["diff", "f1.npy", "f3.npy", "--atol", "0", "--rtol", "1e-8"],
     out=lambda so: b"max abs err 1e-09 at [0]" in so and b"within tolerance" in so)
case("diff float64: fails just under it", ["diff", "f1.npy", "f3.npy", "--atol", "0", "--rtol",
                                            "9e-10"], code=1)
write("f1.json", "[1.0, 1e300, 0.1]")
case("diff float64 .npy vs the same decimals in JSON", ["diff", "f1.npy", "f1.json", "--atol",
                                                         "0", "--rtol", "0"],
     out=lambda so: b"identical" in so)
for bad_tol in ("nan", "inf", "-0.1", "1e400", "x"):
    case(f"diff --rtol {bad_tol} refused", ["diff", "a.npy", "a.npy", "--rtol", bad_tol], code=2,
         err=r"^attn: error: --rtol: expected a finite number >= 0, got '" + re.escape(bad_tol) +
         r"'.{0,60}$")
case("diff --atol nan refused", ["diff", "a.npy", "a.npy", "--atol", "nan"], code=2,
     err="--atol: expected a finite number")
npy("s.npy", np.zeros((4, 5)))
case("diff shape mismatch", ["diff", "a.npy", "s.npy"], code=1,
     out=lambda so: b"shape mismatch: A [3, 4, 5], B [4, 5]" in so)
npy("n1.npy", [1.0, np.nan, np.inf, -np.inf])
npy("n2.npy", [1.0, np.nan, np.inf, -np.inf])
npy("n3.npy", [np.nan, 2.0, np.inf, -np.inf])
npy("n4.npy", [1.0, np.nan, -np.inf, -np.inf])
case("diff NaN and inf in the same places", ["diff", "n1.npy", "n2.npy"])
case("diff NaN in different places", ["diff", "n1.npy", "n3.npy"], code=1,
     out=lambda so: b"NaN in only one of them at 2 position(s), first at [0]" in so)
case("diff inf of opposite sign", ["diff", "n1.npy", "n4.npy"], code=1,
     out=lambda so: b"1 outside tolerance, worst at [2]" in so)


@test("diff result documents")
def _():
    # Result documents.
    rc, doc_a, _ = run(["compute", "seed.json"])
    write("ra.json", doc_a.decode())
    doc = json.loads(doc_a)
    doc["weights"][1][2] += 0.01
    write("rb.json", json.dumps(doc))
    run_case("diff result documents: output and weights", ["diff", "ra.json", "rb.json"], code=1,
         out=lambda so: so.decode().startswith("output: shape [2, 2], 4 values: identical\n"
                                               "weights: shape [2, 3], 6 values; max abs err 0.01 at "
                                               "[1, 2]"))
    rc, doc_nw, _ = run(["compute", "seed.json", "--no-weights"])
    write("rnw.json", doc_nw.decode())
    run_case("diff documents, weights only in one", ["diff", "ra.json", "rnw.json"],
         out=lambda so: b"weights: only in A (not compared)" in so)
    npy("ctx.npy", CTX)
    run_case("diff array vs document: its output", ["diff", "ctx.npy", "ra.json", "--atol", "1e-5"],
         out=lambda so: so.startswith(b"output: "))
    npy("w.npy", W)
    run_case("diff array vs document: weights when the shape says so", ["diff", "ra.json", "w.npy"],
         out=lambda so: so.startswith(b"weights: "))
    write("wonly.json", {"id": 1, "weights": W.tolist()})
    run_case("diff array vs a document with weights only", ["diff", "w.npy", "wonly.json"],
         out=lambda so: so.startswith(b"weights: shape [2, 3], 6 values"))
    run_case("diff array vs a document with weights only, other shape", ["diff", "ctx.npy", "wonly.json"],
         code=1, out=lambda so: b"weights: shape mismatch: A [2, 2], B [2, 3]" in so)
    doc2 = json.loads(doc_a)
    doc2["output"][0][0] = "nan"
    write("rnan.json", json.dumps(doc2))
    run_case("diff documents: NaN in one output", ["diff", "ra.json", "rnan.json"], code=1,
         out=lambda so: b"output: " in so and b"NaN in only one of them at 1 position(s), first at "
         b"[0, 0]" in so and b"weights: shape [2, 3], 6 values: identical" in so)
    run_case("diff a batch line against compute's document", ["diff", "-", "ra.json"],
         stdin=run(["batch"], json.dumps(SEED).encode())[1],
         out=lambda so: so.decode().splitlines()[-1].startswith("equal"))
    write("err.json", {"id": 1, "error": "boom"})
    run_case("diff an error document", ["diff", "err.json", "ra.json"], code=2, err="boom")
    run_case("diff missing file", ["diff", "nope.npy", "a.npy"], code=2, err="nope.npy")
    write("bad.json", "{")
    run_case("diff invalid JSON", ["diff", "bad.json", "a.npy"], code=2, err="invalid JSON")
    write("obj.json", {"foo": 1})
    run_case("diff object without arrays", ["diff", "obj.json", "a.npy"], code=2, err="output")
    run_case("diff unknown extension", ["diff", "a.txt", "a.npy"], code=2, err="a.txt")
    run_case("diff negative --rtol", ["diff", "a.npy", "a.npy", "--rtol", "-1"], code=2, err="rtol")

case("diff help", ["diff", "--help"], out=lambda so: b"--rtol" in so and b"--atol" in so)


main()

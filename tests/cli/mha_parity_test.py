#!/usr/bin/env python3
"""nn.MultiheadAttention parity: --average-heads / "average_heads": true averages the
weights over heads (average_attn_weights=True); rank-4 inputs keep rank-4 weights
[B, H, Lq, Lk] whatever H is (also averaged: [B, 1, Lq, Lk]). Values are checked against
the per-head weights of the same run; tests/oracle/oracle_test.py checks them against numpy.

/usr/bin/python3 tests/cli/mha_parity_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os

import numpy as np

from harness import TMP, check, expect, main, run, test, write

RNG = np.random.default_rng(31)


def compute(*args):
    rc, out, err = run(["compute", *args])
    check("exit 0: " + " ".join(args), rc == 0, err)
    return json.loads(out) if rc == 0 else None


def shape(doc, key="weights"):
    return np.asarray(doc[key]).shape if doc else None


@test("rank-3 input, 4 heads: --average-heads gives [B, Lq, Lk], the mean of the heads")
def _():
    write("x.npy", RNG.standard_normal((2, 5, 8)).astype(np.float32))
    heads = compute("--input", "x.npy", "--heads", "4")
    avg = compute("--input", "x.npy", "--heads", "4", "--average-heads")
    check("per-head shape", shape(heads) == (2, 4, 5, 5), str(shape(heads)))
    check("averaged shape", shape(avg) == (2, 5, 5), str(shape(avg)))
    if heads and avg:
        mean = np.asarray(heads["weights"], dtype=np.float64).mean(axis=1)
        check("mean of the heads", np.allclose(avg["weights"], mean, rtol=1e-6, atol=1e-7))
        check("output unchanged", avg["output"] == heads["output"])
        check("rows still sum to 1", np.allclose(np.sum(avg["weights"], axis=-1), 1, atol=1e-5))


@test("the field agrees with the flag; rank-2 input gives [Lq, Lk]")
def _():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    write("x2.npy", x)
    flag = compute("--input", "x2.npy", "--heads", "3", "--average-heads")
    write("p.json", {"input": x.tolist(), "num_heads": 3, "average_heads": True})
    field = compute("p.json")
    check("shape [Lq, Lk]", shape(flag) == (4, 4), str(shape(flag)))
    check("field == flag", flag is not None and field is not None and
          np.array_equal(flag["weights"], field["weights"]))
    expect(["compute", "-"], stdin=json.dumps({"input": x.tolist(), "average_heads": 1}).encode(),
           code=2, err=r"average_heads: expected true or false, got 1")


@test("rank-4 inputs keep rank-4 weights, also with one head")
def _():
    for h in (1, 3):
        for name in ("q", "k", "v"):
            write(f"{name}{h}.npy", RNG.standard_normal((2, h, 5, 4)).astype(np.float32))
        args = ("-q", f"q{h}.npy", "-k", f"k{h}.npy", "-v", f"v{h}.npy")
        got = compute(*args)
        check(f"H={h}: weights [B, H, Lq, Lk]", shape(got) == (2, h, 5, 5), str(shape(got)))
        check(f"H={h}: output [B, H, Lq, Dv]", shape(got, "output") == (2, h, 5, 4),
              str(shape(got, "output")))
        avg = compute(*args, "--average-heads")
        check(f"H={h}: averaged [B, 1, Lq, Lk]", shape(avg) == (2, 1, 5, 5), str(shape(avg)))
        if got and avg:
            mean = np.asarray(got["weights"], dtype=np.float64).mean(axis=1, keepdims=True)
            check(f"H={h}: mean of the heads",
                  np.allclose(avg["weights"], mean, rtol=1e-6, atol=1e-7))
    rc, _, err = run(["compute", "-q", "q1.npy", "-k", "k1.npy", "-v", "v1.npy", "--weights",
                      "w.npy", "--output", "o.npy"])
    check("--weights file rank 4 too",
          rc == 0 and np.load(os.path.join(TMP, "w.npy")).shape == (2, 1, 5, 5), err)


@test("--average-heads in --help")
def _():
    expect(["compute", "--help"], out=lambda so: b"--average-heads" in so)


main()

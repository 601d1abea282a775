#!/usr/bin/env python3
"""Oracle of the score features: window, softcap, ALiBi, sinks and the "return" diagnostics of
`attn compute`, checked against a NumPy float64 reference written from the definitions
(README "Attention features"). Runs both kernels (weights, --no-weights) and both
diagonal alignments. Usage: features_test.py PATH/TO/attn  (from the repo root).
Does not cover: safetensors, mask_convention (features_io_test.py)."""
import json
import os
import subprocess
import sys

import numpy as np

from reference import attention, default_slopes, num, Tally

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from leak_rule import leak_env  # noqa: E402  (which runs check for leaks)

ATTN = sys.argv[1]
tally = Tally()
check = tally.check


def reference(q, k, v, f):
    """q [H, Lq, D], k, v [H, Lk, .]; f: the problem's feature fields. The oracle is
    reference.attention on a batch of one."""
    out, w, lse, ent, arg = attention(q[None], k[None], v[None], f)
    return out[0], w[0], lse[0], ent[0], arg[0]


def close(a, b, tol=2e-4):
    a = np.asarray(num(a), float)
    b = np.asarray(b, float)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


def run(name, h, lq, lk, f, seed):
    rng = np.random.default_rng(seed)
    d = 8
    q = rng.standard_normal((h, lq, d))
    k = rng.standard_normal((h, lk, d))
    v = rng.standard_normal((h, lk, 5))
    want = reference(q, k, v, f)
    doc = dict(f)
    doc.update(query=q[None].tolist(), key=k[None].tolist(), value=v[None].tolist())
    doc["return"] = ["lse", "entropy", "argmax", "top_k"]
    doc["top_k"] = 3
    for flags in ([], ["--no-weights"]):
        tag = f"{name} {' '.join(flags)}"
        p = subprocess.run([ATTN, "compute", "-", *flags], input=json.dumps(doc),
                           capture_output=True, text=True,
                           env=leak_env(["compute", "-", *flags], None, True))
        if p.returncode != 0:
            check(tag, False, p.stderr)
            continue
        r = json.loads(p.stdout)
        out, w, lse, ent, arg = want
        check(tag + " output", close(r["output"], out[None]), "output")
        if not flags:
            # Rank-4 inputs keep rank-4 weights [1, H, Lq, Lk] whatever H is.
            check(tag + " weights", close(r["weights"], w[None]), "weights")
        # Per-row diagnostics follow the weights' rule: rank-4 inputs keep [1, H, Lq].
        check(tag + " lse", close(r["lse"], lse[None]), f'{r["lse"]} vs {lse}')
        check(tag + " entropy", close(r["entropy"], ent[None]), "entropy")
        check(tag + " argmax", close(r["argmax"], arg[None]), f'{r["argmax"]} vs {arg}')
        ti = np.asarray(num(r["top_k"]["indices"]), float).reshape(-1, 3)
        tw = np.asarray(num(r["top_k"]["weights"]), float).reshape(-1, 3)
        wf = w.reshape(-1, lk)
        ok = True
        for row in range(wf.shape[0]):
            order = sorted([jj for jj in range(lk) if wf[row, jj] > 0], key=lambda jj: -wf[row, jj])[:3]
            got = [int(x) for x in ti[row] if x >= 0]
            if not np.allclose(sorted(wf[row, order]), sorted(tw[row][: len(got)]), atol=2e-4) or len(got) != len(order):
                ok = False
        check(tag + " top_k", ok, "top_k")


cases = []
for align in ("top-left", "bottom-right"):
    for (lq, lk) in ((7, 7), (5, 9), (70, 150)):
        for win in ([2, 0], [1, 3], [-1, 2], [4, -1]):
            cases.append((f"window {win} {align} {lq}x{lk}", 2, lq, lk, {"window": win, "window_align": align}))
        cases.append((f"causal {align} window {lq}x{lk}", 1, lq, lk,
                      {"window": [3, 0], "causal": "bottom-right" if align == "bottom-right" else True}))
        cases.append((f"alibi default {align} {lq}x{lk}", 3, lq, lk, {"alibi": True, "window_align": align}))
for (lq, lk) in ((6, 6), (70, 150)):
    cases.append((f"softcap {lq}x{lk}", 2, lq, lk, {"softcap": 0.5}))
    cases.append((f"alibi given {lq}x{lk}", 2, lq, lk, {"alibi": [0.5, 0.125], "causal": True}))
    cases.append((f"sinks {lq}x{lk}", 2, lq, lk, {"sinks": [0.3, 2.5]}))
    cases.append((f"sinks window 0 {lq}x{lk}", 2, lq, lk,
                  {"sinks": [1.0, -1.0], "window": [0, 0], "window_align": "bottom-right"}))
    cases.append((f"all {lq}x{lk}", 4, lq, lk,
                  {"softcap": 2.0, "alibi": True, "sinks": [0.1, 0.2, 3.0, -2.0], "window": [5, 1],
                   "causal": "bottom-right"}))

cases.append(("sinks fully masked rows", 2, 9, 4, {"sinks": [1.0, -1.0], "causal": "bottom-right"}))
cases.append(("window fully masked rows", 2, 9, 4, {"window": [1, 0], "window_align": "bottom-right"}))

for n, c in enumerate(cases):
    run(*c, seed=n)

# default slopes of 8 heads: 2^-1 .. 2^-8 (ALiBi paper); 6 heads: ggml's interleave
check("alibi slopes 8", np.allclose(default_slopes(8), [2.0 ** -(i + 1) for i in range(8)]))
sys.exit(tally.done())

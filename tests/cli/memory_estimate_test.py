#!/usr/bin/env python3
"""The memory estimate (`attn explain`'s memory rows, the figure --max-memory checks)
against the peak RSS a run measures (wait4's ru_maxrss of the child), within 25% once the
bare process's own peak (a tiny problem's) is taken off: no weights, and weights written to
a --weights .npy file as the kernel makes them (#39: those cost each thread's block of
rows, not Lq x Lk). And the limit follows it: a long causal problem whose
weights go to a file is neither refused nor said to need gigabytes.

Run: /usr/bin/python3 tests/cli/memory_estimate_test.py PATH/TO/attn [--case NAME]
"""
import re

import numpy as np

import harness
from harness import TMP, check, expect, main, path, test

UNITS = {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40}


def peak(args):
    """attn's peak resident bytes for args (run in TMP)."""
    code, rss, err = harness.peak_rss(args)
    check(f"{args}: exit 0", code == 0, err[:300])
    return rss


def estimates(args):
    """explain's figures: {"weights": kept, "none": --no-weights, "file": --weights FILE}."""
    text = expect(["explain"] + args, name=f"explain {args}").decode()
    size = r"~([\d.]+) (B|KiB|MiB|GiB|TiB)"
    out = {}
    for key, pattern in (("weights", size + " with weights"), ("none", size + " with --no-weights"),
                         ("file", size + " with --weights FILE\\.npy")):
        m = re.search(pattern, text)
        if check(f"explain {args}: {key} figure", m is not None, text[-600:]):
            out[key] = float(m.group(1)) * UNITS[m.group(2)]
    return out


def inputs(b, h, lq, lk, d=64):
    rng = np.random.default_rng(lq * lk)
    for name, length in (("q", lq), ("k", lk), ("v", lk)):
        np.save(path(f"{name}.npy"), rng.standard_normal((b, h, length, d)).astype(np.float32))
    return ["-q", "q.npy", "-k", "k.npy", "-v", "v.npy"]


def bare():
    np.save(path("t.npy"), np.zeros((1, 1, 4, 8), np.float32))
    return peak(["compute", "-q", "t.npy", "-k", "t.npy", "-v", "t.npy", "-o", "t.json"])


def close(name, est, measured):
    print(f"{name}: estimate {est / 2**20:.1f} MiB, measured {measured / 2**20:.1f} MiB")
    check(f"{name}: estimate {est / 2**20:.1f} MiB within 25% of {measured / 2**20:.1f} MiB",
          abs(measured - est) <= 0.25 * est, "")


# (shape [B, H, Lq, Lk], how the weights leave, the run's output flags)
SHAPES = [((1, 1, 64, 65536), "file", ["--weights", "w.npy", "-o", "o.npy"]),
          ((1, 4, 128, 16384), "file", ["--weights", "w.npy", "-o", "o.npy"]),
          ((1, 1, 64, 65536), "none", ["--no-weights", "-o", "o.npy"])]
# Not pinned yet: weights kept for the result document on stdout peak at about twice the
# 16 bytes a weight the estimate counts (the JSON text is built, then copied into the
# document): [1, 1, 1024, 2048] estimates 34.8 MiB and peaks at 67.3 MiB.

for shape, how, flags in SHAPES:
    @test(f"estimate vs peak RSS: {list(shape)}, weights {how}")
    def _(shape=shape, how=how, flags=flags):
        args = inputs(*shape)
        est = estimates(args).get(how)
        base = bare()
        measured = peak(["compute"] + args + flags + ["--threads", "1"]) - base
        if est is not None:
            close(f"{list(shape)} {how}", est, measured)


@test("[1, 1, 8192, 8192] causal with --weights FILE.npy: not 1 GiB, not refused")
def _():
    args = inputs(1, 1, 8192, 8192) + ["--causal"]
    est = estimates(args)
    check("streamed weights cost MiB, not 1 GiB", est.get("file", 2**30) < 64 * 2**20, est)
    check("kept weights still counted", est.get("weights", 0) >= 2**30, est)
    expect(["compute"] + args + ["--weights", "w.npy", "-o", "o.npy", "--max-memory", "256M",
                                 "--threads", "1"], name="fits 256M")


@test("[1, 1, 32768, 32768] causal with --weights FILE.npy: the limit is not what refuses")
def _():
    args = inputs(1, 1, 32768, 32768) + ["--causal"]
    est = estimates(args)
    check("streamed: under 256 MiB", est.get("file", 2**40) < 256 * 2**20, est)
    # Refused by a limit under it (but over each input's size), the figure it names is the
    # streamed one, not 16 GiB.
    expect(["compute"] + args + ["--weights", "w.npy", "-o", "o.npy", "--max-memory", "16M"],
           code=2, err=r"needs about [\d.]+ MiB \(")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Masks and biases broadcast as F.scaled_dot_product_attention broadcasts them against
[B, H, Lq, Lk] (numpy's right-aligned rule), rank 3 keeping its meaning [B, Lq, Lk]. Each
broadcast shape must give exactly the result of the same mask written out in full
(np.broadcast_to), on the weights path, the streaming path and in float64. The numpy
float64 oracle (tests/oracle/oracle_test.py, "broadcast" cases) checks the values.

/usr/bin/python3 tests/cli/broadcast_masks_test.py PATH/TO/attn [--case NAME] | --list
"""
import json

import numpy as np

from harness import check, expect, main, run, test, write

B, H, L, D = 2, 4, 5, 8
RNG = np.random.default_rng(13)
Q, K, V = (RNG.standard_normal((B, H, L, D)).astype(np.float32) for _ in range(3))
for name, a in (("q.npy", Q), ("k.npy", K), ("v.npy", V)):
    write(name, a)


def compute(*flags):
    rc, out, err = run(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy", *flags])
    check("exit 0: " + " ".join(flags), rc == 0, err)
    return json.loads(out) if rc == 0 else None


def full(a, rank3=False):
    """The broadcast array written out as [B, H, Lq, Lk] (rank 3 is [B, Lq, Lk])."""
    return np.broadcast_to(a[:, None] if rank3 else a, (B, H, L, L)).copy()


def same_as_full(label, a, field="--mask", rank3=False, extra=()):
    write("m.npy", a)
    write("full.npy", full(a, rank3))
    for flags in ((), ("--no-weights",), ("--precision", "f64")):
        got = compute(field, "m.npy", *extra, *flags)
        want = compute(field, "full.npy", *extra, *flags)
        check(f"{label} {' '.join(flags)}: same result as the full mask",
              got is not None and got == want,
              str(got)[:200] + " vs " + str(want)[:200])
        if got is not None and "weights" in got:
            check(f"{label}: weights [B, H, Lq, Lk]",
                  np.asarray(got["weights"]).shape == (B, H, L, L),
                  str(np.asarray(got["weights"]).shape))


KEEP = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=bool)  # [B, Lk]: padding


@test("HF extended mask [B, 1, 1, Lk]")
def _():
    same_as_full("[2,1,1,5]", KEEP[:, None, None, :])


@test("[1, Lk] mask broadcasts over batch, heads and queries")
def _():
    same_as_full("[1,5]", KEEP[:1])


@test("[Lk] mask")
def _():
    same_as_full("[5]", KEEP[0])


@test("[B, H, Lq, 1] mask broadcasts over keys")
def _():
    m = RNG.random((B, H, L, 1)) < 0.7
    m[0, 0, 0, 0] = True
    same_as_full("[2,4,5,1]", m)


@test("[1, H, 1, Lk] and [B, 1, Lq, 1] masks")
def _():
    same_as_full("[1,4,1,5]", RNG.random((1, H, 1, L)) < 0.7)
    same_as_full("[2,1,5,1]", RNG.random((B, 1, L, 1)) < 0.7)


@test("rank 3 keeps [B, Lq, Lk], broadcast inside it: [B, 1, Lk]")
def _():
    same_as_full("[2,1,5]", KEEP[:, None, :], rank3=True)


@test("bias [B, 1, 1, Lk] of 0 / -large (HF's additive mask)")
def _():
    bias = np.where(KEEP, 0.0, np.finfo(np.float32).min).astype(np.float32)[:, None, None, :]
    same_as_full("bias [2,1,1,5]", bias, field="--bias")


@test("additive mask [B, 1, 1, Lk] with a bias [1, Lq]")
def _():
    add = np.where(KEEP, 0.0, -np.inf).astype(np.float32)
    add[0, 0] = -2.5  # not only 0/-inf: an additive mask that stays a bias
    write("b.npy", RNG.standard_normal((1, L)).astype(np.float32))
    same_as_full("additive [2,1,1,5] + bias", add[:, None, None, :],
                 extra=("--mask-convention", "additive", "--bias", "b.npy"))


@test("[B, Lk] as --mask: a hint to --key-padding")
def _():
    write("pad.npy", np.ones((B, 7), dtype=bool))
    write("q7.npy", RNG.standard_normal((B, 3, 7, D)).astype(np.float32))
    write("k7.npy", RNG.standard_normal((B, 3, 7, D)).astype(np.float32))
    # B = 2 queries are not 7: [B, Lk] fits no broadcast of [Lq, Lk].
    expect(["compute", "-q", "q7.npy", "-k", "k7.npy", "-v", "k7.npy", "--mask", "pad.npy"],
           code=2,
           err=r"mask: expected shape \[Lq, Lk\] = \[7, 7\], got \[2, 7\] \(any dim may be "
               r"1: it broadcasts\); a \[B, Lk\] padding mask .* key_padding_mask "
               r"\(--key-padding\)")
    expect(["compute", "-q", "q7.npy", "-k", "k7.npy", "-v", "k7.npy", "--key-padding",
            "pad.npy", "--no-weights"])


@test("shapes numpy would not broadcast are refused")
def _():
    write("bad4.npy", np.ones((3, 1, 1, L), dtype=bool))
    expect(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy", "--mask", "bad4.npy"],
           code=2,
           err=r"mask: expected shape \[B, H, Lq, Lk\] = \[2, 4, 5, 5\] \(B and H may be 1\), "
               r"got \[3, 1, 1, 5\] \(any dim may be 1")
    write("bad1.npy", np.ones((4,), dtype=np.float32))
    expect(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy", "--bias", "bad1.npy"],
           code=2, err=r"bias: expected shape \[Lk\] = \[5\], got \[4\]")
    write("bad5.npy", np.ones((1, 2, 4, 5, 5), dtype=bool))
    expect(["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy", "--mask", "bad5.npy"],
           code=2, err=r"mask: expected shape .*got \[1, 2, 4, 5, 5\]")


@test("explain shows the broadcast shape")
def _():
    write("m.npy", KEEP[:, None, None, :])
    expect(["explain", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy", "--mask", "m.npy"],
           out=lambda so: b"mask [2, 1, 1, 5]" in so or so.decode()[:400])


main()

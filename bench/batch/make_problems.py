#!/usr/bin/env python3
"""Writes N small attention problems as JSON Lines, reproducibly (numpy seed).

Usage: /usr/bin/python3 bench/batch/make_problems.py N OUT.jsonl [--seed S]

Each line is one problem of the contract: sequence lengths L (Lq, and Lk where keys are
separate) uniform in 8..64, feature size E uniform in 16..128 (a multiple of 8 so that 2,
4 or 8 heads divide it), values uniform in [-1, 1) rounded to 4 decimals. Variants are
mixed in equal parts:
  dot, scaled        direct query [Lq, E], key [Lk, E], value [Lk, Ev]
  self, masked-self  input [L, E] and init (random nn.Linear projections from a seed)
  cross              input [Lq, E], context [Lk, Ec], init
  multihead          input [L, E], init, 2/4/8 heads, half of them grouped-query
                     (num_kv_heads = heads / 2), output projection
A quarter of the dot/scaled/cross problems carry a key_padding_mask with the last keys
padded; ids are the line numbers.
"""
import argparse
import json

import numpy as np

VARIANTS = ["dot", "scaled", "self", "masked-self", "cross", "multihead"]


def arr(rng, *shape):
    return np.round(rng.uniform(-1.0, 1.0, size=shape), 4).tolist()


def problem(rng, i):
    variant = VARIANTS[i % len(VARIANTS)]
    lq = int(rng.integers(8, 65))
    lk = int(rng.integers(8, 65))
    e = 8 * int(rng.integers(2, 17))
    p = {"id": i, "variant": variant}
    if variant in ("dot", "scaled"):
        ev = 8 * int(rng.integers(2, 17))
        p.update(query=arr(rng, lq, e), key=arr(rng, lk, e), value=arr(rng, lk, ev))
    elif variant == "cross":
        ec = 8 * int(rng.integers(2, 17))
        p.update(input=arr(rng, lq, e), context=arr(rng, lk, ec), init={"seed": i})
    else:
        p.update(input=arr(rng, lq, e), init={"seed": i})
        lk = lq
        if variant == "multihead":
            heads = int(rng.choice([2, 4, 8]))
            p["num_heads"] = heads
            if rng.random() < 0.5:
                p["num_kv_heads"] = heads // 2
    if variant in ("dot", "scaled", "cross") and rng.random() < 0.25:
        pad = int(rng.integers(1, lk))
        p["key_padding_mask"] = [1] * (lk - pad) + [0] * pad
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    with open(args.out, "w") as f:
        for i in range(args.n):
            f.write(json.dumps(problem(rng, i), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()

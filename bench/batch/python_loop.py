#!/usr/bin/env python3
"""The baseline: a plain Python loop (json + numpy, float32) doing what `attn batch` does
for the problems make_problems.py writes, one line at a time, results on stdout.

Usage: /usr/bin/python3 bench/batch/python_loop.py PROBLEMS.jsonl [--no-weights]

It covers the fields those problems use (query/key/value, input, context, init, variant,
num_heads, num_kv_heads, key_padding_mask) and nothing else: it is the script a user would
write, not a second implementation of the contract. The init weights are the contract's
splitmix64 draws, vectorised.
"""
import json
import sys

import numpy as np

GAMMA = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)


def splitmix64(seed, start, n):
    """Draws start .. start+n-1 of splitmix64 seeded with `seed`."""
    i = np.arange(start + 1, start + n + 1, dtype=np.uint64)
    z = np.uint64(seed) + i * GAMMA
    z = (z ^ (z >> np.uint64(30))) * M1
    z = (z ^ (z >> np.uint64(27))) * M2
    return z ^ (z >> np.uint64(31))


def random_projections(seed, e_q, e_k, e_v, dim, heads, kv_heads, output_projection):
    kv_dim = dim // heads * kv_heads
    shapes = [(dim, e_q), (kv_dim, e_k), (kv_dim, e_v)]
    if output_projection:
        shapes.append((e_q, dim))
    out, at = [], 0
    for rows, cols in shapes:
        n = rows * cols
        u = (splitmix64(seed, at, n) >> np.uint64(40)).astype(np.float64) / 16777216.0
        out.append(((2.0 * u - 1.0) / np.sqrt(cols)).astype(np.float32).reshape(rows, cols))
        at += n
    return out + [None] * (4 - len(out))


def f32(x):
    return np.asarray(x, dtype=np.float32)


def solve(p, want_weights):
    variant = p.get("variant")
    heads = p.get("num_heads", 1)
    kv_heads = p.get("num_kv_heads", heads)
    if "query" in p:
        q, k, v = f32(p["query"]), f32(p["key"]), f32(p["value"])
        w_o = None
    else:
        x = f32(p["input"])
        ctx = f32(p["context"]) if "context" in p else x
        w_q, w_k, w_v, w_o = random_projections(
            p["init"]["seed"], x.shape[1], ctx.shape[1], ctx.shape[1], x.shape[1], heads,
            kv_heads, variant == "multihead")
        q, k, v = x @ w_q.T, ctx @ w_k.T, ctx @ w_v.T
    lq, lk = q.shape[0], k.shape[0]
    d = q.shape[1] // heads
    qh = q.reshape(lq, heads, d).transpose(1, 0, 2)
    kh = k.reshape(lk, kv_heads, d).transpose(1, 0, 2)
    vh = v.reshape(lk, kv_heads, -1).transpose(1, 0, 2)
    if kv_heads != heads:
        kh = np.repeat(kh, heads // kv_heads, axis=0)
        vh = np.repeat(vh, heads // kv_heads, axis=0)
    scale = np.float32(1.0 if variant == "dot" else 1.0 / np.sqrt(d))
    s = (qh @ kh.transpose(0, 2, 1)) * scale
    blocked = np.zeros((lq, lk), dtype=bool)
    if variant == "masked-self":
        blocked |= np.triu(np.ones((lq, lk), dtype=bool), 1)
    if "key_padding_mask" in p:
        blocked |= ~np.asarray(p["key_padding_mask"], dtype=bool)[None, :]
    s[:, blocked] = -np.inf
    s -= s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w /= w.sum(axis=-1, keepdims=True)
    out = (w @ vh).transpose(1, 0, 2).reshape(lq, -1)
    if w_o is not None:
        out = out @ w_o.T
    result = {"id": p.get("id"), "output": out.tolist()}
    if want_weights:
        result["weights"] = (w[0] if heads == 1 else w).tolist()
    return result


def main():
    want_weights = "--no-weights" not in sys.argv[2:]
    write = sys.stdout.write
    with open(sys.argv[1]) as f:
        for line in f:
            if line.strip():
                write(json.dumps(solve(json.loads(line), want_weights)) + "\n")


if __name__ == "__main__":
    main()

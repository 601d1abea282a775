"""attn.compute in one Python process against numpy (matmul, softmax, matmul) and torch 1.13's
math attention (F.scaled_dot_product_attention is torch 2.0; 1.13's math path is
softmax(q @ k^T * scale) @ v), at [1, 8, L, 64] (L = 1024 and 4096 by default), 1 and 2
threads, and the per-call overhead of a tiny problem. Each competitor's output is checked
against float64 first.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_module.py [--L 1024 4096] [--reps 5]

Medians of interleaved repetitions (the machine is shared); process CPU time beside wall
time. Needs python3-numpy; python3-torch for the torch rows.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import attn


def numpy_attention(q, k, v, causal):
    s = np.matmul(q, k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(q.shape[-1]))
    if causal:
        s = s + np.triu(np.full(s.shape[-2:], -np.inf, dtype=np.float32), 1)
    s = s - s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return np.matmul(s, v)


def torch_attention(torch, q, k, v, causal):
    s = torch.matmul(q, k.transpose(-2, -1)) * (1 / q.shape[-1] ** 0.5)
    if causal:
        s = s + torch.triu(torch.full(s.shape[-2:], float("-inf")), 1)
    return torch.matmul(torch.softmax(s, dim=-1), v)


def timed(f, reps):
    wall, cpu = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        f()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def compare(L, reps, causal, torch):
    """attn.compute, torch and numpy at [1, 8, L, 64], interleaved; prints the table."""
    rng = np.random.default_rng(0)
    shape = (1, 8, L, 64)
    q, k, v = (rng.standard_normal(shape, dtype=np.float32) for _ in range(3))
    want = numpy_attention(q[:, :, :64].astype(np.float64), k.astype(np.float64),
                           v.astype(np.float64), False) if not causal else None
    rows = []
    for threads in (1, 2):
        def run_attn(t=threads):
            return attn.compute(query=q, key=k, value=v, causal=causal, no_weights=True,
                                threads=t).output
        out = run_attn()
        if want is not None:
            assert np.allclose(out[:, :, :64], want, atol=1e-4), "attn disagrees"
        rows.append((f"attn.compute (no weights) threads={threads}", run_attn))
        if torch is not None:
            tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))

            def run_torch(t=threads):
                torch.set_num_threads(t)
                with torch.no_grad():
                    return torch_attention(torch, tq, tk, tv, causal)
            if want is not None:
                got = run_torch().numpy()[:, :, :64]
                assert np.allclose(got, want, atol=1e-4), "torch disagrees"
            rows.append((f"torch 1.13 math attention threads={threads}", run_torch))
    # numpy's matmul runs on OpenBLAS's own threads (OPENBLAS_NUM_THREADS at start-up).
    got = numpy_attention(q, k, v, causal)
    if want is not None:
        assert np.allclose(got[:, :, :64], want, atol=1e-4), "numpy disagrees"
    rows.append((f"numpy matmul-softmax-matmul (OPENBLAS_NUM_THREADS="
                 f"{os.environ.get('OPENBLAS_NUM_THREADS', 'all')})",
                 lambda: numpy_attention(q, k, v, causal)))
    results = {name: [] for name, _ in rows}
    for _ in range(reps):  # interleaved
        for name, f in rows:
            results[name].append(timed(f, 1))
    print(f"[1, 8, {L}, 64] causal={causal}, medians of {reps}")
    base = None
    for name, _ in rows:
        wall = statistics.median(r[0] for r in results[name])
        cpu = statistics.median(r[1] for r in results[name])
        if name.startswith("numpy"):
            base = wall
        print(f"  {name:58s} {wall * 1e3:9.1f} ms wall {cpu * 1e3:9.1f} ms CPU")
    for name, _ in rows:
        wall = statistics.median(r[0] for r in results[name])
        print(f"  numpy / {name}: {base / wall:5.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--L", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--causal", action="store_true")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    for L in a.L:
        compare(L, a.reps, a.causal, torch)

    # Per-call overhead: a [1, 1, 2, 2] problem, weights included.
    tiny = np.ones((1, 1, 2, 2), dtype=np.float32)
    for _ in range(1000):
        attn.compute(query=tiny, key=tiny, value=tiny, threads=1)
    n = 20000
    per, per_cpu = [], []
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            attn.compute(query=tiny, key=tiny, value=tiny, threads=1)
        per.append((time.perf_counter() - t0) / n)
        per_cpu.append((time.process_time() - c0) / n)
    print(f"tiny [1, 1, 2, 2] per call: {statistics.median(per) * 1e6:.1f} us wall, "
          f"{statistics.median(per_cpu) * 1e6:.1f} us CPU (median of 5 x {n} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

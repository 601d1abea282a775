#!/usr/bin/python3
"""attn's whole process against ggml's flash attention and against attn's own kernel, on a
shared machine: alternated repetitions, medians, ratios from one run.

Per thread count it runs, in turn and ROUNDS times:
  attn compute -q q.npy -k k.npy -v v.npy --no-weights --output o.npy --threads N
  ggml_flash_attn q.npy k.npy v.npy og.npy N      (bench/ggml_flash/ggml_flash_attn.cpp)
and, with --bench-kernels, bench_kernels' bm_target/<TARGET>/L/D/H/causal:0/threads:N (the
kernel alone, inputs already in memory; one repetition per round). For each it prints the
median wall time and the median CPU time (the process's task-clock from `perf stat`, all
threads; user + system without perf): on a
loaded machine the CPU time is the steadier figure, the wall time includes the wait for a
core. It checks once that both outputs agree (max abs difference).

Usage: bench/compare_ggml.py --attn build/bench/app/attn --ggml /path/ggml_flash_attn \
         [--bench-kernels build/bench/bench/bench_kernels] [-L 4096 -H 8 -D 64] [--rounds 7]
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time

import numpy as np


def timed(cmd):
    """(wall seconds, CPU seconds) of one child process. The CPU time is perf's task-clock
    (the scheduler's exact run time, as bench_kernels' process CPU clock) when `perf` runs,
    else user + system from getrusage (tick-sampled: coarser under load)."""
    with tempfile.NamedTemporaryFile(mode="r", suffix=".perf") as stat:
        perf = ["perf", "stat", "-x,", "-e", "task-clock", "-o", stat.name] if HAVE_PERF else []
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(perf + cmd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if HAVE_PERF:
            for line in stat.read().splitlines():
                if line.endswith("task-clock") or ",task-clock," in line:
                    return wall, float(line.split(",")[0]) / 1e3
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


HAVE_PERF = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "true"],
                           capture_output=True).returncode == 0 if shutil.which("perf") else False


def kernel_time(bench, target, L, D, H, threads):
    """(wall, CPU) seconds per call of bench_kernels' streaming kernel, one repetition."""
    filt = f"^bm_target/{target}/L:{L}/D:{D}/H:{H}/causal:0/threads:{threads}/"
    out = subprocess.run([bench, f"--benchmark_filter={filt}", "--benchmark_min_time=0.2",
                          "--benchmark_format=json"],
                         capture_output=True, text=True, check=True).stdout
    if not out.strip():
        raise SystemExit(f"bench_kernels has no {filt} (bm_target runs L = 4096, D = 64, H = 8)")
    bm = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") == "iteration"][0]
    return bm["real_time"] / 1e3, bm["cpu_time"] / 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn", required=True)
    ap.add_argument("--ggml", required=True)
    ap.add_argument("--bench-kernels")
    ap.add_argument("--target", default="AVX3_DL", help="bm_target/<TARGET> of bench_kernels")
    ap.add_argument("-L", type=int, default=4096)
    ap.add_argument("-H", type=int, default=8)
    ap.add_argument("-D", type=int, default=64)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--kv-f16", action="store_true", help="ggml's K and V in float16")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        rng = np.random.default_rng(0)
        shape = (1, args.H, args.L, args.D)
        paths = {n: os.path.join(tmp, n + ".npy") for n in ("q", "k", "v", "o", "og")}
        for n in "qkv":
            np.save(paths[n], rng.uniform(-1, 1, size=shape).astype(np.float32))
        for threads in [int(t) for t in args.threads.split(",")]:
            runs = {
                "attn": [args.attn, "compute", "-q", paths["q"], "-k", paths["k"], "-v",
                         paths["v"], "--no-weights", "--output", paths["o"],
                         "--threads", str(threads)],
                "ggml": [args.ggml, paths["q"], paths["k"], paths["v"], paths["og"],
                         str(threads)] + (["--kv-f16"] if args.kv_f16 else []),
            }
            times = {name: [] for name in runs}
            if args.bench_kernels:
                times["kernel"] = []
            for _ in range(args.rounds):
                for name, cmd in runs.items():
                    times[name].append(timed(cmd))
                if args.bench_kernels:
                    times["kernel"].append(kernel_time(args.bench_kernels, args.target, args.L,
                                                       args.D, args.H, threads))
            diff = float(np.abs(np.load(paths["o"]) - np.load(paths["og"])).max())
            med = {n: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
                   for n, t in times.items()}
            print(f"L={args.L} H={args.H} D={args.D} threads={threads} rounds={args.rounds} "
                  f"max|attn-ggml|={diff:.2e} load={os.getloadavg()[0]:.1f}")
            for n, (w, c) in med.items():
                print(f"  {n:6s} wall {w:.3f} s  CPU {c:.3f} s")
            a, g = med["attn"], med["ggml"]
            print(f"  ggml / attn: wall {g[0] / a[0]:.2f}x  CPU {g[1] / a[1]:.2f}x")
            if "kernel" in med:
                k = med["kernel"]
                print(f"  attn process / kernel: wall {a[0] / k[0]:.2f}x  CPU {a[1] / k[1]:.2f}x")


if __name__ == "__main__":
    main()

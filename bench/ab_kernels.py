#!/usr/bin/python3
"""A/B of bench_kernels binaries on a shared, noisy machine: runs each binary in turn,
ROUNDS times, 5 repetitions each (--benchmark_min_time=0.05), and prints per binary the
median and the best GFLOP/s over all repetitions, and the least CPU time (the least
disturbed run). Alternating the binaries exposes them to the same load.

Usage: bench/ab_kernels.py FILTER ROUNDS BINARY...
Example (a kernel before and after a change, 2 threads):
  bench/ab_kernels.py '^bm_streaming/L:4096/D:64/H:8/causal:0/threads:2/' 4 old/bench_kernels new/bench_kernels
It times nothing itself and asserts nothing about speed.
"""
import json
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    filt, rounds, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    gflops = {b: [] for b in bins}
    cpu_ms = {b: [] for b in bins}
    for _ in range(rounds):
        for b in bins:
            out = subprocess.run(
                [b, f"--benchmark_filter={filt}", "--benchmark_repetitions=5",
                 "--benchmark_min_time=0.05", "--benchmark_format=json"],
                capture_output=True, text=True, check=True).stdout
            for bm in json.loads(out)["benchmarks"]:
                if bm.get("run_type") == "iteration":
                    gflops[b].append(bm["flop"] / 1e9)
                    cpu_ms[b].append(bm["cpu_time"])
    for b in bins:
        g = gflops[b]
        print(f"{b}: median {statistics.median(g):.1f} GFLOP/s, best {max(g):.1f}, "
              f"least CPU time {min(cpu_ms[b]):.1f} ms, n = {len(g)}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""A/B of bench_kernels binaries on a shared, noisy machine: runs each binary in turn,
ROUNDS times, 5 repetitions each (--benchmark_min_time=0.05), and prints per binary the
median and best GFLOP per CPU-second (process CPU time, all threads) over all
repetitions, and the median and least CPU time. On a loaded machine CPU time is the
steadier figure: it leaves out the time the process waited for a core. On N threads,
GFLOP per CPU-second is the throughput per busy core
(N times it is the ideal rate). Alternating the binaries exposes them to the same load.

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
    gflops = {}  # (benchmark, binary) -> GFLOP/s per repetition
    cpu_ms = {}
    for _ in range(rounds):
        for b in bins:
            out = subprocess.run(
                [b, f"--benchmark_filter={filt}", "--benchmark_repetitions=5",
                 "--benchmark_min_time=0.05", "--benchmark_format=json"],
                capture_output=True, text=True, check=True).stdout
            for bm in json.loads(out)["benchmarks"]:
                if bm.get("run_type") == "iteration":
                    key = (bm["run_name"].replace("/process_time", ""), b)
                    # GFLOP per CPU-second of the whole process (all threads): on a loaded
                    # machine the wall-time rate mostly measures the wait for a core.
                    # bench_kernels names its rate counter "flop", bench_matmul "GFLOPS".
                    rate = bm["flop"] if "flop" in bm else bm["GFLOPS"]
                    gflops.setdefault(key, []).append(
                        rate / 1e9 * bm["real_time"] / bm["cpu_time"])
                    cpu_ms.setdefault(key, []).append(bm["cpu_time"])
    for key in sorted(gflops, key=lambda k: (k[0], bins.index(k[1]))):
        g = gflops[key]
        print(f"{key[0]} {key[1]}: median {statistics.median(g):.1f} GFLOP/s, best {max(g):.1f}, "
              f"CPU time median {statistics.median(cpu_ms[key]):.1f} ms, least {min(cpu_ms[key]):.1f} ms, "
              f"n = {len(g)}")


if __name__ == "__main__":
    main()

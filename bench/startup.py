#!/usr/bin/env python3
"""Whole-process time of `attn compute samples/seed_dot.json` (the seed's tiny worked
example): what a user's shell loop pays per call. Not a test: a measurement to quote.

    /usr/bin/python3 bench/startup.py build/release/app/attn [--runs 200] [OTHER_ATTN ...]

Each binary runs the same command RUNS times, interleaved (binary 1, binary 2, ..., then
again) so that a change in machine load hits all of them alike. Reports per binary the
median, 10th and 90th percentile of the wall time from fork to exit, the median CPU time
of the child (user + system, from wait4's rusage), its peak RSS, and the load average
before and after. Output goes to /dev/null; the first two runs of each binary are
discarded (page cache, dynamic loader cache).
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def one_run(argv, devnull):
    """(wall seconds, cpu seconds, max rss KiB) of one child process."""
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(devnull, 1)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv[0]} failed: status {status}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("attn", nargs="+", help="attn binaries to time")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--problem", default=os.path.join(ROOT, "samples", "seed_dot.json"))
    args = ap.parse_args()

    devnull = os.open(os.devnull, os.O_WRONLY)
    argvs = [[os.path.abspath(a), "compute", args.problem] for a in args.attn]
    load_before = os.getloadavg()
    samples = {i: [] for i in range(len(argvs))}
    for r in range(args.runs + 2):
        for i, argv in enumerate(argvs):
            s = one_run(argv, devnull)
            if r >= 2:
                samples[i].append(s)
    load_after = os.getloadavg()

    print(f"attn compute {os.path.relpath(args.problem, ROOT)}: {args.runs} runs each, "
          f"interleaved; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after "
          f"({os.cpu_count()} CPUs)")
    for i, argv in enumerate(argvs):
        wall = sorted(s[0] for s in samples[i])
        cpu = statistics.median(s[1] for s in samples[i])
        rss = statistics.median(s[2] for s in samples[i])
        q = statistics.quantiles(wall, n=10)
        print(f"  {args.attn[i]}: wall median {1e3 * statistics.median(wall):.2f} ms "
              f"(p10 {1e3 * q[0]:.2f}, p90 {1e3 * q[-1]:.2f}), CPU median {1e3 * cpu:.2f} ms, "
              f"peak RSS {rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()

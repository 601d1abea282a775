#!/usr/bin/python3
"""The view from a file against numpy's read of it (issue #34): a 512 MiB float32 weights
file (default 8 heads x 4096 x 4096, softmax rows of N(0, 1) scores, as html_view.py
writes them) drawn by `attn heatmap W.npy -o view.html` and `-o view.png`, against
`np.load(W.npy)` in a fresh python3 process (the time of the np.load call itself, the
interpreter's and numpy's start-up left out), all interleaved in one run, the file in the
page cache for every run (one warm-up read first). Per side the median of --repeat runs:
wall time, CPU time (user + system, wait4) and peak RSS (wait4's ru_maxrss); then the
ratios attn / numpy, against the issue's goals (HTML <= 3x, PNG <= 1x, peak RSS <=
256 MiB). Prints the CPU (lscpu's model name and flags that matter). A benchmark, not a
test:

    /usr/bin/python3 bench/heatmap_file.py --attn build/release/app/attn [-L 4096] [-H 8]
        [--repeat 3] [--keep DIR] [--attn-flags "--threads 1"] [--baseline OLD_ATTN]

--baseline OLD_ATTN: another attn binary (say, before a change) run the same way,
interleaved in the same rounds.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

NUMPY_READ = (
    "import sys, time, numpy as np\n"
    "t0 = time.perf_counter(); w = np.load(sys.argv[1]); s = float(w[-1, -1, -1])\n"
    "print(time.perf_counter() - t0)\n")


def weights(path, H, L):
    """[H, L, L] float32 softmax rows, written through a memory map (never whole in memory)."""
    rng = np.random.default_rng(0)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(H, L, L))
    for h in range(H):
        for r0 in range(0, L, 512):
            s = rng.standard_normal((min(512, L - r0), L), dtype=np.float32)
            e = np.exp(s - s.max(-1, keepdims=True))
            out[h, r0:r0 + s.shape[0]] = e / e.sum(-1, keepdims=True)
    out.flush()
    del out


def timed(argv, stdout=subprocess.DEVNULL):
    """(wall s, CPU s, peak RSS MiB, stdout) of a child process."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE if stdout is None else stdout)
    out = p.stdout.read() if stdout is None else b""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv}: exit {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out


def cpu_name():
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown CPU"
    name = re.search(r"Model name:\s*(.*)", text)
    cpus = re.search(r"^CPU\(s\):\s*(\d+)", text, re.M)
    flags = re.search(r"Flags:\s*(.*)", text)
    simd = [f for f in ("avx2", "avx512f", "avx512bw") if flags and f in flags.group(1).split()]
    return f"{name.group(1) if name else '?'}, {cpus.group(1) if cpus else '?'} CPUs, " + \
        "/".join(simd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", required=True)
    ap.add_argument("-L", type=int, default=4096)
    ap.add_argument("-H", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="write the files into this folder and keep them")
    ap.add_argument("--attn-flags", default="", help="extra flags for attn heatmap")
    ap.add_argument("--baseline", help="another attn binary, run the same way in each round")
    a = ap.parse_args()
    tmp = a.keep or tempfile.mkdtemp(prefix="attn-heatmap-bench-")
    os.makedirs(tmp, exist_ok=True)
    npy = os.path.join(tmp, "w.npy")
    size = a.H * a.L * a.L * 4
    if not (os.path.exists(npy) and os.path.getsize(npy) > size):
        weights(npy, a.H, a.L)
    attn = [os.path.abspath(a.attn), "heatmap", npy] + a.attn_flags.split()
    sides = {
        "numpy np.load": [sys.executable, "-c", NUMPY_READ, npy],
        "attn -o .html": attn + ["-o", os.path.join(tmp, "view.html")],
        "attn -o .png": attn + ["-o", os.path.join(tmp, "view.png")],
    }
    if a.baseline:
        old = [os.path.abspath(a.baseline)] + attn[1:]
        sides["baseline -o .html"] = old + ["-o", os.path.join(tmp, "old.html")]
        sides["baseline -o .png"] = old + ["-o", os.path.join(tmp, "old.png")]
    timed(sides["numpy np.load"], stdout=None)  # the file into the page cache
    runs = {k: [] for k in sides}
    for _ in range(a.repeat):
        for k, argv in sides.items():
            wall, cpu, rss, out = timed(argv, stdout=None if k.startswith("numpy") else
                                        subprocess.DEVNULL)
            if k.startswith("numpy"):
                wall = float(out.decode().strip())  # np.load alone
            runs[k].append((wall, cpu, rss))
    med = {k: tuple(statistics.median(r[i] for r in v) for i in range(3)) for k, v in runs.items()}
    print(f"CPU: {cpu_name()}; load average {os.getloadavg()[0]:.1f} at the end")
    print(f"weights [{a.H}, {a.L}, {a.L}] float32, {size / 2**20:.0f} MiB; medians of "
          f"{a.repeat} interleaved runs; attn flags: {a.attn_flags or '(none)'}")
    base = med["numpy np.load"][0]
    goals = {"attn -o .html": 3.0, "attn -o .png": 1.0, "baseline -o .html": 3.0,
             "baseline -o .png": 1.0}
    for k, (wall, cpu, rss) in med.items():
        extra = ""
        if k in goals:
            extra = (f"  {wall / base:.2f}x numpy (goal <= {goals[k]:.0f}x), "
                     f"peak RSS goal <= 256 MiB: {'met' if rss <= 256 else 'missed'}")
        print(f"  {k:17s} {wall:6.3f} s wall, {cpu:6.3f} s CPU (process), "
              f"peak RSS {rss:6.0f} MiB{extra}")
    print("  all runs (wall s, CPU s, RSS MiB): " +
          "; ".join(f"{k}: " + ", ".join(f"({w:.2f}, {c:.2f}, {r:.0f})" for w, c, r in v)
                    for k, v in runs.items()))
    if a.keep:
        return 0
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())

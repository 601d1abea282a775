#!/usr/bin/env python3
"""Throughput of `attn batch` against a plain Python loop (json + numpy) on the same
problems, in one run: generates the problems (cached), checks that both give the same
results on the first lines, then times each on the whole file and prints problems/s.

Usage: /usr/bin/python3 bench/batch/run.py PATH/TO/attn [--n 100000] [--jobs 2]
                                           [--repeat 1] [--no-weights] [--cache DIR]

Both write their results to /dev/null through the same kind of pipe, and both read the
file from the page cache (it is read once before timing). Not a test: nothing here is
run by CTest. Record numbers with the machine line this prints (bench/README.md).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


# numpy's OpenBLAS pinned to one thread: for these small matrices its thread pool only
# costs time (measured: about 1.7x slower with the default), so the baseline is at its best.
PY_ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def timed(cmd, env=None):
    """Wall seconds of one run of cmd, stdout to /dev/null, plus its CPU seconds."""
    before = os.times()
    t = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run(cmd, stdout=null, check=True, env=env)
    wall = time.perf_counter() - t
    after = os.times()
    cpu = (after.children_user - before.children_user) + \
        (after.children_system - before.children_system)
    return wall, cpu


def verify(attn, problems, jobs, no_weights, lines=300):
    """Runs both on the first lines; their results must agree within float32 noise."""
    head = problems + f".head{lines}"
    with open(problems) as src, open(head, "w") as dst:
        for i, line in enumerate(src):
            if i == lines:
                break
            dst.write(line)
    flag = ["--no-weights"] if no_weights else []
    a = subprocess.run([attn, "batch", head, "--jobs", str(jobs)] + flag, capture_output=True,
                       check=True).stdout.decode().splitlines()
    b = subprocess.run([PY, os.path.join(HERE, "python_loop.py"), head] + flag,
                       capture_output=True, check=True, env=PY_ENV).stdout.decode().splitlines()
    os.remove(head)
    if len(a) != len(b):
        sys.exit(f"verify: attn gave {len(a)} lines, python {len(b)}")
    for x, y in zip(a, b):
        x, y = json.loads(x), json.loads(y)
        for key in ("output", "weights"):
            if (key in x) != (key in y):
                sys.exit(f"verify: id {x.get('id')}: '{key}' in only one result")
            if key in x and not np.allclose(np.array(x[key], dtype=float),
                                            np.array(y[key], dtype=float),
                                            rtol=1e-4, atol=1e-5):
                sys.exit(f"verify: id {x.get('id')}: {key} differs")
    return len(a)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("attn")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-weights", action="store_true")
    ap.add_argument("--cache", default="/tmp/attn-bench-batch")
    args = ap.parse_args()

    os.makedirs(args.cache, exist_ok=True)
    problems = os.path.join(args.cache, f"problems-{args.n}.jsonl")
    if not os.path.exists(problems):
        print(f"generating {args.n} problems into {problems} ...", flush=True)
        subprocess.run([PY, os.path.join(HERE, "make_problems.py"), str(args.n),
                        problems + ".part"], check=True)
        os.replace(problems + ".part", problems)
    size = os.path.getsize(problems)
    with open(problems, "rb") as f:  # into the page cache, for both contestants alike
        while f.read(1 << 24):
            pass

    checked = verify(args.attn, problems, args.jobs, args.no_weights)
    flag = ["--no-weights"] if args.no_weights else []
    contestants = [
        (f"attn batch --jobs {args.jobs}",
         [args.attn, "batch", problems, "--jobs", str(args.jobs), "--quiet"] + flag, None),
        ("python loop (json + numpy)",
         [PY, os.path.join(HERE, "python_loop.py"), problems] + flag, PY_ENV),
    ]
    walls = {name: [] for name, _, _ in contestants}
    cpus = {name: [] for name, _, _ in contestants}
    for _ in range(args.repeat):
        for name, cmd, env in contestants:  # interleaved, so drifts in load hit both
            wall, cpu = timed(cmd, env)
            walls[name].append(wall)
            cpus[name].append(cpu)

    print(f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs, "
          f"load average at end {os.getloadavg()[0]:.2f}; Python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print(f"input: {args.n} problems, {size / 1e6:.0f} MB ({problems}); "
          f"{'no weights' if args.no_weights else 'with weights'}; first {checked} results "
          f"verified equal (rtol 1e-4, atol 1e-5); median of {args.repeat} run(s)")
    rates = {}
    for name, _, _ in contestants:
        wall = statistics.median(walls[name])
        cpu = statistics.median(cpus[name])
        rates[name] = args.n / wall
        print(f"  {name:32s} {rates[name]:10.0f} problems/s   ({wall:.1f} s wall, "
              f"{cpu:.1f} s CPU)")
    names = [name for name, _, _ in contestants]
    print(f"  ratio: {rates[names[0]] / rates[names[1]]:.1f}x")


if __name__ == "__main__":
    main()

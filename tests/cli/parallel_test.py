#!/usr/bin/env python3
"""README's GNU parallel recipe: a JSON Lines stream split over several `attn batch`
processes with `parallel --pipe --keep-order` gives the same bytes as one `attn batch`.

/usr/bin/python3 tests/cli/parallel_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import shutil
import subprocess

import numpy as np

from harness import ATTN, TMP, check, main, run, skip, test

RNG = np.random.default_rng(8)


def stream(n):
    lines = []
    for i in range(n):
        lq, lk, d = (int(x) for x in RNG.integers(1, 7, 3))
        doc = {"id": i, "query": RNG.standard_normal((lq, d)).round(3).tolist(),
               "key": RNG.standard_normal((lk, d)).round(3).tolist(),
               "value": RNG.standard_normal((lk, 2)).round(3).tolist(),
               "causal": bool(i % 3 == 0)}
        lines.append(json.dumps(doc))
    return ("\n".join(lines) + "\n").encode()


def parallel(args, data):
    return subprocess.run(["parallel", *args], input=data, cwd=TMP, capture_output=True,
                          timeout=300)


def needs_parallel(name):
    """Decorator: a case of the table that runs GNU parallel, noted as skipped where it is
    not installed."""
    def add(fn):
        @test(name)
        def _():
            if shutil.which("parallel") is None:
                skip("GNU parallel is not installed (scripts/setup.sh installs it)")
                return
            fn()
        return fn
    return add


@needs_parallel("parallel --pipe --keep-order: same bytes as one attn batch")
def _():
    data = stream(60)
    rc, one, err = run(["batch", "-"], stdin=data)
    check("one attn batch: exit 0", rc == 0, err)
    check("one line per problem", one.count(b"\n") == 60, str(one.count(b"\n")))
    # Records of 7 lines (-N 7), then blocks of 1 KiB: chunks end on line boundaries.
    for split in (["-N", "7"], ["--block", "1k"]):
        p = parallel(["--pipe", "--keep-order", *split, "-j", "3", ATTN, "batch", "--jobs",
                      "1", "--threads", "1"], data)
        check(f"parallel {' '.join(split)}: exit 0", p.returncode == 0, p.stderr.decode()[:300])
        check(f"parallel {' '.join(split)}: same bytes", p.stdout == one,
              f"{len(p.stdout)} vs {len(one)} bytes")


@needs_parallel("without --keep-order the lines are the same set")
def _():
    data = stream(30)
    rc, one, err = run(["batch", "-", "--no-weights"], stdin=data)
    p = parallel(["--pipe", "-N", "4", "-j", "3", ATTN, "batch", "--no-weights", "--jobs", "1"],
                 data)
    check("exit 0", rc == 0 and p.returncode == 0, err + p.stderr.decode()[:300])
    check("same lines", sorted(p.stdout.splitlines()) == sorted(one.splitlines()))


main()

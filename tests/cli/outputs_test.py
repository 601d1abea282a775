#!/usr/bin/env python3
"""Where results go: with output files given, stdout carries only what was not written to
a file; devices and pipes (/dev/null, /dev/stderr) are accepted as outputs without a file
extension. One case per check.

/usr/bin/python3 tests/cli/outputs_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os

import numpy as np

from harness import SAMPLES, TMP, check, main, run, test

SEED = os.path.join(SAMPLES, "seed_dot.json")


@test("--weights FILE without --output leaves the weights out of stdout")
def _():
    w = os.path.join(TMP, "w.npy")
    rc, out, err = run(["compute", SEED, "--weights", w])
    doc = json.loads(out) if rc == 0 else {}
    check("exit 0", rc == 0, err)
    check("no weights on stdout", "weights" not in doc and "output" in doc, out[:200])
    check("weights in the file", os.path.exists(w) and np.load(w).shape == (2, 3))


@test("without --weights the result document keeps its weights")
def _():
    rc, out, err = run(["compute", SEED])
    check("weights on stdout", rc == 0 and "weights" in json.loads(out), f"{rc} {err}")


@test("-o /dev/null is accepted")
def _():
    rc, out, err = run(["compute", SEED, "-o", "/dev/null"])
    check("exit 0, nothing printed", rc == 0 and out == b"" and err == "", f"{rc} {err!r}")


@test("--weights /dev/stderr writes JSON there")
def _():
    rc, out, err = run(["compute", SEED, "--weights", "/dev/stderr", "-o", "/dev/null"])
    check("exit 0", rc == 0, err)
    check("weights as JSON on stderr", rc == 0 and len(json.loads(err)) == 2, err[:200])


@test("heatmap -o /dev/null is accepted")
def _():
    rc, out, err = run(["heatmap", os.path.join(SAMPLES, "expected", "seed_dot.json"), "-o",
                        "/dev/null"])
    check("exit 0", rc == 0 and err == "", f"{rc} {err!r}")


main()

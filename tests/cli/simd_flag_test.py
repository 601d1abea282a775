#!/usr/bin/env python3
"""CLI tests of `--simd TARGET` on `attn compute` and `attn batch`: every target this CPU
runs (as `attn --version` names them, any case) gives the default's output within float32
tolerance and the float64 reference's; one target is bit-identical for any --threads; an
unknown target is one line on stderr and exit 2; --help lists --simd.

Run from the repository root: /usr/bin/python3 tests/cli/simd_flag_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ATTN = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import reference  # noqa: E402  (the float64 oracle)
from leak_rule import leak_env  # noqa: E402

tally = reference.Tally()
check = tally.check


def run(args, stdin=None):
    return subprocess.run([ATTN] + args, capture_output=True, timeout=120, input=stdin,
                          env=leak_env(args, None, stdin))


version = run(["--version"]).stdout.decode()
m = re.search(r"SIMD targets compiled in: ([A-Z0-9_ ]+)", version)
compiled = m.group(1).split() if m else []
check("--version names the targets", bool(compiled), repr(version))
# The fallback target: SCALAR with g++ 12 (which marks EMU128 broken), EMU128 with clang.
FALLBACK = compiled[-1] if compiled else "SCALAR"
fallback = FALLBACK.lower()

with tempfile.TemporaryDirectory() as tmp:
    rng = np.random.default_rng(11)
    # Lengths not multiples of any register tile, so every target runs its tails; causal
    # so block skipping runs too.
    B, H, Lq, Lk, D = 2, 3, 77, 93, 40
    q = rng.standard_normal((B, H, Lq, D)).astype(np.float32)
    k = rng.standard_normal((B, H, Lk, D)).astype(np.float32)
    v = rng.standard_normal((B, H, Lk, D)).astype(np.float32)
    for name, a in (("q", q), ("k", k), ("v", v)):
        np.save(os.path.join(tmp, name + ".npy"), a)
    base = ["compute", "-q", os.path.join(tmp, "q.npy"), "-k", os.path.join(tmp, "k.npy"),
            "-v", os.path.join(tmp, "v.npy"), "--causal=bottom-right", "--no-weights"]

    def output(extra, tag):
        path = os.path.join(tmp, tag + ".npy")
        p = run(base + ["-o", path] + extra)
        check(f"compute {' '.join(extra)} exits 0", p.returncode == 0,
              f"exit {p.returncode}: {p.stderr.decode()[:300]}")
        return np.load(path) if p.returncode == 0 else None

    scale = 1.0 / np.sqrt(D)
    allowed = reference.causal_allowed("bottom-right", Lq, Lk)
    want = np.array([[reference._slow_attention(
        q[b, h].astype(np.float64), k[b, h].astype(np.float64), v[b, h].astype(np.float64),
        scale, allowed)[0] for h in range(H)] for b in range(B)])

    default = output([], "default")
    check("default matches the float64 reference",
          default is not None and np.allclose(default, want, atol=1e-5, rtol=1e-5),
          "max diff %s" % (None if default is None else np.abs(default - want).max()))
    # Lower case for one of them: the names are case-insensitive.
    for target, spelled in (("AVX2", "AVX2"), (FALLBACK, fallback)):
        if target not in compiled:
            continue
        got = output(["--simd", spelled], target)
        check(f"--simd {spelled} within 1e-5 of the default",
              got is not None and default is not None
              and np.allclose(got, default, atol=1e-5, rtol=1e-5),
              "max diff %s" % (None if got is None or default is None
                               else np.abs(got - default).max()))
        # The flag reaches the kernels: the fallback target sums in another order than the
        # widest vector one, and over these 18480 outputs (sums of up to 93 terms) some low
        # bit differs. (AVX2 and AVX-512 may agree to the bit.)
        if target == FALLBACK and compiled[0] != target:
            check(f"--simd {spelled} is not the default target's result",
                  got is not None and default is not None and not np.array_equal(got, default),
                  "bit-identical to the default: the flag did not reach the kernels")
        one = output(["--simd", spelled, "--threads", "1"], target + "-t1")
        two = output(["--simd", spelled, "--threads", "2"], target + "-t2")
        check(f"--simd {spelled}: --threads 1 and 2 bit-identical",
              one is not None and two is not None and np.array_equal(one, two), "differ")

    # batch: the same problem on one line, through --simd.
    line = json.dumps({"query": q[0, 0].tolist(), "key": k[0, 0].tolist(),
                       "value": v[0, 0].tolist()}) + "\n"
    outs = {}
    for extra in ([], ["--simd", fallback]):
        p = run(["batch", "--no-weights"] + extra, stdin=line.encode())
        check(f"batch {' '.join(extra)} exits 0", p.returncode == 0,
              f"exit {p.returncode}: {p.stderr.decode()[:300]}")
        if p.returncode == 0:
            outs[len(extra)] = np.array(json.loads(p.stdout)["output"], dtype=np.float64)
    check(f"batch --simd {fallback} within 1e-5 of the default",
          len(outs) == 2 and np.allclose(outs[0], outs[2], atol=1e-5, rtol=1e-5), repr(outs)[:200])

    # Unknown or unrunnable names: one line, exit 2, naming what this CPU runs.
    for cmd in (base, ["batch"]):
        for bad in ("nosuch", "NEON" if "NEON" not in compiled else "AVX3"):
            p = run(cmd + ["--simd", bad], stdin=b"")
            err = p.stderr.decode()
            what = f"{cmd[0]} --simd {bad}"
            check(what + " exits 2", p.returncode == 2, f"exit {p.returncode}")
            check(what + " one line naming the flag and the targets",
                  err.count("\n") == 1 and "--simd" in err and "best" in err
                  and compiled[-1] in err, repr(err))
            check(what + " no stdout", p.stdout == b"", repr(p.stdout[:200]))

    for cmd in ("compute", "batch"):
        p = run([cmd, "--help"])
        check(f"{cmd} --help lists --simd", p.returncode == 0 and b"--simd" in p.stdout,
              p.stdout.decode()[-300:])

sys.exit(tally.done())

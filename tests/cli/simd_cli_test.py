#!/usr/bin/env python3
"""CLI tests of `attn --version`'s SIMD lines: after "attn VERSION" it names the Highway
targets compiled in (best first, ending with the scalar or emulated fallback) and the one
this CPU uses, which must be one of them.

Run from the repository root: /usr/bin/python3 tests/cli/simd_cli_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import os
import re
import subprocess
import sys

ATTN = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


VERSION = re.search(r"project\(attn VERSION ([0-9.]+)",
                    open(os.path.join(ROOT, "CMakeLists.txt")).read()).group(1)
KNOWN = {"AVX3_DL", "AVX3", "AVX2", "SSE4", "SSSE3", "SVE2_128", "SVE_256", "SVE2", "SVE",
         "NEON", "EMU128", "SCALAR"}

for args in (["--version"], ["compute", "--version"]):
    p = subprocess.run([ATTN] + args, capture_output=True, timeout=60)
    lines = p.stdout.decode().splitlines()
    what = " ".join(args)
    check(what + " exits 0 and prints three lines", p.returncode == 0 and len(lines) == 3,
          f"exit {p.returncode}, stdout {lines!r}")
    if len(lines) != 3:
        continue
    check(what + " first line", lines[0] == "attn " + VERSION, lines[0])
    m = re.fullmatch(r"SIMD targets compiled in: ([A-Z0-9_ ]+)", lines[1])
    check(what + " compiled line", m is not None, lines[1])
    compiled = m.group(1).split() if m else []
    check(what + " compiled names are Highway targets", compiled and set(compiled) <= KNOWN,
          repr(compiled))
    check(what + " ends with the fallback", compiled[-1:] in (["SCALAR"], ["EMU128"]),
          repr(compiled))
    m = re.fullmatch(r"SIMD target this CPU uses: ([A-Z0-9_]+)", lines[2])
    check(what + " uses line", m is not None and m.group(1) in compiled, lines[2])
    check(what + " no stderr", p.stderr == b"", repr(p.stderr[:200]))

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)

#!/usr/bin/env python3
"""CLI conventions: bare `attn`, `attn help` and `attn help CMD` print help and exit 0;
an unknown command or flag is named with the closest known one ("did you mean"); a flag
error points to its own subcommand's help.

Run from the repository root: /usr/bin/python3 tests/cli/cli_conventions_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import os
import re
import subprocess
import sys

ATTN = os.path.abspath(sys.argv[1])
passed = failed = 0


def run(args):
    p = subprocess.run([ATTN] + args, capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode("utf-8", "replace")


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def help_case(name, args, first_line):
    rc, out, err = run(args)
    check(name, rc == 0 and out.startswith(first_line) and err == "", f"{rc} {out[:80]!r} {err!r}")


def error_case(name, args, pattern):
    rc, out, err = run(args)
    lines = err.strip().splitlines()
    check(name, rc == 2 and out == "" and len(lines) == 1 and re.fullmatch(pattern, lines[0]),
          f"exit {rc}, stderr {err.strip()!r}")


help_case("bare attn prints help", [], "attn: compute, check and visualise attention")
help_case("attn help", ["help"], "attn: compute, check and visualise attention")
help_case("attn help compute", ["help", "compute"], "Compute attention for one problem")
help_case("attn help heatmap", ["help", "heatmap"], "Draw attention weights")
rc, out, err = run(["help", "heatmap"])
check("help CMD shows the full usage", "Usage: attn heatmap" in out, out[:200])
error_case("unknown command", ["comptue", "x.json"],
           r"attn: error: unknown command 'comptue' \(did you mean 'compute'\?\) "
           r"\(see 'attn --help'\)")
error_case("unknown command, nothing close", ["frobnicate"],
           r"attn: error: unknown command 'frobnicate' \(see 'attn --help'\)")
error_case("help of an unknown command", ["help", "heatmpa"],
           r"attn: error: unknown command 'heatmpa' \(did you mean 'heatmap'\?\) "
           r"\(see 'attn --help'\)")
error_case("unknown flag", ["compute", "samples/seed_dot.json", "--cuasal"],
           r"attn: error: The following argument was not expected: --cuasal "
           r"\(did you mean '--causal'\?\) \(see 'attn compute --help'\)")
error_case("unknown flag with a value", ["heatmap", "w.npy", "--pol=max"],
           r"attn: error: .*--pol=max \(did you mean '--pool'\?\) \(see 'attn heatmap --help'\)")
error_case("flag error points to its subcommand", ["batch", "--jobs", "0"],
           r"attn: error: .*--jobs.* \(see 'attn batch --help'\)")
check("README still runs: --version", run(["--version"])[0] == 0)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)

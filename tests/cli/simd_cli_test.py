#!/usr/bin/python3
"""CLI tests of `attn --version`'s SIMD lines: after "attn VERSION" it names the Highway
targets compiled in (best first, ending with the scalar or emulated fallback), the one
this CPU uses, which must be one of them, how the BF16 pair products run (AMX's tiles
only on a CPU with AMX-BF16, as /proc/cpuinfo says) and the integer products (AVX-VNNI
exactly where the target in use is AVX2 and /proc/cpuinfo has avx_vnni; AVX512-VNNI on
AVX3 where it has avx512_vnni).

    /usr/bin/python3 tests/cli/simd_cli_test.py PATH/TO/attn [--case NAME]   (from the repo root)
    /usr/bin/python3 tests/cli/simd_cli_test.py --list
"""
import os
import re

from harness import ROOT, check, main, run, test

VERSION = re.search(r"project\(attn VERSION ([0-9.]+)",
                    open(os.path.join(ROOT, "CMakeLists.txt")).read()).group(1)
KNOWN = {"AVX3_DL", "AVX3", "AVX2", "SSE4", "SSSE3", "SVE2_128", "SVE_256", "SVE2", "SVE",
         "NEON", "EMU128", "SCALAR"}


def version_lines(args):
    """stdout's lines; checks exit 0, six lines (the last names the commit) and an empty
    stderr."""
    rc, out, err = run(args)
    lines = out.decode().splitlines()
    what = " ".join(args)
    check(what + " exits 0 and prints six lines", rc == 0 and len(lines) == 6,
          f"exit {rc}, stdout {lines!r}")
    check(what + " no stderr", err == "", repr(err[:200]))
    return lines if len(lines) == 6 else None


def compiled(lines):
    m = re.fullmatch(r"SIMD targets compiled in: ([A-Z0-9_ ]+)", lines[1])
    return m, (m.group(1).split() if m else [])


def first_line(what, lines):
    check(what + " first line", lines[0] == "attn " + VERSION, lines[0])


def compiled_targets(what, lines):
    m, names = compiled(lines)
    check(what + " compiled line", m is not None, lines[1])
    check(what + " compiled names are Highway targets", names and set(names) <= KNOWN,
          repr(names))
    check(what + " ends with the fallback", names[-1:] in (["SCALAR"], ["EMU128"]),
          repr(names))


def target_in_use(what, lines):
    _, names = compiled(lines)
    m = re.fullmatch(r"SIMD target this CPU uses: ([A-Z0-9_]+)", lines[2])
    check(what + " uses line", m is not None and m.group(1) in names, lines[2])


def bf16_products(what, lines):
    m = re.fullmatch(r"BF16 pair products \(activations bf16\): (AMX|vdpbf16ps|FMA)", lines[3])
    check(what + " BF16 pair products line", m is not None, lines[3])
    flags = open("/proc/cpuinfo").read().split() if os.path.exists("/proc/cpuinfo") else []
    amx = "amx_bf16" in flags and "amx_tile" in flags
    check(what + " AMX only where the CPU has it", m is None or (m.group(1) == "AMX") <= amx,
          f"{lines[3]}; amx_bf16 in /proc/cpuinfo: {amx}")


def int8_products(what, lines):
    m = re.fullmatch(r"Integer products \(activations q8\): "
                     r"(AVX512-VNNI|AVX-VNNI|maddubs|portable)", lines[4])
    check(what + " integer products line", m is not None, lines[4])
    used = re.fullmatch(r"SIMD target this CPU uses: ([A-Z0-9_]+)", lines[2])
    if m is None or used is None:
        return
    flags = open("/proc/cpuinfo").read().split() if os.path.exists("/proc/cpuinfo") else []
    target = used.group(1)
    want = ("AVX512-VNNI" if target == "AVX3_DL" else
            ("AVX-VNNI" if "avx_vnni" in flags else "maddubs") if target == "AVX2" else
            ("AVX512-VNNI" if "avx512_vnni" in flags else "maddubs") if target == "AVX3" else
            "portable")
    check(what + " integer products follow the target and /proc/cpuinfo", m.group(1) == want,
          f"{lines[4]}; target {target}, avx_vnni in /proc/cpuinfo: {'avx_vnni' in flags}")


# The table: each check of the --version lines, for both places --version is asked.
for args in (["--version"], ["compute", "--version"]):
    what = " ".join(args)
    for label, body in (("first line", first_line), ("compiled targets", compiled_targets),
                        ("target in use", target_in_use), ("bf16 products", bf16_products),
                        ("integer products", int8_products)):
        @test(f"{what} {label}")
        def _(args=args, what=what, body=body):
            lines = version_lines(args)
            if lines:
                body(what, lines)


main()

#!/usr/bin/python3
"""CLI conventions: bare `attn`, `attn help` and `attn help CMD` print help and exit 0;
an unknown command or flag is named with the closest known one ("did you mean"); a flag
error points to its own subcommand's help.

    /usr/bin/python3 tests/cli/cli_conventions_test.py PATH/TO/attn [--case NAME]
    /usr/bin/python3 tests/cli/cli_conventions_test.py --list        (from the repo root)
"""
from harness import ROOT, case, main


def help_case(name, args, first_line):
    """Exit 0, stdout starts with first_line, nothing on stderr."""
    case(name, args, err=r"\A\Z", out=lambda so: so.decode().startswith(first_line))


def error_case(name, args, pattern):
    """Exit 2, stdout empty, stderr exactly one line that matches pattern whole."""
    case(name, args, code=2, err=r"\A(?:" + pattern + r")\n?\Z", out=lambda so: so == b"",
         cwd=ROOT)


help_case("bare attn prints help", [], "attn: compute, check and visualise attention")
help_case("attn help", ["help"], "attn: compute, check and visualise attention")
help_case("attn help compute", ["help", "compute"], "Compute attention for one problem")
help_case("attn help heatmap", ["help", "heatmap"], "Draw attention weights")
case("help CMD shows the full usage", ["help", "heatmap"],
     out=lambda so: b"Usage: attn heatmap" in so)
# A run declares only its own command's flags (app/main.cpp): `help CMD` must declare them all.
case("help CMD lists the command's flags", ["help", "compute"],
     out=lambda so: b"--causal" in so and b"--heatmap" in so and b"--select-heads" in so)
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
case("README still runs: --version", ["--version"])

main()

#!/usr/bin/env python3
"""Fails when a file of the library below the command line (lib/ outside its cli/ folders)
holds a literal that starts with `"--` and a letter: a flag's name (a bare "--", such as
huggingface_hub's separator in models--ORG--NAME, is not one). The library names fields ("colormap", "max_memory",
through attn::option_name); the cli layer maps a field to its flag when the CLI prints, so
a Python user is never told about a flag. Prints FILE:LINE for each one found."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLAG = re.compile(r'"--[A-Za-z]')
CLI_FOLDERS = (pathlib.PurePosixPath("src/cli"), pathlib.PurePosixPath("include/attn/cli"))


def below_cli(relative: pathlib.PurePosixPath) -> bool:
    return any(relative.parts[:len(f.parts)] == f.parts for f in CLI_FOLDERS)


def main() -> int:
    lib = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "lib"
    bad = []
    for path in sorted(lib.rglob("*")):
        if path.suffix not in {".cpp", ".hpp", ".h"}:
            continue
        relative = pathlib.PurePosixPath(path.relative_to(lib).as_posix())
        if below_cli(relative):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if FLAG.search(line):
                bad.append(f"{path.relative_to(lib.parent)}:{number}: {line.strip()}")
    for b in bad:
        print(f"a flag's name below cli/: {b}", file=sys.stderr)
    print(f"{len(bad)} flag literal(s) below cli/")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

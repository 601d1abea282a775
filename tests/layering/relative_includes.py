#!/usr/bin/env python3
"""Fails when a file under lib/ includes a header by a path that climbs out of its folder
("../"): such a path reaches a header around the layers' include paths (a layer's tree of
links resolves ".." in the real folder), so the build could not refuse an upward include.
A layer's private headers sit beside their sources; public ones are "attn/..." paths."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]*)[>"]')


def main() -> int:
    lib = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "lib"
    bad = []
    for path in sorted(lib.rglob("*")):
        if path.suffix not in {".cpp", ".hpp", ".h"}:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and ".." in pathlib.PurePosixPath(m.group(1)).parts:
                bad.append(f"{path.relative_to(lib.parent)}:{number}: {m.group(1)}")
    for b in bad:
        print(f"relative include climbs out of its folder: {b}", file=sys.stderr)
    print(f"{len(bad)} relative include(s) out of a folder")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

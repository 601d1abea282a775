#!/usr/bin/python3
"""Fails when a line of a text file is longer than a limit (HACKING.md: 100 characters).

Usage: line_length.py FILE [LIMIT]. Characters are counted, not bytes (a line may hold
'→' or '·'); every offending line is listed with its number and length, then the exit code is 1.
"""
import sys


def main() -> int:
    path = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    with open(path, encoding="utf-8") as f:
        long = [(n, len(line.rstrip("\n"))) for n, line in enumerate(f, 1)
                if len(line.rstrip("\n")) > limit]
    for n, length in long:
        print(f"{path}:{n}: {length} characters (at most {limit})")
    if long:
        print(f"{len(long)} line(s) over {limit} characters")
        return 1
    print(f"{path}: every line at most {limit} characters")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Python examples of README.md's "Python" section and docs/python.md run as shown:
each file's ```python blocks in order in one namespace (as cells of one notebook), and a
line `EXPRESSION  # LITERAL` (a Python literal after the comment sign) must evaluate to
that literal. A block whose first line is "# needs ..." (a download, a model folder) is
skipped and named.

    PYTHONPATH=build/dev/python /usr/bin/python3 tests/python/docs_examples_test.py
"""
import ast
import os
import re
import sys
import tempfile
import traceback

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def python_blocks(path, section=None):
    """The ```python blocks of a Markdown file (of one "## " section when given)."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    if section:
        start = text.index("\n## " + section)
        end = text.find("\n## ", start + 1)
        text = text[start:end if end >= 0 else len(text)]
    return re.findall(r"```python\n(.*?)```", text, re.S)


def shown_value(line):
    """(expression, the literal shown after '#') for `EXPR  # LITERAL`, else None."""
    if "#" not in line or line.startswith((" ", "#")):
        return None
    code, _, comment = line.partition("#")
    try:
        expr = ast.parse(code.strip(), mode="eval")
        want = ast.literal_eval(comment.strip())
    except (SyntaxError, ValueError):
        return None
    return compile(expr, "<shown>", "eval"), want


def equal(got, want):
    if isinstance(want, bool):
        return bool(got) == want
    if isinstance(want, (tuple, list)) and isinstance(got, (tuple, list)):
        return len(got) == len(want) and all(equal(g, w) for g, w in zip(got, want))
    return got == want


def run_file(path, section=None):
    failures = 0
    ns = {"__name__": "__docs__"}
    blocks = python_blocks(path, section)
    assert blocks, "no python blocks in " + path
    for i, block in enumerate(blocks):
        name = "%s block %d" % (path, i + 1)
        if block.startswith("# needs "):  # what no test machine has: a download, a model
            print("skip", name, "(%s)" % block.splitlines()[0][2:])
            continue
        try:
            exec(compile(block, name, "exec"), ns)
        except Exception:
            failures += 1
            print("FAIL", name)
            traceback.print_exc()
            continue
        for line in block.splitlines():
            shown = shown_value(line)
            if shown is None:
                continue
            got = eval(shown[0], ns)
            if not equal(got, shown[1]):
                failures += 1
                print("FAIL", name, "shows", line.strip(), "but gives", repr(got))
        print("ok  ", name)
    return failures


def main():
    os.chdir(tempfile.mkdtemp(prefix="attn-docs-"))  # examples may save files
    failures = run_file("README.md", "Python") + run_file("docs/python.md")
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    np.random.seed(0)
    sys.exit(main())

#!/usr/bin/env python3
"""Writes samples/expected/NAME.json for every sample problem, computed by the
independent numpy float64 reference (tests/oracle/reference.py), never by attn itself.

    /usr/bin/python3 scripts/make_expected.py
"""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import reference  # noqa: E402


def main():
    samples = os.path.join(ROOT, "samples")
    os.makedirs(os.path.join(samples, "expected"), exist_ok=True)
    for name in sorted(os.listdir(samples)):
        if not name.endswith(".json") or name.endswith(".params.json"):
            continue
        output, weights = reference.compute(
            reference.load_problem_file(os.path.join(samples, name)))
        doc = {"output": output.tolist(), "weights": weights.tolist()}
        with open(os.path.join(samples, "expected", name), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print("wrote samples/expected/" + name)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""top_k keeps visible keys whose weight underflows to 0: -1 pads only past the row's
visible keys (found by a differential run against a float64 oracle). One case per check.

/usr/bin/python3 tests/cli/topk_test.py PATH/TO/attn [--case NAME] | --list
"""
import json

from harness import check, main, run, test


def top_k(problem, *flags):
    rc, out, err = run(["compute", "-", "--no-weights", *flags], stdin=json.dumps(problem).encode())
    check("exit 0", rc == 0, err)
    return json.loads(out)["top_k"] if rc == 0 else None


UNDERFLOW = {"variant": "dot", "query": [[1]], "key": [[0], [200]], "value": [[1], [2]],
             "return": ["top_k"], "top_k": 2}


@test("visible key whose weight underflows keeps its index")
def _():
    got = top_k(UNDERFLOW)
    check("indices", got and got["indices"] == [[1, 0]], str(got))
    check("weights", got and got["weights"] == [[1, 0]], str(got))


@test("f64 agrees on the indices")
def _():
    got = top_k(UNDERFLOW, "--precision", "f64")
    check("indices", got and got["indices"] == [[1, 0]], str(got))
    check("tiny weight", got and 0 < got["weights"][0][1] < 1e-80, str(got))


@test("-1 pads only past the visible keys")
def _():
    problem = dict(UNDERFLOW, key=[[0], [200], [1]], value=[[1], [2], [3]], top_k=4,
                   mask=[[True, True, False]])
    got = top_k(problem)
    check("indices", got and got["indices"] == [[1, 0, -1, -1]], str(got))


@test("a long ALiBi row that sees one key returns it")
def _():
    n = 300
    problem = {"variant": "dot", "query": [[0.0]] * n, "key": [[0.0]] * n,
               "value": [[1.0]] * n, "causal": True, "alibi": [1.0], "return": ["top_k"],
               "top_k": 2}
    got = top_k(problem)
    check("first row", got and got["indices"][0] == [0, -1], str(got and got["indices"][0]))
    check("last row keeps two visible keys", got and got["indices"][-1] == [n - 1, n - 2],
          str(got and got["indices"][-1]))


main()

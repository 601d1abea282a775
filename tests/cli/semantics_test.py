#!/usr/bin/env python3
"""Field and flag agree, decided as a user expects (found by a differential run against a
float64 oracle): "top_k": K alone asks for top-k as --top-k K does; a "-inf" sink takes
nothing; "id": null is echoed; a blocked key contributes nothing, NaN or not, whatever
blocks it (keep-mask, padding, -inf bias, causal, window).

/usr/bin/python3 tests/cli/semantics_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import math

from harness import check, expect, main, run, test

BASE = {"variant": "dot", "query": [[1.0], [0.5]], "key": [[0.0], [2.0], [1.0]],
        "value": [[1.0], [2.0], [3.0]]}


def compute(doc, *flags):
    rc, out, err = run(["compute", "-", *flags], stdin=json.dumps(doc).encode())
    check("exit 0", rc == 0, err)
    return json.loads(out) if rc == 0 else None


@test("\"top_k\": K alone implies \"return\": [\"top_k\"], as --top-k K does")
def _():
    field = compute(dict(BASE, top_k=2))
    flag = compute(BASE, "--top-k", "2")
    both = compute(dict(BASE, top_k=2, **{"return": ["top_k"]}))
    check("top_k returned", field is not None and "top_k" in field, str(field))
    check("same as the flag", field == flag, f"{field} vs {flag}")
    check("same as with return", field == both, f"{field} vs {both}")
    check("indices", field and field["top_k"]["indices"] == [[1, 2], [1, 2]], str(field))


@test("\"return\": [\"top_k\"] without K is still an error")
def _():
    expect(["compute", "-"], stdin=json.dumps(dict(BASE, **{"return": ["top_k"]})).encode(),
           code=2, err=r"return: \"top_k\" needs \"top_k\": K")
    expect(["compute", "-"], stdin=json.dumps(dict(BASE, top_k=0)).encode(), code=2,
           err=r"top_k: expected a positive integer, got 0")


@test("a \"-inf\" sink takes nothing: same result as no sink")
def _():
    plain = compute(dict(BASE, **{"return": ["lse"]}))
    sunk = compute(dict(BASE, sinks=["-inf"], **{"return": ["lse"]}))
    flag = compute(dict(BASE, **{"return": ["lse"]}), "--sinks=-inf")
    check("field: same as no sink", plain is not None and plain == sunk, f"{plain} vs {sunk}")
    check("flag: same as no sink", plain == flag, f"{plain} vs {flag}")
    stream = compute(dict(BASE, sinks=["-inf"]), "--no-weights")
    stream_plain = compute(BASE, "--no-weights")
    check("streaming kernel too", stream and stream["output"] == stream_plain["output"],
          f"{stream} vs {stream_plain}")
    f64 = compute(dict(BASE, sinks=["-inf"], precision="f64"))
    check("f64 too", f64 and all(math.isclose(a[0], b[0], rel_tol=1e-6)
                                 for a, b in zip(f64["output"], plain["output"])), str(f64))


@test("sinks refuse +inf and nan")
def _():
    for bad in ("inf", "nan"):
        expect(["compute", "-"], stdin=json.dumps(dict(BASE, sinks=[bad])).encode(), code=2,
               err=r"sinks: expected finite numbers or \"-inf\", got \"%s\"" % bad)
    expect(["compute", "-", "--sinks", "inf"], stdin=json.dumps(BASE).encode(), code=2,
           err=r"--sinks: expected comma-separated numbers")


@test("\"id\": null is echoed, in compute and in batch")
def _():
    got = compute(dict(BASE, id=None))
    check("compute echoes id null", got is not None and "id" in got and got["id"] is None,
          str(got))
    lines = "\n".join(json.dumps(dict(BASE, id=i)) for i in (None, 7, "x")) + "\n"
    rc, out, err = run(["batch", "-", "--no-weights"], stdin=lines.encode())
    check("batch exit 0", rc == 0, err)
    ids = [json.loads(x).get("id", "ABSENT") for x in out.decode().splitlines()]
    check("batch echoes every id, null too", ids == [None, 7, "x"], str(ids))
    got = compute(BASE)
    check("no id field, no id echoed", got is not None and "id" not in got, str(got))


# A blocked key contributes nothing, whatever blocks it and whatever it holds: the same
# problem with the blocked key's NaN replaced by a number gives the same result; a row
# that sees the NaN key gets NaN.
Q3 = [[1.0], [0.5], [-1.0]]
K3 = [[0.0], [2.0], [1.0]]
V3 = [[1.0], [2.0], [3.0]]
BLOCKERS = {  # every row blocks key 2, except row 2 of causal (it sees it)
    "keep-mask": {"mask": [[True, True, False]] * 3},
    "key padding": {"key_padding_mask": [True, True, False]},
    "-inf bias": {"bias": [[0, 0, "-inf"]] * 3},
    "causal": {"causal": True},
    "window": {"window": [1, 0]},
    "additive mask": {"mask_convention": "additive", "mask": [[0, -1.5, "-inf"]] * 3},
}


def nan_at(field, value=None):
    k = [row[:] for row in K3]
    v = [row[:] for row in V3]
    (k if field == "key" else v)[2][0] = "nan" if value is None else value
    return {"variant": "dot", "query": Q3, "key": k, "value": v}


for blocker, fields in BLOCKERS.items():
    for where in ("key", "value"):
        @test(f"NaN in the {where} of a key blocked by {blocker} adds nothing")
        def _(fields=fields, where=where, blocker=blocker):
            for flags in ((), ("--no-weights",), ("--precision", "f64")):
                got = compute(dict(nan_at(where), **fields), *flags)
                want = compute(dict(nan_at(where, 7.0), **fields), *flags)
                if got is None or want is None:
                    continue
                # Rows that do not see key 2 agree exactly; causal's last row sees it.
                seeing = [2] if blocker in ("causal", "window") else []
                for i in range(3):
                    if i in seeing:
                        check(f"{flags}: row {i} sees the NaN key", got["output"][i] == ["nan"],
                              str(got["output"][i]))
                    elif flags == ("--no-weights",) and where == "value":
                        # A NaN value row sends the problem to the weights kernel: the
                        # same numbers within float32 rounding, not the same bits.
                        check(f"{flags}: row {i} as if the key held a number",
                              math.isclose(got["output"][i][0], want["output"][i][0],
                                           rel_tol=1e-6),
                              f"{got['output'][i]} vs {want['output'][i]}")
                    else:
                        check(f"{flags}: row {i} as if the key held a number",
                              got["output"][i] == want["output"][i],
                              f"{got['output'][i]} vs {want['output'][i]}")
                if "weights" in got:
                    check(f"{flags}: blocked weight exactly 0",
                          all(got["weights"][i][2] == 0 for i in range(3) if i not in seeing),
                          str(got["weights"]))


main()

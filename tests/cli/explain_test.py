#!/usr/bin/env python3
"""CLI tests of `attn explain`: the samples against their expected results, the seed example
line by line, the visibility grid against compute's weights, the same errors as compute,
and the score transforms it lists.

Run from the repository root: /usr/bin/python3 tests/cli/explain_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import json
import os
import re

import numpy as np

import seed_example
from harness import SAMPLES, case, check, main, path, run, run_case, test, write

rng = np.random.default_rng(4)


def rand(*shape):
    return np.round(rng.uniform(-1, 1, size=shape), 4).tolist()


SEED = dict(seed_example.SEED, scale=1)
for name in ("query", "key", "value"):
    np.save(path(name[0] + ".npy"), np.array(SEED[name], dtype=np.float32))

# --- explain: against the samples' expected results -----------------------------------------


def explain_rows(so):
    rows = {}
    for ln in so.decode().splitlines():
        if ln[:1] != " ":
            rows[ln[:13].strip()] = ln[13:]
    return rows


def shape_of(text):
    m = re.match(r"\[([0-9, ]*)\]", text)
    return [int(x) for x in m.group(1).split(",")] if m and m.group(1) else []


def grid_of(so):
    """The '#'/'.' rows of the visibility grid."""
    out = []
    lines = so.decode().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("visibility"))
    for ln in lines[start + 2:]:
        if not ln.startswith(" ") or not re.search(r" [#.]+$", ln):
            break
        out.append(ln.rsplit(" ", 1)[1])
    return out


@test("explain: the samples against their expected results")
def _():
    for name in sorted(os.listdir(os.path.join(SAMPLES, "expected"))):
        exp = json.load(open(os.path.join(SAMPLES, "expected", name)))
        so = run_case("explain " + name, ["explain", os.path.join(SAMPLES, name)])
        if not so:
            continue
        rows = explain_rows(so)
        out_shape = list(np.array(exp["output"]).shape)
        w = np.array(exp["weights"], dtype=float)
        check(f"explain {name}: output shape", shape_of(rows.get("output", "")) == out_shape,
              f"{rows.get('output')} vs {out_shape}")
        check(f"explain {name}: weights shape", shape_of(rows.get("weights", "")) == list(w.shape),
              f"{rows.get('weights')} vs {list(w.shape)}")
        # The grid is batch 0, head 0: '#' exactly where the expected weights are nonzero.
        w00 = w.reshape((-1,) + w.shape[-2:])[0]
        want = ["".join("#" if x > 0 else "." for x in row) for row in w00]
        check(f"explain {name}: visibility grid matches the expected weights",
              grid_of(so) == want, f"{grid_of(so)} vs {want}")
        for key in ("heads", "scale", "masking", "memory", "Q", "K", "V"):
            check(f"explain {name}: has {key}", key in rows or key in ("Q", "K", "V"), str(rows))

    problems = sorted(f for f in os.listdir(SAMPLES)
                      if f.endswith(".json") and not f.endswith(".params.json"))
    check("explain: every sample problem has an expected result (so is explained above)",
          problems == sorted(os.listdir(os.path.join(SAMPLES, "expected"))), str(problems))


@test("explain: seed_dot, multihead and gqa line by line")
def _():
    # The seed's worked example, line by line where the values are derived by hand.
    so = run_case("explain samples/seed_dot.json", ["explain", os.path.join(SAMPLES, "seed_dot.json")])
    rows = explain_rows(so)
    for key, want in [("query", "[2, 3] = [Lq, E]"), ("key", "[3, 3] = [Lk, E]"),
                      ("value", "[3, 2] = [Lk, Ev]"), ("projections", "none (Q, K, V are the sources)"),
                      ("heads", "1 head; head dim 3, value head dim 2"),
                      ("scale", "1 (variant dot)"), ("output", "[2, 2]"),
                      ("weights", "[2, 3] = [Lq, Lk]"),
                      ("masking", "none: every query sees every key")]:
        check(f"explain seed_dot: {key}", rows.get(key) == want, f"{rows.get(key)!r} vs {want!r}")
    check("explain seed_dot: grid with token labels",
          "                 012\n             0 q0 ###\n             1 q1 ###\n" in so.decode(),
          so.decode())
    rows = explain_rows(run(["explain", os.path.join(SAMPLES, "multihead.json")])[1])
    check("explain multihead: heads, scale and the output projection",
          rows.get("heads") == "2 heads, each with its own key/value head; head dim 2" and
          rows.get("scale") == "0.70710677 = 1/sqrt(2) (default)" and
          rows.get("attention") == "[1, 2, 3, 2] -> merged [1, 3, 4] -> ·w_oᵀ [1, 3, 4]", str(rows))
    rows = explain_rows(run(["explain", os.path.join(SAMPLES, "gqa.json")])[1])
    check("explain gqa: grouping", rows.get("heads", "").startswith(
        "4 query heads, 2 key/value heads: grouped-query, query head h uses key/value head h / 2"),
        str(rows))


case("explain with flags only", ["explain", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy",
                                 "--causal", "--heads", "1"],
     out=lambda so: grid_of(so) == ["#..", "##."] and b"scale        0.57735026 = 1/sqrt(3)" in so)
long = {"input": np.zeros((100, 8)).tolist(), "variant": "masked-self", "init": {"seed": 1},
        "num_heads": 4, "num_kv_heads": 2, "key_padding_mask": [1] * 90 + [0] * 10}
write("long.json", long)
case("explain truncates the grid", ["explain", "long.json"],
     out=lambda so: len(grid_of(so)) == 32 and len(grid_of(so)[0]) == 64 and
     b"(first 32 of 100 queries and 64 of 100 keys shown)" in so and
     b"4 query heads, 2 key/value heads: grouped-query" in so and
     b", weights 625.0 KiB\n" in so)


@test("explain: the same errors as compute")
def _():
    bad = dict(SEED, num_heads=2)
    rc_c, _, se_c = run(["compute", "-"], json.dumps(bad).encode())
    run_case("explain: same error as compute", ["explain", "-"], stdin=json.dumps(bad).encode(), code=2,
         out=lambda so: so == b"", err=re.escape(se_c.strip()))
    check("explain: compute failed too", rc_c == 2, str(rc_c))
    bad_wo = {"input": rand(3, 4), "params": {"w_q": np.eye(4).tolist(), "w_k": None, "w_v": None,
                                              "w_o": np.eye(3).tolist()}}
    rc_c, _, se_c = run(["compute", "-"], json.dumps(bad_wo).encode())
    run_case("explain: w_o mismatch named as compute names it", ["explain", "-"],
         stdin=json.dumps(bad_wo).encode(), code=2, err=re.escape(se_c.strip()))
    run_case("explain: bottom-right with Lq < Lk", ["explain", "-"],
         stdin=json.dumps(dict(SEED, causal="bottom-right")).encode(),
         out=lambda so: grid_of(so) == ["##.", "###"] and b"j <= i + 1" in so)
    run_case("explain: fully masked rows counted", ["explain", "-"],
         stdin=json.dumps(dict(SEED, mask=[[0, 0, 0], [1, 1, 1]])).encode(),
         out=lambda so: b"1 query row(s) (over all batches and heads) can see no key" in so)
    run_case("explain: -inf bias blocks", ["explain", "-"],
         stdin=json.dumps(dict(SEED, bias=[["-inf", 0, 0], [0, 0, 1]])).encode(),
         out=lambda so: grid_of(so) == [".##", "###"])


@test("explain grid vs compute")
def _():
    # The grid says what compute does: '#' exactly where compute's weights are nonzero.
    GRID_CASES = [
        {"window": [1, 0]},
        {"window": [0, 1], "causal": "bottom-right"},
        {"window": [1, 1], "window_align": "bottom-right"},
        {"window": [2, -1], "mask": (rng.uniform(size=(5, 7)) > 0.3).astype(int).tolist()},
        {"softcap": 5.0, "alibi": True, "causal": True},
        {"sinks": [0.5], "key_padding_mask": [1, 1, 0, 1, 1, 1, 0]},
    ]
    for i, extra in enumerate(GRID_CASES):
        prob = dict({"query": rand(5, 4), "key": rand(7, 4), "value": rand(7, 3)}, **extra)
        rc_c, so_c, se_c = run(["compute", "-"], json.dumps(prob).encode())
        rc_e, so_e, se_e = run(["explain", "-"], json.dumps(prob).encode())
        if rc_c != 0 or rc_e != 0:
            check(f"explain grid vs compute, case {i}", False, f"{se_c} {se_e}")
            continue
        w = np.array(json.loads(so_c)["weights"], dtype=float)
        want = ["".join("#" if x > 0 else "." for x in row) for row in w]
        check(f"explain grid vs compute, case {i} ({', '.join(extra)})", grid_of(so_e) == want,
              f"{grid_of(so_e)} vs {want}")


case("explain lists score transforms and extra returns", ["explain", "-"],
     stdin=json.dumps(dict(SEED, softcap=30, alibi=True, sinks=[0.1], top_k=2,
                           **{"return": ["lse", "top_k"]})).encode(),
     out=lambda so: b"scores       softcap 30" in so and b"ALiBi, 1 slopes" in so and
     b"attention sinks" in so and b"also returns lse, top_k (K = 2) per query row" in so)


@test("explain: rank-4 inputs keep their single head, as compute's weights do")
def _():
    for name in ("q", "k", "v"):
        write(f"{name}41.npy", np.array(rng.uniform(-1, 1, (2, 1, 3, 4)), dtype=np.float32))
    args = ["-q", path("q41.npy"), "-k", path("k41.npy"), "-v", path("v41.npy")]
    so = run_case("explain rank-4 H=1", ["explain"] + args)
    rc, _, err = run(["compute"] + args + ["--weights", path("w41.json")])
    got = list(np.array(json.load(open(path("w41.json")))).shape) if rc == 0 else err
    check("explain rank-4 H=1: weights shape is compute's [2, 1, 3, 3]",
          so is not None and shape_of(explain_rows(so).get("weights", "")) == got == [2, 1, 3, 3],
          f"{so and explain_rows(so).get('weights')} vs {got}")


case("explain help", ["explain", "--help"], out=lambda so: b"--query" in so)


main()

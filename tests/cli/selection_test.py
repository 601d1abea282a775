#!/usr/bin/env python3
"""`--select-heads SPEC` and `--query-rows A:B` (fields "select_heads", "query_rows"): what
they return is numpy's slice of the full result, `full[..., heads, :, :][..., A:B, :]`, for
the weights (JSON, .npz, the --weights .npy file in f32 and f16), lse, entropy, argmax,
top_k and head_stats (heads only), on a plain GQA problem and a tiny llama run; A:B resolved
as Python's own slice(A, B).indices(L); the memory guard counts the kept weights only; bad
specs exit 2 with one line.

/usr/bin/python3 tests/cli/selection_test.py PATH/TO/attn [--case NAME] | --list
"""
import json

import numpy as np

from forward_oracle import IDS, build
from harness import check, expect, main, path, run, test, write

RNG = np.random.default_rng(32)
B, H, HKV, L, D = 2, 4, 2, 9, 8
for n, h in (("q", H), ("k", HKV), ("v", HKV)):
    write(f"sel_{n}.npy", RNG.standard_normal((B, h, L, D)).astype(np.float32))
write("sel_big_q.npy", RNG.standard_normal((1, H, 1024, D)).astype(np.float32))
write("sel_x.npy", RNG.standard_normal((L, 12)).astype(np.float32))
PLAIN = ["compute", "-q", path("sel_q.npy"), "-k", path("sel_k.npy"), "-v", path("sel_v.npy"),
         "--causal"]
RETURNS = ["--return", "lse,entropy,argmax,head_stats", "--top-k", "3"]
# Per-row members ([..., H, Lq] or [..., H, Lq, K]) and head statistics ([..., H]).
ROW_MEMBERS = ["lse", "entropy", "argmax", "top_k_values", "top_k_indices"]


def npz(name):
    with np.load(path(name)) as z:
        return {k: z[k] for k in z.files}


def rows_of(spec, n):
    """The query rows A:B keeps, by Python's own slice rule."""
    a, b = (None if x == "" else int(x) for x in spec.split(":"))
    return list(range(*slice(a, b).indices(n)))


def heads_of(spec, n):
    return list(range(n)) if spec is None else sorted(
        h for part in spec.split(",") for h in
        (range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)))


def picked(a, heads, rows, head_axis):
    """numpy's slice: heads on the head axis, then rows on the query axis after it."""
    a = np.take(a, heads, axis=head_axis)
    return a if rows is None else np.take(a, rows, axis=head_axis + 1)


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def compare(full, got, heads, rows, head_axis, what):
    """Every member of `got` against the slice of `full`'s (head_stats: heads only)."""
    for name, want in full.items():
        if name in ("output", "token_ids", "layers"):
            check(f"{what}: {name} unaffected", name not in got or same(got[name], want), name)
            continue
        if name not in got:
            continue
        if name.startswith("head_stats_"):
            want = np.take(want, heads, axis=head_axis)
        else:
            want = picked(want, heads, rows, head_axis)
        check(f"{what}: {name}", same(got[name], want),
              f"{got[name].shape} {got[name].dtype} vs {want.shape} {want.dtype}")


def json_members(out):
    doc = json.loads(out)
    m = {k: np.array(doc[k], np.float32) for k in ("weights", "lse", "entropy", "argmax")
         if k in doc}
    if "top_k" in doc:
        m["top_k_values"] = np.array(doc["top_k"]["weights"], np.float32)
        m["top_k_indices"] = np.array(doc["top_k"]["indices"])
    for name, v in doc.get("head_stats", {}).items():
        m["head_stats_" + name] = np.array([[np.nan if x == "nan" else x for x in r]
                                            for r in v], np.float32)
    return m


SPECS = [("0,3", None), ("1-2", "2:7"), ("3", "-3:"), (None, ":4"), ("2,0", "-100:100"),
         ("1", "8:")]


def flags(heads, rows):
    return ((["--select-heads", heads] if heads is not None else []) +
            ([f"--query-rows={rows}"] if rows is not None else []))


@test("plain GQA problem: JSON, .npz, --weights .npy f32/f16 equal numpy's slice of the full")
def _plain():
    expect(PLAIN + RETURNS + ["-o", path("full.npz")])
    full = npz("full.npz")
    full_json = json_members(expect(PLAIN + RETURNS))
    for spec in SPECS:
        heads, rows = heads_of(spec[0], H), None if spec[1] is None else rows_of(spec[1], L)
        what = f"--select-heads {spec[0]} --query-rows {spec[1]}"
        sel = flags(*spec)
        expect(PLAIN + RETURNS + sel + ["-o", path("sel.npz")])
        compare(full, npz("sel.npz"), heads, rows, 1, what + " .npz")
        got = json_members(expect(PLAIN + RETURNS + sel))
        compare(full_json, got, heads, rows, 1, what + " JSON")
        expect(PLAIN + RETURNS + sel + ["--weights", path("w.npy"), "-o", path("d.npz")])
        want = picked(full["weights"], heads, rows, 1)
        check(what + " --weights f32", same(np.load(path("w.npy")), want), "")
        compare(full, npz("d.npz"), heads, rows, 1, what + " beside --weights")
        expect(PLAIN + sel + ["--weights", path("w16.npy"), "--weights-dtype", "f16",
                              "-o", path("o.npy")])
        check(what + " --weights f16", same(np.load(path("w16.npy")), want.astype(np.float16)),
              "")
    expect(PLAIN + flags("1,3", "1:-1") + ["--weights-dtype", "f16", "-o", path("h.npz")])
    check(".npz f16 weights", same(npz("h.npz")["weights"],
                                   full["weights"][:, [1, 3], 1:-1].astype(np.float16)), "")


@test("--no-weights: lse, argmax and head_stats selected without any weights")
def _streaming():
    args = PLAIN + ["--return", "lse,argmax,head_stats", "--no-weights", "-o"]
    expect(args + [path("full.npz")])
    expect(args + [path("sel.npz")] + flags("3,1", "-2:"))
    got = npz("sel.npz")
    check("no weights", "weights" not in got, str(list(got)))
    compare(npz("full.npz"), got, [1, 3], [7, 8], 1, "--no-weights")


@test("one head: the H axis stays, for a one-head problem too")
def _one_head():
    base = ["compute", "--input", path("sel_x.npy"), "--seed", "1", "--return", "lse"]
    full = npz_of(base + ["-o", path("full.npz")], "full.npz")
    check("one head dropped without a selection", full["weights"].shape == (L, L),
          str(full["weights"].shape))
    got = npz_of(base + flags("0", "3:5") + ["-o", path("sel.npz")], "sel.npz")
    check("[1, 2, L] weights", same(got["weights"], full["weights"][None, 3:5]),
          str(got["weights"].shape))
    check("[1, 2] lse", same(got["lse"], full["lse"][None, 3:5]), str(got["lse"].shape))
    check("output unaffected", same(got["output"], full["output"]), "")


def npz_of(args, name):
    expect(args)
    return npz(name)


@test("query_rows resolves A:B as Python's slice(A, B).indices(L), in JSON and text")
def _python_slices():
    ends = [None, 0, 1, 3, 8, 9, 12, -1, -3, -9, -12]
    docs, want = [], []
    full = np.array(json.loads(expect(PLAIN))["weights"], np.float32)
    base = {"query": path("sel_q.npy"), "key": path("sel_k.npy"), "value": path("sel_v.npy"),
            "causal": True}
    for a in ends:
        for b in ends:
            rows = list(range(*slice(a, b).indices(L)))
            text = ("" if a is None else str(a)) + ":" + ("" if b is None else str(b))
            for form in ([a, b], text):
                docs.append(dict(base, id=len(docs), query_rows=form))
                want.append(rows)
    code, out, err = run(["batch"], stdin="\n".join(json.dumps(d) for d in docs).encode())
    check("batch ran, with error lines (exit 1)", code == 1, err)
    lines = [json.loads(x) for x in out.decode().splitlines()]
    bad = []
    for line, rows in zip(lines, want):
        if not rows:
            if "error" not in line or not line["error"].startswith("--query-rows: "):
                bad.append((docs[line["id"]]["query_rows"], line))
        elif "error" in line or not same(np.array(line["weights"], np.float32),
                                         full[:, :, rows]):
            bad.append((docs[line["id"]]["query_rows"], str(line)[:200]))
    check(f"{len(docs)} slices as Python's", len(lines) == len(docs) and not bad, str(bad[:3]))


@test("a tiny llama run (GQA): every layer's selection equals the slice of the full run")
def _model_run():
    folder, *_ = build("llama")
    base = ["compute", "--params", folder, "--token-ids", path("ids.json")]
    expect(base + RETURNS + ["-o", path("full.npz")])
    full = npz("full.npz")
    # Layer 0 runs without weights (the streaming kernel) under --layers 1: layer 1's input
    # differs from the full run's in the last bits, so its own full run is the reference.
    expect(base + ["--layers", "1", "-o", path("full1.npz")])
    full1 = npz("full1.npz")["weights"]
    n = len(IDS)
    for spec in (("1-2", "2:6"), ("3", "-3:"), ("0,3", None)):
        heads, rows = heads_of(spec[0], H), None if spec[1] is None else rows_of(spec[1], n)
        what = f"model run {spec}"
        expect(base + RETURNS + flags(*spec) + ["-o", path("sel.npz")])
        compare(full, npz("sel.npz"), heads, rows, 1, what)
        expect(base + flags(*spec) + ["--layers", "1", "--weights", path("w.npy"),
                                      "-o", path("o.npy")])
        want = picked(full1, heads, rows, 1)
        check(what + " --layers 1 --weights f32", same(np.load(path("w.npy")), want), "")
        expect(base + flags(*spec) + ["--weights", path("w16.npy"), "--weights-dtype", "f16",
                                      "-o", path("o.npy")])
        want = picked(full["weights"], heads, rows, 1).astype(np.float16)
        check(what + " --weights f16", same(np.load(path("w16.npy")), want), "")


@test("--max-memory counts the kept weights only")
def _memory():
    big = ["compute", "-q", path("sel_big_q.npy"), "-k", path("sel_big_q.npy"), "-v",
           path("sel_big_q.npy"), "--max-memory", "40M", "-o", path("o.npz")]
    expect(big, code=2, err=r"--max-memory: .*weights \[1, 4, 1024, 1024\]")
    # 16 bytes a kept value (the value, the result's copy, its text): 64 MiB for all of
    # them, 16 MiB for one head or a quarter of the rows.
    for sel, shape in ((["--select-heads", "2"], (1, 1, 1024, 1024)),
                       (["--query-rows", "-256:"], (1, 4, 256, 1024))):
        expect(big + sel)
        check("kept weights " + " ".join(sel), npz("o.npz")["weights"].shape == shape, "")


@test("--heatmap draws what is returned")
def _heatmap():
    expect(PLAIN + flags("1,3", "2:6") + ["--heatmap", path("h.svg"), "-o", path("o.npy")])
    with open(path("h.svg"), encoding="utf-8") as f:
        svg = f.read()
    check("panels titled by the heads' own numbers", "head 3" in svg and "head 1" in svg,
          svg[:300])


BAD = [
    (["--select-heads", "4"], r"--select-heads: head 4 does not exist: the problem has 4 heads"),
    (["--select-heads", ""], r"--select-heads: a head number is missing"),
    (["--select-heads", "1,0-2"], r"--select-heads: head 1 is given twice"),
    (["--select-heads", "2-1"], r"--select-heads: the range 2-1 is reversed"),
    (["--select-heads", "a"], r"--select-heads: a head number is missing"),
    (["--query-rows", "5:3"], r"--query-rows: 5:3 keeps no row of 9 query rows"),
    (["--query-rows", "9:"], r"--query-rows: 9: keeps no row"),
    (["--query-rows=-1:-1"], r"--query-rows: -1:-1 keeps no row"),
    (["--query-rows", "1:2:3"], r"--query-rows: expected \[A, B\] or \"A:B\""),
    (["--query-rows", "x:2"], r"--query-rows: expected"),
    (["--query-rows", ""], r"--query-rows: expected"),
]
for extra, err in BAD:
    def _bad(extra=extra, err=err):
        expect(PLAIN + extra, code=2, err=err)
    test("bad spec: " + " ".join(extra))(_bad)


@test("bad fields in a problem document name the field")
def _bad_fields():
    doc = {"query": path("sel_q.npy"), "key": path("sel_k.npy"), "value": path("sel_v.npy")}
    # In a problem file too the CLI names the field by its flag.
    for field, value, err in (("select_heads", [], r"select.heads: expected a non-empty list"),
                              ("select_heads", [0, -1], r"select.heads: expected head numbers"),
                              ("query_rows", [1], r"query.rows: expected \[A, B\]"),
                              ("query_rows", [1.5, 2], r"query.rows: expected \[A, B\]"),
                              ("query_rows", [4, 4], r"query.rows: 4:4 keeps no row")):
        write("p.json", dict(doc, **{field: value}))
        expect(["compute", path("p.json")], code=2, err=err)


@test("a model run refuses a head it does not have")
def _bad_model_head():
    folder, *_ = build("llama")
    expect(["compute", "--params", folder, "--token-ids", path("ids.json"), "--select-heads",
            "2-4"], code=2, err=r"--select-heads: head 4 does not exist: the problem has 4 heads")


if __name__ == "__main__":
    main()

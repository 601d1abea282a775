#!/usr/bin/env python3
"""--return head_stats and --return rollout against a numpy float64 reference written from
the contract's formulas (interface.md, "Per-head statistics"), fed with the weights of
forward_oracle.py's independent numpy forward of tiny models (GQA llama, a padded OPT batch
with repeated tokens); hand-derived values on a planted previous-token head; the shapes,
.npz members, NaN and the bad inputs.

/usr/bin/python3 tests/cli/head_stats_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os

import numpy as np

from forward_oracle import ARCHS, H, IDS, NL, L, Model, build, write_model
from head_stats_oracle import NAMES, ref_head_stats, ref_rollout
from harness import ROOT, check, expect, main, path, run, test, write


def stats_of(doc):
    """The result's head_stats as float arrays ("nan" strings read as NaN)."""
    return {k: np.array(v, dtype=np.float64) for k, v in doc["head_stats"].items()}


def same(a, b, tol=1e-9):
    return a.shape == b.shape and np.allclose(a, b, atol=tol, equal_nan=True)


@test("head_stats of a GQA llama match the float64 reference, per layer and head")
def _llama():
    folder, ws, _, _, _ = build("llama")
    code, out, err = run(["compute", "--params", folder, "--token-ids", path("ids.json"),
                          "--return", "head_stats,rollout", "--precision", "f64",
                          "--no-weights"])
    check("exit 0", code == 0, err)
    if code != 0:
        return
    got = stats_of(json.loads(out))
    check("the seven names, in order", list(json.loads(out)["head_stats"]) == NAMES,
          str(list(json.loads(out)["head_stats"])))
    want = [ref_head_stats(ws[layer], IDS) for layer in range(NL)]
    for k in NAMES:
        w = np.array([x[k] for x in want])
        check(k + " [layers, H]", same(got[k], w), "got %s want %s" % (got[k], w))
    check("no repeated ids: duplicate_token and induction are NaN",
          np.isnan(got["duplicate_token"]).all() and np.isnan(got["induction"]).all(), "")
    r = np.array(json.loads(out)["rollout"], dtype=np.float64)
    check("rollout [L, L] = the dense float64 product", same(r, ref_rollout(ws)),
          "max err %g" % np.abs(r - ref_rollout(ws)).max())


@test("a padded batch with repeated tokens: padding rows and keys skipped, ids read")
def _padded():
    rows = [[3, 17, 5, 3, 17, 5, 9], [8, 8, 4, 8, 4, 1, 1]]
    keeps = [[1] * L, [1, 1, 1, 1, 1, 0, 0]]
    want_ws = [np.array(ARCHS["opt"](Model(7), ids=r, keep=k)[1]) for r, k in zip(rows, keeps)]
    folder = path("model-opt-padded")
    m = Model(7)
    cfg, _, _ = ARCHS["opt"](m)
    write_model(folder, cfg, m.t)
    ids, keep = write("ids2.json", rows), write("keep2.json", keeps)
    for precision, tol in (("f64", 1e-9), ("f32", 2e-5)):
        code, out, err = run(["compute", "--params", folder, "--token-ids", ids,
                              "--key-padding", keep, "--return", "head_stats,rollout",
                              "--precision", precision, "--output", path("hs.npz")])
        check(precision + " exit 0", code == 0, err)
        if code != 0:
            return
        z = np.load(path("hs.npz"))
        check("npz members", all("head_stats_" + k in z.files for k in NAMES) and
              "rollout" in z.files and "weights" in z.files, str(z.files))
        for k in NAMES:
            got = z["head_stats_" + k]
            want = np.stack([np.array([ref_head_stats(want_ws[b][layer], rows[b],
                                                      keeps[b])[k] for b in range(2)])
                             for layer in range(NL)])
            check("%s %s [layers, B, H]" % (precision, k), same(got, want, tol),
                  "got %s want %s" % (got, want))
        # Rollout over every row, padding rows too, from the weights attn returned.
        w = z["weights"].astype(np.float64)
        r = z["rollout"].astype(np.float64)
        want_r = np.stack([ref_rollout(w[:, b]) for b in range(2)])
        check(precision + " rollout [B, L, L]", same(r, want_r, tol),
              "max err %g" % np.abs(r - want_r).max())


@test("rollout fusions max and min, over selected layers in ascending order")
def _fusions():
    folder, ws, _, _, _ = build("gpt2")
    for fusion in ("max", "min"):
        code, out, err = run(["compute", "--params", folder, "--token-ids", path("ids.json"),
                              "--return", "rollout", "--rollout-fusion", fusion,
                              "--layers", "1,0", "--precision", "f64", "--no-weights"])
        check(fusion + " exit 0", code == 0, err)
        if code == 0:
            r = np.array(json.loads(out)["rollout"], dtype=np.float64)
            check(fusion + " rollout", same(r, ref_rollout(ws, fusion)),
                  "max err %g" % np.abs(r - ref_rollout(ws, fusion)).max())


@test("one layer selected: the layers and H axes stay")
def _one_layer():
    folder, ws, _, _, _ = build("llama")
    code, out, err = run(["compute", "--params", folder, "--token-ids", path("ids.json"),
                          "--layers", "1", "--return", "head_stats"])
    check("exit 0", code == 0, err)
    if code == 0:
        got = stats_of(json.loads(out))
        check("[1, H]", got["entropy"].shape == (1, H), str(got["entropy"].shape))
        check("float32 run within 1e-5", same(got["entropy"][0],
                                              ref_head_stats(ws[1])["entropy"], 1e-5), "")


@test("every layer of a checkpoint (hidden states): statistics per layer, rollout ascending")
def _stack():
    common = ["compute", "--hidden-states", os.path.join(ROOT, "samples", "layers",
                                                          "hidden_states.npy"),
              "--params", os.path.join(ROOT, "samples", "layers", "model.safetensors"),
              "--heads", "4", "--causal", "--layers", "3,0", "--precision", "f64"]
    code, _, err = run(common + ["--output", path("stw.npz")])
    code2, out, err2 = run(common + ["--no-weights", "--return", "head_stats,rollout"])
    check("exit 0", code == 0 and code2 == 0, err + err2)
    if code or code2:
        return
    w = np.load(path("stw.npz"))["weights"].astype(np.float64)  # [layers 3, 0; H, L, L]
    got = stats_of(json.loads(out))
    for k in ("entropy", "first_token", "previous_token", "self", "distance"):
        want = np.array([ref_head_stats(w[i])[k] for i in range(2)])
        check(k + " [2, H], in the order selected", same(got[k], want), str(got[k]))
    r = np.array(json.loads(out)["rollout"], dtype=np.float64)
    check("rollout over layers 0 then 3", same(r, ref_rollout(w[::-1])),
          "max err %g" % np.abs(r - ref_rollout(w[::-1])).max())


@test("the same statistics whether the weights are kept, go to --weights FILE or nowhere")
def _destinations():
    folder, *_ = build("llama")
    base = ["compute", "--params", folder, "--token-ids", path("ids.json"), "--return",
            "head_stats,rollout"]
    runs = {"kept": base + ["--output", path("d1.npz")],
            "file": base + ["--weights", path("d2.npy"), "--output", path("d2.npz")],
            "none": base + ["--no-weights", "--output", path("d3.npz")],
            "stats only, file": ["compute", "--params", folder, "--token-ids", path("ids.json"),
                                 "--return", "head_stats", "--weights", path("d4.npy"),
                                 "--output", path("d4.npz")]}
    for name, args in runs.items():
        code, _, err = run(args)
        check(name + ": exit 0", code == 0, err)
        if code != 0:
            return
    kept = np.load(path("d1.npz"))
    for name, npz in (("file", "d2.npz"), ("none", "d3.npz"), ("stats only, file", "d4.npz")):
        z = np.load(path(npz))
        for m in [m for m in kept.files if m.startswith("head_stats") or m == "rollout"]:
            if m in z.files or m != "rollout":
                check("%s: %s as kept" % (name, m), m in z.files and
                      np.array_equal(kept[m], z[m], equal_nan=True), m)
    for npy in ("d2.npy", "d4.npy"):
        check(npy + ": the weights file = the kept weights",
              np.array_equal(np.load(path(npy)), kept["weights"]), "")


@test("a planted previous-token head scores previous_token 1 (hand-derived values)")
def _planted():
    n, d = 5, 2
    q = np.zeros((1, 1, n, d))
    keep = np.zeros((n, n), dtype=bool)  # query i sees key i - 1 only (query 0: key 0)
    for i in range(n):
        keep[i, max(i - 1, 0)] = True
    code, out, err = run(["compute", "-q", write("pq.npy", q), "-k", write("pk.npy", q),
                          "-v", write("pv.npy", q), "--mask", write("pm.npy", keep),
                          "--return", "head_stats"])
    check("exit 0", code == 0, err)
    if code != 0:
        return
    got = {k: np.array(v, dtype=np.float64) for k, v in json.loads(out)["head_stats"].items()}
    # Rows: 0 sees itself; i >= 1 sees i - 1 with weight 1.
    want = {"entropy": 0.0, "first_token": 2 / n, "previous_token": 1.0, "self": 1 / n,
            "distance": (n - 1) / n, "duplicate_token": np.nan, "induction": np.nan}
    for k, v in want.items():
        check(k + " [B, H] = [[%g]]" % v, same(got[k], np.array([[v]]), 1e-6), str(got[k]))


@test("bad rollout and head_stats input: one line, exit 2")
def _bad():
    q = write("q34.npy", np.ones((3, 4)))
    k = write("k54.npy", np.ones((5, 4)))
    expect(["compute", "-q", q, "-k", k, "-v", k, "--return", "rollout"], code=2,
           err=r"rollout\" needs as many queries as keys, got 3 queries and 5 keys")
    expect(["compute", "-q", q, "-k", q, "-v", q, "--return", "rollout",
            "--rollout-fusion", "median"], code=2,
           err=r"--rollout-fusion: expected mean, max or min, got 'median'")
    expect(["compute", "-q", q, "-k", q, "-v", q, "--return", "head_stats", "--output",
            path("o.npy")], code=2, err=r"--return asked for head_stats too")
    expect(["compute", "-q", q, "-k", q, "-v", q, "--return", "rollouts"], code=2,
           err=r"return: expected .*\"rollout\", got \"rollouts\"")


main()

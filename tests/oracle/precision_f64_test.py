#!/usr/bin/env python3
"""Oracle of the float64 precision: `"precision": "f64"` / `--precision f64`. Random problems through the
binary, compared with a NumPy float64 reference written from the contract and the README's
feature definitions at a float64 tolerance (1e-12 relative): projections (params as JSON
decimals and .npy f8 files, init weights drawn in double), masks, bias, both causal
alignments, window, softcap, ALiBi, sinks, GQA, the three mask conventions and the
diagnostics, in both kernels (weights and --no-weights), through the result document,
--dtype f64 files and batch lines. Any rounding through float32 (inputs, weights,
arithmetic) is ~1e-7 relative and fails here.
Usage: precision_f64_test.py PATH/TO/attn  (from the repo root)."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402  (float64 projections, init generator, state-dict names)
from reference import attention, num, Tally  # noqa: E402  (the features oracle)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from leak_rule import leak_env  # noqa: E402  (which runs check for leaks)

ATTN = sys.argv[1]
TOL = 1e-12
tally = Tally()
check = tally.check


def close(got, want, tol=TOL):
    got = np.asarray(num(got), float)
    want = np.asarray(want, float)
    if got.shape != want.shape:
        return False, f"shape {got.shape} vs {want.shape}"
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
    same = (got == want) | (np.isnan(got) & np.isnan(want))  # equal infinities too
    err = np.where(same, 0.0, err)
    worst = float(np.nanmax(err)) if err.size else 0.0
    return bool(worst <= tol), f"worst relative error {worst:.3g}"


def run(args, stdin=None):
    p = subprocess.run([ATTN, *args], input=stdin, capture_output=True, text=True,
                       env=leak_env(args, None, stdin))
    return p.returncode, p.stdout, p.stderr


def kernel_runs(name, doc):
    """Computes doc with weights and with --no-weights: yields (flags, tag, result document)
    for each run that succeeds; a run that fails is a failed check."""
    for flags in ([], ["--no-weights"]):
        tag = f"{name} {' '.join(flags)}".strip()
        rc, out, err = run(["compute", "-", *flags], json.dumps(doc))
        if rc != 0:
            check(tag, False, err)
            continue
        yield flags, tag, json.loads(out)


def squeeze_bh(x, h, rank4):
    """[B=1, H, ...] -> the contract's shape: B kept (batched); H kept for rank-4 inputs
    whatever it is (as the weights keep it), dropped when 1 for lower ranks."""
    return x if h > 1 or rank4 else x[:, 0]


def direct_case(name, seed, B, H, Hkv, Lq, Lk, f, rank4=True, tmp=None, npy=False):
    rng = np.random.default_rng(seed)
    D, Dv = 6, 5
    Q = rng.standard_normal((B, H, Lq, D))
    K = rng.standard_normal((B, Hkv, Lk, D))
    V = rng.standard_normal((B, Hkv, Lk, Dv))
    doc = {"precision": "f64", "return": ["lse", "entropy", "argmax"]}
    ref = {}
    for key in ("scale", "causal", "window", "window_align", "softcap", "alibi", "sinks"):
        if key in f:
            doc[key] = f[key]
            ref[key] = f[key]
    if "mask" in f:  # keep-mask [B, H, Lq, Lk] with random holes
        m = (rng.random((B, H, Lq, Lk)) > f["mask"]).astype(float)
        doc["mask"] = m.tolist()
        ref["mask"] = m
    if "bias" in f:
        bias = rng.standard_normal((1, H, Lq, Lk)) * f["bias"]
        doc["bias"] = bias.tolist()
        ref["bias"] = bias
    if "kpm" in f:
        kp = (rng.random((B, Lk)) > f["kpm"]).astype(float)
        doc["key_padding_mask"] = kp.tolist()
        ref["kpm"] = kp
    if "convention" in f:
        # mask_convention: the same keep/additive semantics expressed three ways.
        conv = f["convention"]
        keep = rng.random((Lq, Lk)) > 0.3
        doc["mask_convention"] = conv
        if conv == "torch-mha":
            doc["mask"] = (~keep).tolist()
            ref["mask"] = keep[None, None].astype(float)
        else:  # additive: arbitrary finite values and -inf
            add = np.where(keep, rng.standard_normal((Lq, Lk)), -np.inf)
            doc["mask"] = [[("-inf" if np.isneginf(x) else x) for x in r] for r in add.tolist()]
            ref["mask"] = keep[None, None].astype(float)
            ref["bias"] = np.where(keep, add, 0.0)[None, None] + (
                ref["bias"] if "bias" in ref else 0.0)
    if npy:
        for key, arr in (("query", Q), ("key", K), ("value", V)):
            path = os.path.join(tmp, f"{name.replace(' ', '_')}_{key}.npy")
            np.save(path, arr)  # float64 ('<f8')
            doc[key] = path
    else:
        doc.update(query=Q.tolist(), key=K.tolist(), value=V.tolist())
    want_out, want_w, lse, ent, arg = attention(Q, K, V, ref)
    outs = {}
    for flags, tag, r in kernel_runs(name, doc):
        outs[tuple(flags)] = r
        ok, why = close(r["output"], want_out)  # rank-4 output keeps [B, H, Lq, Dv]
        check(tag + " output", ok, why)
        if not flags:
            # Rank-4 inputs keep rank-4 weights and diagnostics whatever H is.
            ok, why = close(r["weights"], want_w)
            check(tag + " weights", ok, why)
        ok, why = close(r["lse"], squeeze_bh(lse, H, rank4))
        check(tag + " lse", ok, why)
        ok, why = close(r["entropy"], squeeze_bh(ent, H, rank4), 1e-11)
        check(tag + " entropy", ok, why)
        ok, why = close(r["argmax"], squeeze_bh(arg, H, rank4))
        check(tag + " argmax", ok, why)
    if len(outs) == 2:
        check(name + " kernels agree exactly",
              outs[()]["output"] == outs[("--no-weights",)]["output"])


def layer_case(name, seed, doc_extra, tmp):
    """Rank-2/3 sources with projections: params (JSON decimals / f8 .npy) or init."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 5, 8))
    doc = {"input": x.tolist(), "precision": "f64", "num_heads": 2}
    doc.update(doc_extra)
    if doc_extra.get("params") == "npy":
        params = {}
        for key, shape in (("w_q", (8, 8)), ("w_k", (4, 8)), ("w_v", (4, 8)), ("w_o", (8, 8)),
                           ("b_q", (8,)), ("b_o", (8,))):
            path = os.path.join(tmp, f"{name.replace(' ', '_')}_{key}.npy")
            np.save(path, rng.standard_normal(shape) / 3)
            params[key] = path
        doc["params"] = params
        doc["num_kv_heads"] = 1
    elif doc_extra.get("params") == "mha":
        doc["params"] = {"in_proj_weight": (rng.standard_normal((24, 8)) / 3).tolist(),
                         "in_proj_bias": (rng.standard_normal(24) / 10).tolist(),
                         "out_proj.weight": (rng.standard_normal((8, 8)) / 3).tolist(),
                         "out_proj.bias": (rng.standard_normal(8) / 10).tolist()}
    want = reference.compute(reference.load_problem(json.loads(json.dumps(doc)), tmp))
    for flags, tag, r in kernel_runs(name, doc):
        ok, why = close(r["output"], want[0])
        check(tag + " output", ok, why)
        if not flags:
            ok, why = close(r["weights"], want[1])
            check(tag + " weights", ok, why)
    return doc, want


with tempfile.TemporaryDirectory() as tmp:
    n = 0
    for (B, H, Hkv, Lq, Lk) in ((1, 1, 1, 5, 5), (2, 4, 2, 7, 9), (1, 2, 1, 70, 130)):
        for f in ({},
                  {"scale": 0.3},
                  {"causal": True},
                  {"causal": "bottom-right"},
                  {"window": [2, 1]},
                  {"window": [3, 0], "window_align": "bottom-right"},
                  {"softcap": 0.7},
                  {"alibi": True, "causal": True},
                  {"alibi": [0.1 * (h + 1) for h in range(H)]},
                  {"sinks": [0.3 * h - 0.2 for h in range(H)]},
                  {"mask": 0.3, "bias": 0.5, "kpm": 0.2},
                  {"convention": "additive"},
                  {"convention": "torch-mha"},
                  {"softcap": 2.0, "alibi": True, "sinks": [0.5] * H, "window": [4, 1],
                   "causal": "bottom-right", "bias": 1.0}):
            name = f"{B}x{H}/{Hkv}x{Lq}x{Lk} {json.dumps(f, separators=(',', ':'))}"
            direct_case(name, n, B, H, Hkv, Lq, Lk, f, tmp=tmp)
            n += 1
    # Fully masked rows in f64: zeros, lse -inf, argmax -1.
    direct_case("window fully masked rows", 99, 1, 2, 2, 9, 4,
                {"window": [1, 0], "window_align": "bottom-right", "sinks": [1.0, -1.0]}, tmp=tmp)
    # NPY f8 files arrive in double.
    direct_case("npy f8 inputs", 100, 2, 2, 1, 6, 8, {"causal": True}, tmp=tmp, npy=True)

    layer_case("init multihead with biases", 200,
               {"variant": "multihead",
                "init": {"seed": 7, "output_projection": True, "bias": True}}, tmp)
    layer_case("params npy f8 GQA", 201, {"params": "npy"}, tmp)
    doc, want = layer_case("params MHA state dict decimals", 202,
                           {"params": "mha", "causal": True}, tmp)

    # --dtype f64 files hold exactly the doubles the result document prints.
    o, w = os.path.join(tmp, "o.npy"), os.path.join(tmp, "w.npy")
    rc, out, err = run(["compute", "-"], json.dumps(doc))
    r = json.loads(out) if rc == 0 else {}
    rc2, _, err2 = run(["compute", "-", "--dtype", "f64", "-o", o, "--weights", w],
                       json.dumps(doc))
    check("dtype f64 files", rc == 0 and rc2 == 0, err + err2)
    if rc == 0 and rc2 == 0:
        check("dtype f64 output exact", np.load(o).dtype == np.float64 and
              np.array_equal(np.load(o), np.asarray(r["output"])))
        check("dtype f64 weights exact", np.array_equal(np.load(w), np.asarray(r["weights"])))
    # --dtype f32 (the default) rounds the f64 results to float32 once.
    rc3, _, err3 = run(["compute", "-", "-o", o], json.dumps(doc))
    check("dtype f32 of f64 result", rc3 == 0 and np.load(o).dtype == np.float32 and
          np.array_equal(np.load(o), np.asarray(r["output"]).astype(np.float32)), err3)
    # --precision on the command line overrides the problem's field.
    doc32 = dict(doc)
    doc32["precision"] = "f32"
    rc4, out4, err4 = run(["compute", "-", "--precision", "f64"], json.dumps(doc32))
    check("--precision overrides the field", rc4 == 0 and json.loads(out4) == r, err4)
    # The tolerance can fail: float32 computation misses it by far.
    rc5, out5, err5 = run(["compute", "-"], json.dumps(doc32))
    ok, why = close(json.loads(out5)["output"], want[0]) if rc5 == 0 else (True, err5)
    check("f32 is not within the f64 tolerance", not ok, why)
    # Batch lines take the field too.
    lines = json.dumps(dict(doc, id=1)) + "\n" + json.dumps(dict(doc32, id=2)) + "\n"
    rc6, out6, err6 = run(["batch", "-"], lines)
    got = [json.loads(x) for x in out6.splitlines()] if rc6 == 0 else []
    check("batch f64 line", len(got) == 2 and close(got[0]["output"], want[0])[0], err6)
    check("batch f32 line", len(got) == 2 and not close(got[1]["output"], want[0])[0])
    # Bad values are refused with one line.
    rc7, _, err7 = run(["compute", "-"], json.dumps(dict(doc, precision="f16")))
    check("precision f16 refused", rc7 == 2 and err7.startswith("attn: error: precision:")
          and err7.count("\n") == 1, err7)

sys.exit(tally.done())

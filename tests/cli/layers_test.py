#!/usr/bin/env python3
"""Every layer in one call (--hidden-states, --layers, the leading layer axis, the model
view) and --varlen, against numpy float64 oracles: per layer, attention from hidden state
l with that layer's checkpoint weights computed here in numpy (tests/oracle/reference.py's
attention for the heads); varlen equals each sequence run alone with K/V cut to its real
keys. One case per check.

/usr/bin/python3 tests/cli/layers_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import sys

import numpy as np

from harness import ROOT, check, expect, main, path, run, test, write

sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import reference as ref  # noqa: E402

RNG = np.random.default_rng(15)
TOL = dict(rtol=2e-5, atol=2e-6)


def f32(a):
    """The float32 rounding the files hold, back in float64 for the oracle."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def write_safetensors(name, tensors):
    """tensors: {name: array}, written F32 in name order."""
    ref.write_safetensors(path(name), [(k, "F32", tensors[k]) for k in sorted(tensors)])
    return path(name)


def model(name, n_layers, E, H, Hkv=None, Dh=None, prefix="layers.{}.attn.", skip=()):
    """A checkpoint of n_layers attention layers in attn's layout (w_q, .., b_o [out, in]),
    float32-rounded weights by layer for the oracle."""
    Hkv = Hkv or H
    Dh = Dh or E // H
    tensors, layers = {}, []
    for l in range(n_layers):
        w = {"w_q": RNG.standard_normal((H * Dh, E)) / np.sqrt(E),
             "w_k": RNG.standard_normal((Hkv * Dh, E)) / np.sqrt(E),
             "w_v": RNG.standard_normal((Hkv * Dh, E)) / np.sqrt(E),
             "w_o": RNG.standard_normal((E, H * Dh)) / np.sqrt(H * Dh),
             "b_q": RNG.standard_normal(H * Dh) * 0.1, "b_k": RNG.standard_normal(Hkv * Dh) * 0.1,
             "b_v": RNG.standard_normal(Hkv * Dh) * 0.1, "b_o": RNG.standard_normal(E) * 0.1}
        layers.append({k: f32(v) for k, v in w.items()})
        if l in skip:
            continue
        for k, v in w.items():
            tensors[prefix.format(l) + k] = v
    write_safetensors(name, tensors)
    return layers


def oracle_layer(x, w, H, Hkv, causal=None):
    """One layer in numpy float64: projections, heads, reference.attention, merge, w_o.
    x [B, L, E] -> output [B, L, E], weights [B, H, L, L]."""
    def heads(y, n):
        B, L, F = y.shape
        return y.reshape(B, L, n, F // n).transpose(0, 2, 1, 3)
    q = heads(x @ w["w_q"].T + w["b_q"], H)
    k = heads(x @ w["w_k"].T + w["b_k"], Hkv)
    v = heads(x @ w["w_v"].T + w["b_v"], Hkv)
    f = {"causal": causal} if causal else {}
    out, wts, lse, ent, arg = ref.attention(q, k, v, f)
    B, _, L, Dv = out.shape
    merged = out.transpose(0, 2, 1, 3).reshape(B, L, H * Dv)
    return merged @ w["w_o"].T + w["b_o"], wts, lse, ent


def hidden(n_layers, B, L, E, batched=True):
    hs = RNG.standard_normal((n_layers + 1, B, L, E) if batched else (n_layers + 1, L, E))
    return hs.astype(np.float32)


def compute(args, code=0, err=None):
    rc, out, se = run(["compute", *args])
    check(f"exit {code}", rc == code, f"exit {rc}; {se.strip()[:300]}")
    if err is not None:
        check("stderr", err in se, se.strip()[:300])
    return json.loads(out) if rc == 0 and out.strip() else None


def close(name, got, want):
    got = np.asarray(got, dtype=np.float64)
    ok = got.shape == want.shape and np.allclose(got, want, **TOL)
    err = float(np.max(np.abs(got - want))) if got.shape == want.shape else None
    check(name, ok, f"shape {got.shape} vs {want.shape}; max abs err {err}")


# ------------------------------------------------------------------ every layer, one call

N, B, L, E, H = 3, 2, 5, 8, 2


@test("every layer equals numpy per layer (output and weights)")
def _():
    layers = model("m3.safetensors", N, E, H)
    hs = hidden(N, B, L, E)
    write("hs.npy", hs)
    doc = compute(["--hidden-states", "hs.npy", "--params", "m3.safetensors", "--heads", "2",
                   "--causal"])
    if doc is None:
        return
    check("layers field", doc.get("layers") == [0, 1, 2], str(doc.get("layers")))
    want = [oracle_layer(f32(hs[l]), layers[l], H, H, "top-left") for l in range(N)]
    close("output [layers, B, L, E]", doc["output"], np.stack([w[0] for w in want]))
    close("weights [layers, B, H, L, L]", doc["weights"], np.stack([w[1] for w in want]))


@test("--layers picks and orders layers; [layers+1, L, E] drops B")
def _():
    layers = model("m4.safetensors", 4, E, H, prefix="transformer.h.{}.attn.")
    hs = hidden(4, 1, L, E, batched=False)
    write("hs3.npy", hs)
    doc = compute(["--hidden-states", "hs3.npy", "--params", "m4.safetensors", "--heads", "2",
                   "--layers", "3,0-1"])
    if doc is None:
        return
    check("layers field", doc.get("layers") == [3, 0, 1], str(doc.get("layers")))
    want = [oracle_layer(f32(hs[l])[None], layers[l], H, H) for l in (3, 0, 1)]
    close("output [3, L, E]", doc["output"], np.stack([w[0][0] for w in want]))
    close("weights [3, H, L, L]", doc["weights"], np.stack([w[1][0] for w in want]))


@test("GQA, no weights: lse, entropy, top_k per layer")
def _():
    layers = model("gqa.safetensors", 2, E, 4, Hkv=2)
    hs = hidden(2, B, L, E)
    write("hsg.npy", hs)
    doc = compute(["--hidden-states", "hsg.npy", "--params", "gqa.safetensors", "--heads", "4",
                   "--no-weights", "--return", "lse,entropy", "--top-k", "2"])
    if doc is None:
        return
    check("no weights", "weights" not in doc, str(list(doc)))
    want = [oracle_layer(f32(hs[l]), layers[l], 4, 2) for l in range(2)]
    close("output", doc["output"], np.stack([w[0] for w in want]))
    close("lse [layers, B, H, L]", doc["lse"], np.stack([w[2] for w in want]))
    close("entropy", doc["entropy"], np.stack([w[3] for w in want]))
    top = np.sort(np.stack([w[1] for w in want]), axis=-1)[..., ::-1][..., :2]
    close("top_k weights [layers, B, H, L, K]", doc["top_k"]["weights"], top)


@test(".npz hidden states in, .npy outputs with the layer axis")
def _():
    layers = model("mz.safetensors", 2, E, H)
    hs = hidden(2, B, L, E)
    np.savez(path("states.npz"), hidden_states=hs)
    rc, _, se = run(["compute", "--hidden-states", "states.npz", "--params", "mz.safetensors",
                     "--heads", "2", "--output", "o.npy", "--weights", "w.npy"])
    check("exit 0", rc == 0, se)
    if rc != 0:
        return
    want = [oracle_layer(f32(hs[l]), layers[l], H, H) for l in range(2)]
    close("o.npy", np.load(path("o.npy")), np.stack([w[0] for w in want]))
    close("w.npy", np.load(path("w.npy")), np.stack([w[1] for w in want]))


@test("problem fields equal the flags")
def _():
    model("mf.safetensors", 3, E, H)
    write("hsf.npy", hidden(3, B, L, E))
    by_flags = compute(["--hidden-states", "hsf.npy", "--params", "mf.safetensors", "--heads",
                        "2", "--layers", "0,2"])
    write("pf.json", {"hidden_states": "hsf.npy", "params": "mf.safetensors", "num_heads": 2,
                      "layers": [0, 2]})
    by_field = compute(["pf.json"])
    check("same document", by_flags is not None and by_flags == by_field,
          f"{str(by_flags)[:200]} vs {str(by_field)[:200]}")


@test("--hidden-states - reads stdin: the same document as the file")
def _():
    model("ms.safetensors", 2, E, H)
    hs = hidden(2, B, L, E)
    write("hss.npy", hs)
    args = ["--params", "ms.safetensors", "--heads", "2"]
    by_file = compute(["--hidden-states", "hss.npy", *args])
    rc, out, se = run(["compute", "--hidden-states", "-", *args],
                      stdin=open(path("hss.npy"), "rb").read())
    check("exit 0", rc == 0, se.strip()[:300])
    check("same document", rc == 0 and json.loads(out) == by_file, out[:200])


@test("explain shows the layers and one layer's plan")
def _():
    model("me.safetensors", 3, E, H)
    write("hse.npy", hidden(3, B, L, E))
    out = expect(["explain", "--hidden-states", "hse.npy", "--params", "me.safetensors",
                  "--heads", "2", "--layers", "1-2"])
    text = out.decode()
    check("layers line", "layers       2 of 3 (attn): 1, 2" in text, text[:300])
    check("plan follows", "heads        2 heads" in text, text[:600])


def bad(name, args, err, setup=None):
    @test(name)
    def _():
        model("mb.safetensors", 3, E, H)
        write("hsb.npy", hidden(3, B, L, E))
        if setup:
            setup()
        expect(["compute", *args], code=2, err=err)


bad("hidden states of the wrong layer count",
    ["--hidden-states", "hsw.npy", "--params", "mb.safetensors", "--heads", "2"],
    r"hidden_states: expected shape \[4, \*, \*, \*\], got \[3, 2, 5, 8\] .*3 layers",
    lambda: write("hsw.npy", hidden(2, B, L, E)))
bad("a layer past the last",
    ["--hidden-states", "hsb.npy", "--params", "mb.safetensors", "--layers", "0,3"],
    r"layers: layer 3 does not exist: the checkpoint has 3 layers \(0 to 2\)")
bad("a reversed range", ["--hidden-states", "hsb.npy", "--params", "mb.safetensors",
                         "--layers", "2-1"], r"--layers|layers: the range 2-1 is reversed")
bad("a layer given twice", ["--hidden-states", "hsb.npy", "--params", "mb.safetensors",
                            "--layers", "1,0-2"], r"layer 1 is given twice")
bad("no checkpoint", ["--hidden-states", "hsb.npy"], r"hidden_states: needs \"params\"")
bad("input and hidden states", ["--hidden-states", "hsb.npy", "--params", "mb.safetensors",
                                "-x", "hsb.npy"], r"hidden_states: gives every layer's input")
bad("layers without hidden states", ["-x", "x.npy", "--layers", "1"],
    r"layers: selects layers of hidden_states", lambda: write("x.npy", hidden(0, 1, L, E)[0]))


@test("a checkpoint with a missing layer is refused")
def _():
    model("gap.safetensors", 3, E, H, skip=(1,))
    write("hsgap.npy", hidden(2, B, L, E))
    expect(["compute", "--hidden-states", "hsgap.npy", "--params", "gap.safetensors"], code=2,
           err=r"layer 1 is missing \(no attention weights at prefix 'layers\.1\.attn\.'")


# ----------------------------------------------------------------------------- model view

@test("model view: layers x heads grid, labelled, from compute and from heatmap")
def _():
    model("mv.safetensors", 3, E, H)
    write("hsv.npy", hidden(3, 1, L, E))
    rc, out, se = run(["compute", "--hidden-states", "hsv.npy", "--params", "mv.safetensors",
                       "--heads", "2", "--causal", "--heatmap", "mv.svg"])
    check("compute exit 0", rc == 0, se)
    svg = open(path("mv.svg")).read() if rc == 0 else ""
    for l in range(3):
        for h in range(2):
            check(f"panel layer {l} head {h}", f"layer {l} \u00b7 batch" not in svg and
                  f">layer {l} \u00b7 head {h}<" in svg, svg[:200])
    # Rows are layers: panel x positions repeat every 2 (heads), y grows with the layer.
    rc, out, _ = run(["compute", "--hidden-states", "hsv.npy", "--params", "mv.safetensors",
                      "--heads", "2", "--causal"])
    write("mv.json", out.decode())
    rc, _, se = run(["heatmap", "mv.json", "-o", "mv2.svg"])
    check("heatmap of the result document", rc == 0, se)
    svg2 = open(path("mv2.svg")).read() if rc == 0 else ""
    check("same panels from the document", all(f">layer {l} \u00b7 head {h}<" in svg2
                                                for l in range(3) for h in range(2)), svg2[:200])
    np.save(path("w5.npy"), np.asarray(json.loads(out)["weights"], np.float32))
    rc, _, se = run(["heatmap", "w5.npy", "-o", "mv3.png"])
    check("rank-5 .npy weights draw", rc == 0, se)
    rc, _, se = run(["heatmap", "w5.npy", "-o", "mv3.html"])
    html = open(path("mv3.html")).read() if rc == 0 else ""
    check("HTML view: a grid of 2 columns", rc == 0 and '"gridCols":2' in html, se)


@test("model view grid: one column per head, one row per layer")
def _():
    np.save(path("w6.npy"), RNG.random((3, 1, 2, 4, 4)).astype(np.float32))
    rc, _, se = run(["heatmap", "w6.npy", "-o", "w6.svg"])
    check("exit 0", rc == 0, se)
    if rc != 0:
        return
    import re
    svg = open(path("w6.svg")).read()
    pos = {}
    for m in re.finditer(r'<text x="([\d.]+)" y="([\d.]+)"[^>]*>layer (\d) \u00b7 head (\d)<', svg):
        pos[(int(m.group(3)), int(m.group(4)))] = (float(m.group(1)), float(m.group(2)))
    check("six panel titles", len(pos) == 6, str(pos))
    if len(pos) == 6:
        check("columns are heads", all(pos[(l, 0)][0] == pos[(0, 0)][0] and
                                       pos[(l, 1)][0] == pos[(0, 1)][0] for l in range(3)), str(pos))
        check("rows are layers", pos[(0, 0)][1] < pos[(1, 0)][1] < pos[(2, 0)][1] and
              all(pos[(l, 0)][1] == pos[(l, 1)][1] for l in range(3)), str(pos))


# --------------------------------------------------------------------------------- varlen

def varlen_case(name, feats, flags, Lq=3, Lk=7, lens=(7, 4, 2), Hh=2, D=4):
    @test(name)
    def _():
        Bv = len(lens)
        q = RNG.standard_normal((Bv, Hh, Lq, D)).astype(np.float32)
        k = RNG.standard_normal((Bv, Hh, Lk, D)).astype(np.float32)
        v = RNG.standard_normal((Bv, Hh, Lk, D)).astype(np.float32)
        kpm = np.array([[j < n for j in range(Lk)] for n in lens])
        for a, n in ((q, "vq.npy"), (k, "vk.npy"), (v, "vv.npy"), (kpm, "vpad.npy")):
            np.save(path(n), a)
        base = ["compute", "-q", "vq.npy", "-k", "vk.npy", "-v", "vv.npy", "--key-padding",
                "vpad.npy", "--varlen", *flags]
        want_o = np.zeros((Bv, Hh, Lq, D))
        want_w = np.zeros((Bv, Hh, Lq, Lk))
        for b, n in enumerate(lens):
            # The sequence alone, K/V cut to its real keys.
            o, w, *_ = ref.attention(f32(q[b:b + 1]), f32(k[b:b + 1, :, :n]),
                                     f32(v[b:b + 1, :, :n]), feats)
            want_o[b], want_w[b, :, :, :n] = o[0], w[0]
        for extra, what in (([], "weights kernel"), (["--no-weights"], "streaming kernel"),
                            (["--precision", "f64"], "f64")):
            rc, out, se = run(base + extra)
            check(f"{what}: exit 0", rc == 0, se)
            if rc != 0:
                continue
            doc = json.loads(out)
            close(f"{what}: output", doc["output"], want_o)
            if "weights" in doc:  # H = 1 drops the head dim
                got = np.asarray(doc["weights"])
                close(f"{what}: weights", got, want_w.reshape(got.shape)
                      if got.size == want_w.size else want_w)


varlen_case("varlen: causal bottom-right at each sequence's real keys",
            {"causal": "bottom-right"}, ["--causal=bottom-right"])
varlen_case("varlen: bottom-right window", {"window": [1, 0], "window_align": "bottom-right"},
            ["--window", "1,0", "--window-align", "bottom-right"])
varlen_case("varlen: ALiBi distances from each sequence's diagonal",
            {"alibi": [0.5, 0.25], "window_align": "bottom-right"},
            ["--alibi=0.5,0.25", "--window-align", "bottom-right"])
varlen_case("varlen: causal + ALiBi, a long block (streaming edges)",
            {"causal": "bottom-right", "alibi": [0.3]}, ["--causal=bottom-right", "--alibi=0.3"],
            Lq=70, Lk=300, lens=(300, 200, 131), Hh=1, D=8)


@test("varlen changes the padded result (it is not a no-op)")
def _():
    np.save(path("nq.npy"), RNG.standard_normal((1, 1, 2, 4)).astype(np.float32))
    np.save(path("nk.npy"), RNG.standard_normal((1, 1, 6, 4)).astype(np.float32))
    np.save(path("npad.npy"), np.array([[1, 1, 1, 0, 0, 0]], bool))
    args = ["compute", "-q", "nq.npy", "-k", "nk.npy", "-v", "nk.npy", "--key-padding",
            "npad.npy", "--causal=bottom-right"]
    a = json.loads(run(args)[1])["weights"]
    b = json.loads(run(args + ["--varlen"])[1])["weights"]
    a, b = np.asarray(a).reshape(-1, 6), np.asarray(b).reshape(-1, 6)
    check("padded: query 0 sees all 3 real keys", np.count_nonzero(a[0]) == 3, str(a))
    check("varlen: query 0 sees keys 0..1 (3 - 2 + 0)", np.count_nonzero(b[0]) == 2, str(b))


@test("varlen: explain and the heatmap hatch what compute blocks")
def _():
    np.save(path("hq.npy"), RNG.standard_normal((2, 1, 2, 4)).astype(np.float32))
    np.save(path("hk.npy"), RNG.standard_normal((2, 1, 5, 4)).astype(np.float32))
    np.save(path("hpad.npy"), np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool))
    args = ["-q", "hq.npy", "-k", "hk.npy", "-v", "hk.npy", "--key-padding", "hpad.npy",
            "--causal=bottom-right", "--varlen"]
    text = expect(["explain", *args]).decode()
    check("explain names varlen and the real keys", "varlen (" in text and "5, 3)" in text,
          text[:800])
    rc, out, se = run(["compute", *args, "--heatmap", "hv.html"])
    check("exit 0", rc == 0, se)
    html = open(path("hv.html")).read() if rc == 0 else ""
    check("HTML carries hatching", '"hasState":true' in html, html[:100])


bad_v = [("varlen without key padding", ["-q", "q.npy", "-k", "q.npy", "-v", "q.npy",
                                         "--varlen"], r"varlen: needs key_padding_mask"),
         ("varlen with left padding", ["-q", "q.npy", "-k", "q.npy", "-v", "q.npy",
                                       "--key-padding", "lp.npy", "--varlen"],
          r"varlen: key_padding_mask row 0 is not right-padded \(padding at key 0, a real key at 2\)")]
for name, args, err in bad_v:
    def make(args=args, err=err, name=name):
        @test(name)
        def _():
            np.save(path("q.npy"), RNG.standard_normal((1, 3, 4)).astype(np.float32))
            np.save(path("lp.npy"), np.array([[0, 1, 1]], bool))
            expect(["compute", *args], code=2, err=err)
    make()


main()

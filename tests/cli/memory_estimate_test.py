#!/usr/bin/env python3
"""The memory estimate (`attn explain`'s memory rows, the figure --max-memory checks)
against the peak RSS a run measures (wait4's ru_maxrss of the child), within 25% once the
bare process's own peak (a tiny problem's) is taken off: no weights, and weights written to
a --weights .npy file as the kernel makes them (#39: those cost each thread's block of
rows, not Lq x Lk). And the limit follows it: a long causal problem whose
weights go to a file is neither refused nor said to need gigabytes.

Run: /usr/bin/python3 tests/cli/memory_estimate_test.py PATH/TO/attn [--case NAME]
"""
import json
import os
import re

import numpy as np

import harness
from harness import TMP, check, expect, main, path, test

UNITS = {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40}


def peak(args):
    """attn's peak resident bytes for args (run in TMP)."""
    code, rss, err = harness.peak_rss(args)
    check(f"{args}: exit 0", code == 0, err[:300])
    return rss


def estimates(args):
    """explain's figures: {"weights": kept, "none": --no-weights, "file": --weights FILE}."""
    text = expect(["explain"] + args, name=f"explain {args}").decode()
    size = r"~([\d.]+) (B|KiB|MiB|GiB|TiB)"
    out = {}
    for key, pattern in (("weights", size + " with weights"), ("none", size + " with --no-weights"),
                         ("file", size + " with --weights FILE\\.npy")):
        m = re.search(pattern, text)
        if check(f"explain {args}: {key} figure", m is not None, text[-600:]):
            out[key] = float(m.group(1)) * UNITS[m.group(2)]
    return out


def inputs(b, h, lq, lk, d=64):
    rng = np.random.default_rng(lq * lk)
    for name, length in (("q", lq), ("k", lk), ("v", lk)):
        np.save(path(f"{name}.npy"), rng.standard_normal((b, h, length, d)).astype(np.float32))
    return ["-q", "q.npy", "-k", "k.npy", "-v", "v.npy"]


def bare():
    np.save(path("t.npy"), np.zeros((1, 1, 4, 8), np.float32))
    return peak(["compute", "-q", "t.npy", "-k", "t.npy", "-v", "t.npy", "-o", "t.json"])


def close(name, est, measured):
    print(f"{name}: estimate {est / 2**20:.1f} MiB, measured {measured / 2**20:.1f} MiB")
    check(f"{name}: estimate {est / 2**20:.1f} MiB within 25% of {measured / 2**20:.1f} MiB",
          abs(measured - est) <= 0.25 * est, "")


# (shape [B, H, Lq, Lk], how the weights leave, the run's output flags)
SHAPES = [((1, 1, 64, 65536), "file", ["--weights", "w.npy", "-o", "o.npy"]),
          ((1, 4, 128, 16384), "file", ["--weights", "w.npy", "-o", "o.npy"]),
          ((1, 1, 64, 65536), "none", ["--no-weights", "-o", "o.npy"])]
# Not pinned yet: weights kept for the result document on stdout peak at about twice the
# 16 bytes a weight the estimate counts (the JSON text is built, then copied into the
# document): [1, 1, 1024, 2048] estimates 34.8 MiB and peaks at 67.3 MiB.

for shape, how, flags in SHAPES:
    @test(f"estimate vs peak RSS: {list(shape)}, weights {how}")
    def _(shape=shape, how=how, flags=flags):
        args = inputs(*shape)
        est = estimates(args).get(how)
        base = bare()
        measured = peak(["compute"] + args + flags + ["--threads", "1"]) - base
        if est is not None:
            close(f"{list(shape)} {how}", est, measured)


@test("[1, 1, 8192, 8192] causal with --weights FILE.npy: not 1 GiB, not refused")
def _():
    args = inputs(1, 1, 8192, 8192) + ["--causal"]
    est = estimates(args)
    check("streamed weights cost MiB, not 1 GiB", est.get("file", 2**30) < 64 * 2**20, est)
    check("kept weights still counted", est.get("weights", 0) >= 2**30, est)
    expect(["compute"] + args + ["--weights", "w.npy", "-o", "o.npy", "--max-memory", "256M",
                                 "--threads", "1"], name="fits 256M")


@test("[1, 1, 32768, 32768] causal with --weights FILE.npy: the limit is not what refuses")
def _():
    args = inputs(1, 1, 32768, 32768) + ["--causal"]
    est = estimates(args)
    check("streamed: under 256 MiB", est.get("file", 2**40) < 256 * 2**20, est)
    # Refused by a limit under it (but over each input's size), the figure it names is the
    # streamed one, not 16 GiB.
    expect(["compute"] + args + ["--weights", "w.npy", "-o", "o.npy", "--max-memory", "16M"],
           code=2, err=r"needs about [\d.]+ MiB \(")


# ggml's (values, bytes) per block of each type (ggml.c's type_traits), for the stored bytes of
# a matrix a float32 run multiplies where the GGUF maps it.
GGML_BLOCKS = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q8_0": (32, 34), "Q4_0": (32, 18),
               "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24), "Q2_K": (256, 84),
               "Q3_K": (256, 110), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210)}


def layer_weights_figure(args):
    """explain's "one layer's weights" figure (bytes, to the shown precision) of a model run."""
    text = expect(["explain"] + args, name=f"explain {args}").decode()
    m = re.search(r"one layer's weights ([\d.]+) (B|KiB|MiB|GiB)\b[^\n]*with --no-weights", text)
    check(f"explain {args}: one layer's weights", m is not None, text[-800:])
    return (float(m.group(1)), UNITS[m.group(2)]) if m else (0.0, 1)


@test("a quantized GGUF's layer costs its stored bytes at f32, float64 copies at f64")
def _():
    fixtures = os.path.join(harness.ROOT, "tests", "unit", "fixtures", "gguf", "quant_models")
    with open(os.path.join(fixtures, "llama_error.json")) as f:
        info = json.load(f)
    c = info["config"]
    e, d = c["hidden_size"], c["hidden_size"] // c["num_attention_heads"]
    shapes = {"q_proj": (e, e), "k_proj": (c["num_key_value_heads"] * d, e),
              "v_proj": (c["num_key_value_heads"] * d, e), "o_proj": (e, e),
              "gate_proj": (c["intermediate_size"], e), "up_proj": (c["intermediate_size"], e),
              "down_proj": (e, c["intermediate_size"]), "layernorm": (e,)}
    stored, values = {}, {}
    for name, t in info["tensors"].items():
        if not name.startswith("model.layers."):
            continue
        layer = int(name.split(".")[2])
        shape = next(v for k, v in shapes.items() if k in name)
        n = int(np.prod(shape))
        values[layer] = values.get(layer, 0) + n
        block, nbytes = GGML_BLOCKS[t["type"]]
        # Matrices of every type but F32 are multiplied in place; the rest is read as float32
        # and held as float32 (4 + 2 * 4 bytes a value). The estimate takes the largest layer.
        in_place = len(shape) == 2 and t["type"] != "F32"
        stored[layer] = stored.get(layer, 0) + (n // block * nbytes if in_place else 12 * n)
    check("the layers' stored bytes differ (the largest one counts)",
          len(set(stored.values())) > 1, stored)
    with open(path("ids.json"), "w") as f:
        json.dump([[1, 2, 3]], f)
    model = ["--params", os.path.join(fixtures, "llama.gguf"), "--token-ids", path("ids.json")]
    for label, extra, want in (("f32", [], max(stored.values())),
                               ("f64", ["--precision", "f64"], 20 * max(values.values()))):
        shown, unit = layer_weights_figure(model + extra)
        check(f"{label}: one layer's weights {shown} x {unit} B = {want} B to the shown digit",
              abs(shown - want / unit) <= 0.05 + 1e-9, "")



@test("a model run's estimate covers its peak RSS, lower for an .npz than for JSON text")
def _():
    model = os.path.join(harness.ROOT, "tests", "unit", "fixtures", "gguf", "quant_models",
                         "llama.gguf")
    ids = np.random.default_rng(1).integers(0, 8, (1, 2048))
    with open(path("ids.json"), "w") as f:
        json.dump(ids.tolist(), f)
    args = ["--params", model, "--token-ids", path("ids.json")]
    text = expect(["explain"] + args, name="explain").decode()
    size = r"~([\d.]+) (B|KiB|MiB|GiB) \([^\n]*\) with --no-weights"
    figures = {}
    for key, tail in (("json", r"\n"), ("npz", r" and --output FILE\.npz")):
        m = re.search(size + tail, text)
        if check(f"explain: the {key} figure", m is not None, text[-900:]):
            figures[key] = float(m.group(1)) * UNITS[m.group(2)]
    check("the .npz figure is under the JSON one", figures.get("npz", 1) < figures.get("json", 0),
          figures)
    if harness.SANITIZED:
        print("skip: the peak RSS checks (ASan build)")
        return
    base = bare()
    for key, out in (("json", "o.json"), ("npz", "o.npz")):
        measured = peak(["compute"] + args + ["--no-weights", "-o", out, "--threads", "1"]) - base
        print(f"{key}: estimate {figures.get(key, 0) / 2**20:.1f} MiB, "
              f"measured {measured / 2**20:.1f} MiB")
        check(f"{key}: the estimate covers the peak", figures.get(key, 0) >= measured, "")

if __name__ == "__main__":
    main()

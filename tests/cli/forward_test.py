#!/usr/bin/env python3
"""Whole models from token ids (--params DIR --token-ids): for each architecture a tiny
random model in the Hugging Face folder layout (real tensor names and shapes, config.json
with the real keys; one sharded with an index), and an independent numpy float64 forward
written from each model's modeling_<type>.py. attn's per-layer weights and hidden states
must agree at float32 tolerance, and to 1e-10 with --precision f64. Hostile folders and the
wrong-architecture traps are one-line exit-2 errors.

/usr/bin/python3 tests/cli/forward_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import re

import numpy as np

from forward_oracle import (ARCHS, E, H, IDS, L, NL, Model, attention, build, f32, ref,
                            write_model)
from harness import check, expect, main, path, run, test


def _err(args, pattern):
    expect(args, code=2, err=pattern)


with open(path("q.json"), "w") as _f:
    json.dump([[1.0, 2.0], [3.0, 4.0]], _f)


def compare(arch, shards=1, **kw):
    folder, ws, hs, _, _ = build(arch, shards, **kw)
    for precision, tol in (("f32", dict(rtol=2e-4, atol=2e-5)), ("f64", dict(rtol=0, atol=1e-10))):
        code, out, err = run(["compute", "--params", folder, "--token-ids", path("ids.json"),
                              "--return", "hidden_states", "--precision", precision])
        check(arch + " " + precision + " exit 0", code == 0, err)
        if code != 0:
            return
        doc = json.loads(out)
        got_w = np.array([[[[float(v) for v in row] for row in h] for h in layer]
                          for layer in doc["weights"]])
        got_h = np.array(doc["hidden_states"], dtype=np.float64)
        check(arch + " " + precision + " weights shape", got_w.shape == ws.shape,
              "%s vs %s" % (got_w.shape, ws.shape))
        check(arch + " " + precision + " hidden_states shape", got_h.shape == hs.shape,
              "%s vs %s" % (got_h.shape, hs.shape))
        if got_w.shape == ws.shape and got_h.shape == hs.shape:
            check(arch + " " + precision + " weights", np.allclose(got_w, ws, **tol),
                  "max err %g" % np.abs(got_w - ws).max())
            check(arch + " " + precision + " hidden states", np.allclose(got_h, hs, **tol),
                  "max err %g" % np.abs(got_h - hs).max())


for _arch in ARCHS:
    test("forward " + _arch)(lambda a=_arch: compare(a))


@test("forward gpt_neox sequential residual")
def _neox_sequential():
    compare("gpt_neox", parallel=False)


@test("forward mistral sliding window shorter than the tokens")
def _mistral_window():
    compare("mistral", window=3)


@test("forward gpt2 unscaled scores divided by layer + 1")
def _gpt2_scaling():
    compare("gpt2", scale_weights=False, inverse_layer=True)


def one_layer(arch, prefix, extra, rows=None, **kw):
    """One layer's weights of `arch`'s checkpoint at `prefix` on layer 0's input (the
    oracle's hidden state 0, its first `rows` tokens): (exit, stdout, stderr, the oracle's
    layer-0 weights)."""
    folder, ws, hs, _, cfg = build(arch, **kw)
    x = hs[0].reshape(hs.shape[-2], hs.shape[-1])[:rows].astype(np.float32)
    np.save(path("x0.npy"), x)
    heads = cfg.get("num_attention_heads", cfg.get("n_head"))
    rc, so, se = run(["compute", "-x", path("x0.npy"), "--params",
                      os.path.join(folder, "model.safetensors"), "--prefix", prefix,
                      "--heads", str(heads), "--precision", "f64"] + extra)
    return rc, so, se, ws[0]


def equals_layer0(name, rc, so, se, want):
    got = np.array(json.loads(so)["weights"]) if rc == 0 else None
    check(name, got is not None and np.allclose(got.reshape(want.shape), want, atol=1e-6),
          se[-300:] if got is None else f"max diff {np.max(np.abs(got.reshape(want.shape) - want))}")


@test("one layer of a model whose config.json slides a window is refused past the window")
def _one_layer_window():
    # Mistral's sliding_window 3 < 7 tokens: one layer's weights do not say it: refused,
    # never silently computed without it; given as the message says, the layer equals the
    # whole model's first layer; within the window there is nothing to refuse.
    rc, _, se, _ = one_layer("mistral", "model.layers.0.self_attn.", [], window=3)
    check("refused: exit 2, one line naming sliding_window and the window to give",
          rc == 2 and se.count("\n") == 1 and re.search(
              r"config.json sliding_window 3: each query of this model sees only its last 3 "
              r"keys, which one layer's weights do not apply to 7 keys: give \"window\": "
              r"\[2, 0\] with causal, or run the whole model", se) is not None, se)
    equals_layer0("with window [2, 0] and causal: the whole model's layer 0",
                  *one_layer("mistral", "model.layers.0.self_attn.",
                             ["--window", "2,0", "--causal"], window=3))
    rc, _, se, _ = one_layer("mistral", "model.layers.0.self_attn.", ["--causal"], rows=3,
                             window=3)
    check("3 tokens in a window of 3: computed", rc == 0, se)


@test("one layer of a GPT-2 whose config.json rescales its scores is refused without scale")
def _one_layer_gpt2_scale():
    prefix = "transformer.h.0.attn."
    for kw, why in ((dict(scale_weights=False, inverse_layer=True),
                     r"scale_attn_weights false, scale_attn_by_inverse_layer_idx true: .*by "
                     r"the layer's index \+ 1, not by √d"),
                    (dict(scale_weights=False), r"scale_attn_weights false: .*by 1, not by √d"),
                    (dict(inverse_layer=True),
                     r"scale_attn_by_inverse_layer_idx true: .*by √d · \(the layer's index")):
        rc, _, se, _ = one_layer("gpt2", prefix, ["--causal"], **kw)
        check(f"{kw}: refused, one line: " + why, rc == 2 and se.count("\n") == 1 and
              re.search(why + r".*give \"scale\", or run the whole model", se) is not None, se)
    # Layer 0 of the unscaled, by-layer GPT-2: scores / (0 + 1).
    equals_layer0("with scale 1: the whole model's layer 0",
                  *one_layer("gpt2", prefix, ["--scale", "1", "--causal"], scale_weights=False,
                             inverse_layer=True))


@test("forward gpt2 with the erf gelu (gelu_python)")
def _gpt2_gelu_python():
    compare("gpt2", act="gelu_python")


@test("forward gemma takes hidden_activation, never hidden_act")
def _gemma_act():
    compare("gemma", gemma_act_key=False)


@test("forward qwen2 sliding window on layers from max_window_layers")
def _qwen2_window():
    compare("qwen2", window=3, window_from=1)


@test("forward qwen2 sliding window on the layers layer_types names")
def _qwen2_layer_types():
    compare("qwen2", window=3, window_from=1, layer_types=True)


@test("forward opt without final layer norm")
def _opt_no_final():
    compare("opt", remove_final=True)


@test("config defaults of the model's code: gemma head_dim 256, gptj rotary_dim 64")
def _config_defaults():
    folder, _, _, _, cfg = build("gemma")
    del cfg["head_dim"]
    json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
    _err(["compute", "--params", folder, "--token-ids", path("ids.json")],
         r"q_proj.weight: expected shape \[1024, 16\], got \[16, 16\]")
    folder, _, _, _, cfg = build("gptj")
    del cfg["rotary_dim"]
    json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
    _err(["compute", "--params", folder, "--token-ids", path("ids.json")], r"rope.dim.*64")


@test("config switches the code does not compute are refused")
def _unsupported_switches():
    for arch, key, value, pattern in (
            ("bert", "position_embedding_type", "relative_key", r"position_embedding_type "
             r"'relative_key' is not supported"),
            ("opt", "layer_norm_elementwise_affine", False, r"layer_norm_elementwise_affine")):
        folder, _, _, _, cfg = build(arch)
        cfg[key] = value
        json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
        _err(["compute", "--params", folder, "--token-ids", path("ids.json")], pattern)


def compare_padded(arch, rows, keeps, real_queries_only):
    """Two sequences in one batch with a key padding mask: each row as the oracle computes
    it alone with that row's attention mask (the same random weights: the same seed)."""
    want = [ARCHS[arch](Model(7), ids=r, keep=k) for r, k in zip(rows, keeps)]
    folder = path("model-" + arch + "-padded")
    m = Model(7)
    ARCHS[arch](m)
    write_model(folder, want[0][0], m.t)
    with open(path("ids2.json"), "w") as f:
        json.dump(rows, f)
    with open(path("keep2.json"), "w") as f:
        json.dump(keeps, f)
    code, out, err = run(["compute", "--params", folder, "--token-ids", path("ids2.json"),
                          "--key-padding", path("keep2.json"), "--return", "hidden_states",
                          "--precision", "f64"])
    check(arch + " exit 0", code == 0, err)
    if code != 0:
        return
    doc = json.loads(out)
    got_w = np.array(doc["weights"], dtype=np.float64)  # [layers, B, H, L, L]
    got_h = np.array(doc["hidden_states"], dtype=np.float64)  # [layers + 1, B, L, E]
    for b, (_, ws, hs) in enumerate(want):
        rows_ = np.flatnonzero(keeps[b]) if real_queries_only else np.arange(L)
        ws, hs = np.array(ws), np.array(hs)
        check("%s row %d weights" % (arch, b),
              np.allclose(got_w[:, b][:, :, rows_], ws[:, :, rows_], atol=1e-10),
              "max err %g" % np.abs(got_w[:, b][:, :, rows_] - ws[:, :, rows_]).max())
        check("%s row %d hidden states" % (arch, b),
              np.allclose(got_h[:, b][:, rows_], hs[:, rows_], atol=1e-10),
              "max err %g" % np.abs(got_h[:, b][:, rows_] - hs[:, rows_]).max())


@test("forward opt left padding: positions count the attention mask")
def _opt_left_padding():
    # Hugging Face gives a pad query that sees no key uniform weights; attn gives zeros
    # (the contract's rule): only the real tokens' rows are compared.
    compare_padded("opt", [IDS, [1, 1] + IDS[:L - 2]], [[1] * L, [0, 0] + [1] * (L - 2)], True)


@test("forward roberta right padding: positions from the pad ids")
def _roberta_right_padding():
    compare_padded("roberta", [IDS, [0, 17, 5, 42, 2, 1, 1]], [[1] * L, [1] * 5 + [0, 0]], False)


@test("forward llama sharded with index")
def _sharded():
    compare("llama", shards=3)


@test("forward layers selects without changing results")
def _layers():
    folder, ws, _, _, _ = build("gpt2")
    code, out, err = run(["compute", "--params", folder, "--token-ids", path("ids.json"),
                          "--layers", "1", "--precision", "f64"])
    check("exit 0", code == 0, err)
    doc = json.loads(out)
    got = np.array(doc["weights"], dtype=np.float64)
    check("layer 1 only", got.shape == ws[1:].shape and np.allclose(got, ws[1:], atol=1e-10),
          str(got.shape))
    check("layers echoed", doc.get("layers") == [1], str(doc.get("layers")))


@test("output npz holds every result")
def _npz():
    folder, ws, hs, _, _ = build("bert")
    out = path("all.npz")
    expect(["compute", "--params", folder, "--token-ids", path("ids.json"), "--return",
            "hidden_states,lse", "--precision", "f64", "--output", out, "--dtype", "f64"])
    z = np.load(out)
    check("members", sorted(z.files) == ["hidden_states", "layers", "lse", "output",
                                         "token_ids", "weights"], str(z.files))
    check("weights", np.allclose(z["weights"], ws, atol=1e-10), "")
    check("hidden_states", np.allclose(z["hidden_states"], hs, atol=1e-10), "")
    check("token_ids", z["token_ids"].dtype == np.int64 and list(z["token_ids"]) == IDS,
          str(z["token_ids"]))
    check("lse shape [layers, H, L]", z["lse"].shape == (NL, H, L), str(z["lse"].shape))


@test("output npy cannot hold --return: exit 2 naming the ways")
def _npy_drop():
    folder, *_ = build("gpt2")
    _err(["compute", "--params", folder, "--token-ids", path("ids.json"), "--return",
          "hidden_states", "--output", path("o.npy")],
         r"--output .*o.npy: an .npy file holds the output alone, and --return asked for "
         r"hidden_states too: use --output FILE.npz .*FILE.json .*stdout")
    _err(["compute", "-q", path("q.json"), "-k", path("q.json"), "-v", path("q.json"),
          "--return", "lse", "--output", path("o.npy")], r"asked for lse too")
    code, out, err = run(["compute", "-q", path("q.json"), "-k", path("q.json"), "-v",
                          path("q.json"), "--return", "lse", "--output", "-"])
    check("--output - keeps lse", code == 0 and "lse" in json.loads(out), err)


@test("output json with --return writes the result document")
def _json_doc():
    folder, ws, hs, _, _ = build("gpt2")
    out = path("o.json")
    expect(["compute", "--params", folder, "--token-ids", path("ids.json"), "--return",
            "hidden_states", "--output", out])
    doc = json.load(open(out))
    check("hidden_states in the file", np.allclose(np.array(doc["hidden_states"], float), hs,
                                                   rtol=2e-4, atol=2e-5), "")


@test("info and explain summarise the model")
def _info():
    folder, *_ = build("gpt_neox")
    code, out, err = run(["info", folder])
    text = out.decode()
    check("info exit 0", code == 0, err)
    for want in ["gpt_neox model", "heads: 4 (config.json: num_attention_heads)",
                 "head dim: 4", "norm: LayerNorm eps 1e-05 (config.json: layer_norm_eps)",
                 "positions: RoPE rotate_half, theta 10000, 2 of 4 dims",
                 "mlp: gelu (config.json: hidden_act)",
                 "block: parallel residual (attention + MLP)"]:
        check("info says " + want, want in text, text)
    code, out, err = run(["explain", "--params", folder, "--token-ids", path("ids.json"),
                          "--layers", "1"])
    text = out.decode()
    check("explain exit 0", code == 0, err)
    check("explain shows the block", "y = x + attn(input_layernorm(x)) + "
          "mlp(post_attention_layernorm(x))" in text, text)
    check("explain shows the layers", "1 of 2 returned: 1" in text, text)


# --- hostile folders and traps -------------------------------------------------------------

@test("hostile missing shard")
def _missing_shard():
    folder, *_ = build("llama", shards=2)
    os.remove(os.path.join(folder, "model-00002-of-00002.safetensors"))
    _err(["compute", "--params", folder, "--token-ids", path("ids.json")], r"shard .* is missing")


@test("hostile index names a tensor in no shard")
def _index_extra():
    folder, *_ = build("llama", shards=2)
    ip = os.path.join(folder, "model.safetensors.index.json")
    idx = json.load(open(ip))
    idx["weight_map"]["model.layers.9.self_attn.q_proj.weight"] = "model-00001-of-00002.safetensors"
    json.dump(idx, open(ip, "w"))
    _err(["compute", "--params", folder, "--token-ids", path("ids.json")],
         r"tensor 'model.layers.9.self_attn.q_proj.weight' is not in its shard")


@test("hostile truncated shard")
def _truncated():
    folder, *_ = build("llama", shards=2)
    sp = os.path.join(folder, "model-00001-of-00002.safetensors")
    data = open(sp, "rb").read()
    open(sp, "wb").write(data[:-10])
    _err(["compute", "--params", folder, "--token-ids", path("ids.json")], r"model-00001")


@test("hostile config and tensor shapes disagree")
def _shape_mismatch():
    folder, _, _, _, cfg = build("llama")
    cfg["num_key_value_heads"] = 4
    json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
    _err(["compute", "--params", folder, "--token-ids", path("ids.json")],
         r"k_proj.weight: expected shape \[16, 16\], got \[8, 16\]")


@test("trap unsupported model_type lists the supported")
def _unsupported():
    folder, _, _, _, cfg = build("llama")
    cfg["model_type"] = "mamba"
    json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
    _err(["compute", "--params", folder, "--token-ids", path("ids.json")],
         r"model_type 'mamba' is not supported \(supported: gpt2, gpt_neox, gptj, llama")


@test("trap q/k/v/out names without config ask for --layout")
def _out_proj_names():
    folder = path("opt-layer")
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(3)
    t = {}
    for n in ["q_proj", "k_proj", "v_proj", "out_proj"]:
        t["model.decoder.layers.0.self_attn.%s.weight" % n] = f32(rng.standard_normal((E, E)))
        t["model.decoder.layers.0.self_attn.%s.bias" % n] = f32(rng.standard_normal(E))
    st = os.path.join(folder, "layer.safetensors")
    ref.write_safetensors(st, [(k, "F32", t[k]) for k in sorted(t)])
    x = f32(rng.standard_normal((L, E)))
    np.save(path("x.npy"), x.astype(np.float32))
    args = ["compute", "-x", path("x.npy"), "--params", st, "--prefix",
            "model.decoder.layers.0.self_attn.", "--heads", str(H), "--precision", "f64"]
    _err(args, r"fit several layouts: opt .* and gptj .*no config.json says which: set --layout")
    pre = "model.decoder.layers.0.self_attn."
    w = [(t[pre + n + ".weight"], t[pre + n + ".bias"]) for n in ["q_proj", "k_proj", "v_proj",
                                                                   "out_proj"]]
    want, ww = attention(x, *w[0], *w[1], *w[2], *w[3], H, False)
    for extra, label in ((["--layout", "opt"], "--layout opt"), ([], "config model_type opt")):
        if not extra:
            json.dump({"model_type": "opt"}, open(os.path.join(folder, "config.json"), "w"))
        code, out, err = run(args + extra)
        check(label + " exit 0", code == 0, err)
        if code == 0:
            doc = json.loads(out)
            check(label + " output (no RoPE, out_proj applied)",
                  np.allclose(np.array(doc["output"], float), want, atol=1e-10), "")
            check(label + " weights", np.allclose(np.array(doc["weights"], float), ww,
                                                  atol=1e-10), "")


@test("trap no config")
def _no_config():
    folder, *_ = build("opt")
    os.remove(os.path.join(folder, "config.json"))
    _err(["compute", "--params", folder, "--token-ids", path("ids.json")], r"no config.json")


@test("weights file of a model run: the encoder's bytes, selected layers in order")
def _weights_file():
    folder, ws, _, _, _ = build("gpt2")
    args = ["compute", "--params", folder, "--token-ids", path("ids.json"), "--layers", "1,0"]
    expect(args + ["--weights", path("wm.npy")])
    code, out, err = run(args + ["--weights", "-", "--format", "npy"])
    with open(path("wm.npy"), "rb") as f:
        got = f.read()
    check("same bytes as the encoder", code == 0 and got == out, err)
    w = np.load(path("wm.npy"))
    check("layers 1, 0 of numpy's weights", w.shape == ws[[1, 0]].shape and
          np.allclose(w, ws[[1, 0]], rtol=2e-4, atol=2e-5), str(w.shape))
    # The results' stack in the selection's order too (layer 1 finishes after layer 0 and
    # waits for nothing; layer 0 waits for it), the same arrays as 0,1's swapped.
    base = ["compute", "--params", folder, "--token-ids", path("ids.json"), "--no-weights"]
    expect(base + ["--layers", "1,0", "-o", path("l10.npz")])
    expect(base + ["--layers", "0,1", "-o", path("l01.npz")])
    a, b = np.load(path("l10.npz")), np.load(path("l01.npz"))
    check("--layers 1,0: output and layers are 0,1's swapped",
          np.array_equal(a["output"], b["output"][[1, 0]]) and
          list(a["layers"]) == [1, 0] and not np.array_equal(a["output"][0], a["output"][1]),
          str(list(a["layers"])))


main()

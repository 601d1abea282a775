#!/usr/bin/env python3
"""Whole models of the architectures added for issue #36 from token ids, against the
float64 references of modern_oracle.py (written from each modeling_<type>.py): per
architecture one `attn batch` process runs the tiny folder at f32 and f64 and each config
variant at f64; every layer's weights and the hidden states must agree (float32 tolerance,
1e-10 in float64). Each distinguishing feature has a sensitivity check: the reference
without it (llama's q/k, no softcap, another window pattern, one RoPE base) is far from
attn's result, so a run that ignored it would fail.

/usr/bin/python3 tests/cli/modern_forward_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os

import numpy as np

from forward_oracle import IDS, Model, write_model
from harness import check, expect, main, path, run, test
from modern_oracle import ARCHS, build

F32 = dict(rtol=2e-4, atol=2e-5)
F64 = dict(rtol=0, atol=1e-10)


def run_lines(lines):
    """One attn batch process over `lines` (dicts with an "id"): id -> result document."""
    src = path("lines.jsonl")
    with open(src, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    code, out, err = run(["batch", src])
    check("batch exit 0", code == 0, err)
    docs = {}
    for text in out.decode().splitlines():
        doc = json.loads(text)
        docs[doc.get("id")] = doc
    return docs


def line(folder, precision, ident, layout=None):
    params = {"file": folder}
    if layout:
        params["layout"] = layout
    return {"id": ident, "params": params, "token_ids": IDS, "return": ["hidden_states"],
            "precision": precision}


def result(doc):
    return np.array(doc["weights"], dtype=np.float64), np.array(doc["hidden_states"], float)


def agree(label, doc, ws, hs, tol):
    if doc is None or "error" in doc:
        check(label + " ran", False, str(doc and doc.get("error")))
        return
    got_w, got_h = result(doc)
    for what, got, want in (("weights", got_w, ws), ("hidden states", got_h, hs)):
        ok = got.shape == want.shape and np.allclose(got, want, **tol)
        check("%s %s" % (label, what), ok, "shape %s vs %s, max err %s" % (
            got.shape, want.shape, np.abs(got - want).max() if got.shape == want.shape else "-"))


def compare_arch(arch, variants=(), sensitive=()):
    """The folder at f32 and f64, each variant (label, build kwargs) at f64, in one process;
    each sensitive reference (label, kwargs: the feature removed) must differ from attn's."""
    folder, ws, hs, _, _ = build(arch)
    lines = [line(folder, "f32", "f32"), line(folder, "f64", "f64")]
    want = {}
    for label, kw in variants:
        vf, vws, vhs, _, _ = build(arch, name=arch + "-" + label.replace(" ", "-"), **kw)
        lines.append(line(vf, "f64", label))
        want[label] = (vws, vhs)
    docs = run_lines(lines)
    agree(arch + " f32", docs.get("f32"), ws, hs, F32)
    agree(arch + " f64", docs.get("f64"), ws, hs, F64)
    for label, (vws, vhs) in want.items():
        agree(arch + " " + label, docs.get(label), vws, vhs, F64)
    for entry in sensitive:  # (label, kwargs) against the f64 run, or (label, run, kwargs)
        label, base, kw = entry if len(entry) == 3 else (entry[0], "f64", entry[1])
        if docs.get(base) is None or "error" in docs[base]:
            continue
        _, other, _ = ARCHS[arch](Model(11), **kw)
        err = np.abs(np.array(other) - result(docs[base])[0]).max()
        check("%s: the reference %s differs from attn's %s (max %.3g)" % (arch, label, base, err),
              err > 1e-3, "")


@test("forward qwen3: q/k RMSNorm per head")
def _qwen3():
    compare_arch("qwen3", sensitive=[("without q/k norms", dict(qk_norm=False))])


@test("forward olmo2: q/k norm over the projection, post-norms only")
def _olmo2():
    compare_arch("olmo2", sensitive=[("without q/k norms", dict(qk_norm=False))])


@test("forward gemma2: softcap, alternating windows, sandwich norms, query_pre_attn_scalar")
def _gemma2():
    swapped = ["full_attention", "sliding_attention"]
    compare_arch("gemma2",
                 variants=[("no softcap", dict(softcap=None)),
                           ("layer types", dict(layer_types=swapped))],
                 sensitive=[("without softcap", dict(softcap=None)),
                            ("with the other window pattern", dict(layer_types=swapped))])


@test("forward gemma3_text: q/k norms, window pattern, local RoPE base")
def _gemma3():
    compare_arch("gemma3_text",
                 variants=[("pattern 2", dict(pattern=2)),
                           ("layer types", dict(layer_types=["full_attention",
                                                             "sliding_attention"])),
                           ("softcap", dict(softcap=1.5, pattern=2))],
                 sensitive=[("without q/k norms", dict(qk_norm=False)),
                            ("with pattern 2", dict(pattern=2)),
                            ("with one RoPE base", dict(local_theta=1e6))])


@test("forward phi: parallel block, partial RoPE, dense bias, q/k LayerNorm")
def _phi():
    qk = dict(qk_layernorm=True)
    compare_arch("phi", variants=[("qk layernorm", qk)],
                 sensitive=[("with full RoPE", dict(partial=False)),
                            ("without q/k norms", "qk layernorm", dict(qk, qk_norm=False))])


@test("forward stablelm: partial RoPE, LayerNorm, per-head q/k norms, parallel, qkv bias")
def _stablelm():
    qk = dict(qk_layernorm=True)
    compare_arch("stablelm",
                 variants=[("qk layernorm", qk), ("parallel", dict(parallel=True)),
                           ("qkv bias", dict(qkv_bias=True))],
                 sensitive=[("with full RoPE", dict(partial=False)),
                            ("without q/k norms", "qk layernorm", dict(qk, qk_norm=False))])


@test("forward starcoder2: biases, LayerNorm, c_fc/c_proj, sliding window")
def _starcoder2():
    compare_arch("starcoder2", variants=[("window", dict(window=3))],
                 sensitive=[("without the window", "window", {})])


@test("forward gpt_bigcode: multi-query c_attn, or per-head q|k|v without multi_query")
def _gpt_bigcode():
    compare_arch("gpt_bigcode", variants=[("multi-head", dict(multi_query=False))])


@test("forward falcon: multi_query, per-head, new_decoder_architecture groups, parallel_attn")
def _falcon():
    compare_arch("falcon",
                 variants=[("new architecture", dict(new=True)),
                           ("new architecture one norm", dict(new=True, n_ln=1)),
                           ("multi-head", dict(multi_query=False)),
                           ("sequential", dict(parallel=False)),
                           ("bias", dict(bias=True))])


@test("forward bloom: ALiBi, word_embeddings_layernorm, per-head fused qkv, BloomGelu")
def _bloom():
    compare_arch("bloom", sensitive=[("without ALiBi", dict(alibi=False))])


@test("forward mixtral: router softmax, top-2, renormalized")
def _mixtral():
    compare_arch("mixtral", sensitive=[("without renormalizing", dict(flip_norm=True))])


@test("forward qwen2_moe: top-k with and without norm_topk_prob, shared expert, dense layers")
def _qwen2_moe():
    compare_arch("qwen2_moe",
                 variants=[("norm_topk_prob", dict(normalize=True)),
                           ("dense layer 0", dict(dense=(0,))),
                           ("sparse step 2", dict(step=2))],
                 sensitive=[("renormalized", dict(flip_norm=True)),
                            ("without the shared expert", dict(shared=False)),
                            ("not renormalized", "norm_topk_prob",
                             dict(normalize=True, flip_norm=True))])


@test("moe: only the routed experts are read (the others' tensors absent)")
def _moe_unused():
    used = set()
    m = Model(11)
    cfg, ws, hs = ARCHS["mixtral"](m, experts=8, top_k=1, used=used)
    gone = [k for k in m.t if ".experts." in k and
            (int(k.split(".")[2]), int(k.split(".")[5])) not in used]
    check("some experts unused", len(gone) > 0, str(sorted(used)))
    for k in gone:
        del m.t[k]
    folder = path("model-mixtral-sparse")
    write_model(folder, cfg, m.t)
    docs = run_lines([line(folder, "f64", "f64")])
    agree("mixtral without unused experts", docs.get("f64"), np.array(ws), np.array(hs), F64)


@test("moe: the memory estimate counts one expert's weights (one is held at a time)")
def _moe_memory():
    folder, _, _, t, _ = build("mixtral", experts=8, top_k=1)
    layer = [k for k in t if k.startswith("model.layers.0.")]
    one = sum(t[k].size for k in layer if ".experts." not in k or ".experts.0." in k)
    check("1312 values: attention, norms, router, expert 0", one == 1312, str(one))
    json.dump(IDS, open(path("ids.json"), "w"))
    # 1312 values read as float32 and held in float32 (12 bytes each): 15.4 KiB; all eight
    # experts would be 46.9 KiB.
    expect(["compute", "--params", folder, "--token-ids", path("ids.json"), "--no-weights",
            "--max-memory", "111K"], code=2, err=r"one layer's weights 15\.4 KiB")


@test("moe: the memory estimate takes the largest layer (Qwen2-MoE, a dense layer 1)")
def _moe_memory_dense_layer():
    folder, _, _, t, cfg = build("qwen2_moe", dense=(1,))

    def held(n):  # values of layer n's tensors, of its routed experts expert 0's only
        pre = f"model.layers.{n}."
        return sum(t[k].size for k in t if k.startswith(pre) and
                   (".experts." not in k or ".experts.0." in k))

    sizes = [held(n) for n in range(cfg["num_hidden_layers"])]
    check("layer 0 (sparse: expert 0 and the shared expert) holds fewer values than the dense "
          "layer 1", sizes[0] < max(sizes), str(sizes))
    json.dump(IDS, open(path("ids.json"), "w"))
    # Float32 tensors: read as float32 and held in float32, 12 bytes each.
    text = expect(["explain", "--params", folder, "--token-ids", path("ids.json")]).decode()
    want = f"one layer's weights {max(sizes) * 12 / 1024:.1f} KiB"
    check(f"explain says {want}", want in text, text[-600:])


@test("explain shows each block as the code composes it")
def _explain():
    json.dump(IDS, open(path("ids.json"), "w"))
    for arch, want in (
            ("olmo2", "h = x + post_attention_layernorm(attn(x)); "
                      "y = h + post_feedforward_layernorm(mlp(h))"),
            ("gemma2", "h = x + post_attention_layernorm(attn(input_layernorm(x))); "
                       "y = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))"),
            ("mixtral", "y = h + experts(post_attention_layernorm(h))")):
        folder, *_ = build(arch)
        code, out, err = run(["explain", "--params", folder, "--token-ids", path("ids.json")])
        check(arch + " explain exit 0", code == 0, err)
        check(arch + " explain shows " + want, want in out.decode(), out.decode())


@test("one layer of a checkpoint with q/k norms is refused, never run without them")
def _one_layer_qk_norm():
    folder, *_ = build("qwen3")
    np.save(path("x.npy"), np.zeros((7, 16), np.float32))
    expect(["compute", "-x", path("x.npy"), "--params",
            os.path.join(folder, "model.safetensors"), "--prefix", "model.layers.0.self_attn.",
            "--heads", "4"], code=2, err=r"'q_norm.weight' \(a q/k norm\), which one layer")


@test("one layer of a Gemma checkpoint is refused: its norm, scale and softcap are the model's")
def _one_layer_gemma():
    np.save(path("x.npy"), np.zeros((7, 16), np.float32))
    for arch, why in (("gemma", r"normalizes with \(1 \+ w\)"),
                      ("gemma2", r"normalizes .* query_pre_attn_scalar\^-0.5 \(Gemma 2: capped")):
        folder, _, _, _, cfg = build("gemma2")
        cfg["model_type"] = arch  # a Gemma 1 layer has the same names
        json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
        expect(["compute", "-x", path("x.npy"), "--params",
                os.path.join(folder, "model.safetensors"), "--prefix",
                "model.layers.0.self_attn.", "--heads", "4"], code=2,
               err=r"model_type '" + arch + "' " + why + r".*which one layer's weights at "
                   r"prefix 'model.layers.0.self_attn.' do not apply: run the whole model")


@test("config switches the code does not compute are refused: gemma bidirectional")
def _refused():
    for arch in ("gemma2", "gemma3_text"):
        folder, _, _, _, cfg = build(arch)
        cfg["use_bidirectional_attention"] = True
        json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
        json.dump(IDS, open(path("ids.json"), "w"))
        expect(["compute", "--params", folder, "--token-ids", path("ids.json")], code=2,
               err=r"use_bidirectional_attention true .*not supported")


main()

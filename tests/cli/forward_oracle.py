"""The numpy float64 forward of every supported architecture, written from each model's
Hugging Face modeling_<type>.py, and the tiny random models in the Hugging Face folder
layout (real tensor names and shapes, config.json with the real keys) it is checked on.
Used by forward_test.py and model_run_test.py.
"""
import json
import math
import os
import sys

import numpy as np

from harness import ROOT, path

sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import reference as ref  # noqa: E402

E, H, V, P, I, NL, L = 16, 4, 50, 40, 24, 2, 7
D = E // H
IDS = [3, 17, 5, 42, 8, 1, 29]


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


# --- numpy float64 building blocks (from the Hugging Face code) ---------------------------

def layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + (0 if b is None else b)


def rms_norm(x, w, eps):  # LlamaRMSNorm; Gemma passes 1 + w
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


_erf = np.vectorize(math.erf)
ACT = {
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "gelu_new": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "relu": lambda x: np.maximum(x, 0),
    "silu": lambda x: x / (1 + np.exp(-x)),
}
ACT["gelu_pytorch_tanh"] = ACT["gelu_new"]
ACT["gelu_python"] = ACT["gelu"]


def linear(x, w, b=None):
    return x @ w.T + (0 if b is None else b)


def rope(x, rd, style, theta=10000.0):
    """x [H, L, D]: the first rd features rotated at positions 0..L-1."""
    n = x.shape[1]
    inv = 1.0 / theta ** (np.arange(0, rd, 2) / rd)
    ang = np.arange(n)[:, None] * inv[None, :]
    r, rest = x[..., :rd], x[..., rd:]
    if style == "neox":  # rotate_half
        cos = np.cos(np.concatenate([ang, ang], -1))
        sin = np.sin(np.concatenate([ang, ang], -1))
        half = np.concatenate([-r[..., rd // 2:], r[..., :rd // 2]], -1)
        out = r * cos + half * sin
    else:  # GPT-J rotate_every_two with repeat_interleave
        cos = np.repeat(np.cos(ang), 2, -1)
        sin = np.repeat(np.sin(ang), 2, -1)
        two = np.stack([-r[..., 1::2], r[..., ::2]], -1).reshape(r.shape)
        out = r * cos + two * sin
    return np.concatenate([out, rest], -1)


def attention(x, wq, bq, wk, bk, wv, bv, wo, bo, hkv, causal, rot=None, window=None,
              scale=None, keep=None, qk=None, softcap=None, bias=None):
    q, k = linear(x, wq, bq), linear(x, wk, bk)
    if qk:  # q/k norms of the projections [L, H·D], [L, Hkv·D]
        q, k = qk(q, k)
    q = q.reshape(L, H, D).transpose(1, 0, 2)
    k = k.reshape(L, hkv, D).transpose(1, 0, 2)
    v = linear(x, wv, bv).reshape(L, hkv, D).transpose(1, 0, 2)
    if rot:
        q, k = rot(q), rot(k)
    k = np.repeat(k, H // hkv, 0)
    v = np.repeat(v, H // hkv, 0)
    s = q @ k.transpose(0, 2, 1) * (1 / math.sqrt(D) if scale is None else scale)
    if softcap:  # Gemma 2: cap·tanh(s / cap) after the scale, before the masks
        s = softcap * np.tanh(s / softcap)
    if bias is not None:  # BLOOM's ALiBi [H, L, L]
        s = s + bias
    if causal:
        s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
    if window:  # masking_utils.sliding_window_overlay: key j seen iff i - window < j
        s = np.where(np.arange(L)[None, :] > np.arange(L)[:, None] - window, s, -np.inf)
    if keep is not None:  # the attention mask over keys (1 = real token)
        s = np.where(np.asarray(keep, bool)[None, None, :], s, -np.inf)
    seen = np.isfinite(s).any(-1, keepdims=True)  # rows that see no key: zeros (attn's rule)
    s = np.where(seen, s, 0.0)
    w = np.exp(s - s.max(-1, keepdims=True))
    w = np.where(seen, w / w.sum(-1, keepdims=True), 0.0)
    o = (w @ v).transpose(1, 0, 2).reshape(L, H * D)
    return linear(o, wo, bo), w


# --- the architectures: tensors, config, forward -----------------------------------------

class Model:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.t = {}

    def p(self, name, *shape, scale=0.3):
        a = f32(self.rng.standard_normal(shape) * scale)
        self.t[name] = a
        return a

    def norm_w(self, name, bias=True, n=E):
        w = self.p(name + ".weight", n, scale=0.1) + 1.0
        self.t[name + ".weight"] = f32(w)
        b = self.p(name + ".bias", n, scale=0.1) if bias else None
        return f32(w), b


def gpt2(m, act="gelu_new", scale_weights=True, inverse_layer=False):
    cfg = {"model_type": "gpt2", "n_embd": E, "n_head": H, "n_layer": NL, "n_positions": P,
           "vocab_size": V, "layer_norm_epsilon": 1e-5, "activation_function": act,
           "scale_attn_weights": scale_weights, "scale_attn_by_inverse_layer_idx": inverse_layer}
    x = m.p("transformer.wte.weight", V, E)[IDS] + m.p("transformer.wpe.weight", P, E)[:L]
    hs, ws = [x], []
    for i in range(NL):
        pre = "transformer.h.%d." % i
        w1, b1 = m.norm_w(pre + "ln_1")
        ca, cb = m.p(pre + "attn.c_attn.weight", E, 3 * E), m.p(pre + "attn.c_attn.bias", 3 * E)
        cp, cpb = m.p(pre + "attn.c_proj.weight", E, E), m.p(pre + "attn.c_proj.bias", E)
        w2, b2 = m.norm_w(pre + "ln_2")
        fc, fcb = m.p(pre + "mlp.c_fc.weight", E, I), m.p(pre + "mlp.c_fc.bias", I)
        pj, pjb = m.p(pre + "mlp.c_proj.weight", I, E), m.p(pre + "mlp.c_proj.bias", E)
        n = layer_norm(x, w1, b1, 1e-5)
        qkv = n @ ca + cb  # Conv1D: x·W + b
        q, k, v = np.split(qkv, 3, -1)
        # Conv1D attention written out: heads of q, k, v
        qh = q.reshape(L, H, D).transpose(1, 0, 2)
        kh = k.reshape(L, H, D).transpose(1, 0, 2)
        vh = v.reshape(L, H, D).transpose(1, 0, 2)
        s = qh @ kh.transpose(0, 2, 1)
        if scale_weights:  # GPT2Attention._attn
            s = s / math.sqrt(D)
        if inverse_layer:
            s = s / (i + 1)
        s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        a = (w @ vh).transpose(1, 0, 2).reshape(L, E) @ cp + cpb
        x = x + a
        x = x + ACT[act](layer_norm(x, w2, b2, 1e-5) @ fc + fcb) @ pj + pjb
        ws.append(w)
        hs.append(x)
    wf, bf = m.norm_w("transformer.ln_f")
    hs[-1] = layer_norm(x, wf, bf, 1e-5)
    return cfg, ws, hs


def llama_family(m, kind, window=None, window_from=None, gemma_act_key=True,
                 layer_types=False):
    hkv = 2
    eps = 1e-6
    cfg = {"model_type": kind, "hidden_size": E, "num_attention_heads": H,
           "num_key_value_heads": hkv, "num_hidden_layers": NL, "intermediate_size": I,
           "vocab_size": V, "rms_norm_eps": eps, "rope_theta": 10000.0, "hidden_act": "silu",
           "max_position_embeddings": P}
    act = "silu"
    off = 0.0
    if window:
        cfg["sliding_window"] = window
    if window_from is not None:  # Qwen2: sliding layers from max_window_layers on
        cfg.update(use_sliding_window=True, max_window_layers=window_from)
        if layer_types:  # or as the config lists them (then max_window_layers is not read)
            cfg.update(max_window_layers=0, layer_types=[
                "sliding_attention" if i >= window_from else "full_attention"
                for i in range(NL)])
    if kind == "gemma":  # GemmaMLP: hidden_activation, hidden_act ignored
        cfg.update(head_dim=D, hidden_act="gelu")
        if gemma_act_key:
            cfg["hidden_activation"] = "gelu_pytorch_tanh"
        act, off = "gelu_pytorch_tanh", 1.0
    x = m.p("model.embed_tokens.weight", V, E)[IDS]
    if kind == "gemma":
        x = x * math.sqrt(E)
    hs, ws = [x], []
    rot = lambda t: rope(t, D, "neox")  # noqa: E731
    for i in range(NL):
        pre = "model.layers.%d." % i
        n1, _ = m.norm_w(pre + "input_layernorm", bias=False)
        if kind == "phi3":
            qkv = m.p(pre + "self_attn.qkv_proj.weight", (H + 2 * hkv) * D, E)
            wq, wk, wv = qkv[:H * D], qkv[H * D:(H + hkv) * D], qkv[(H + hkv) * D:]
            bq = bk = bv = None
        else:
            wq = m.p(pre + "self_attn.q_proj.weight", H * D, E)
            wk = m.p(pre + "self_attn.k_proj.weight", hkv * D, E)
            wv = m.p(pre + "self_attn.v_proj.weight", hkv * D, E)
            bq = bk = bv = None
            if kind == "qwen2":
                bq = m.p(pre + "self_attn.q_proj.bias", H * D)
                bk = m.p(pre + "self_attn.k_proj.bias", hkv * D)
                bv = m.p(pre + "self_attn.v_proj.bias", hkv * D)
        wo = m.p(pre + "self_attn.o_proj.weight", E, H * D)
        n2, _ = m.norm_w(pre + "post_attention_layernorm", bias=False)
        if kind == "phi3":
            gu = m.p(pre + "mlp.gate_up_proj.weight", 2 * I, E)
            g, u = gu[:I], gu[I:]
        else:
            g = m.p(pre + "mlp.gate_proj.weight", I, E)
            u = m.p(pre + "mlp.up_proj.weight", I, E)
        dn = m.p(pre + "mlp.down_proj.weight", E, I)
        slides = window_from is None or i >= window_from
        a, w = attention(rms_norm(x, n1 + off, eps), wq, bq, wk, bk, wv, bv, wo, None, hkv,
                         True, rot, window if slides else None)
        x = x + a
        h = rms_norm(x, n2 + off, eps)
        x = x + linear(ACT[act](linear(h, g)) * linear(h, u), dn)
        ws.append(w)
        hs.append(x)
    nf, _ = m.norm_w("model.norm", bias=False)
    hs[-1] = rms_norm(x, nf + off, eps)
    return cfg, ws, hs


def bert_family(m, kind, ids=IDS, keep=None):
    eps = 1e-12
    root = kind + "."
    if kind == "distilbert":
        cfg = {"model_type": kind, "dim": E, "n_heads": H, "n_layers": NL, "hidden_dim": I,
               "vocab_size": V, "max_position_embeddings": P, "activation": "gelu"}
    else:
        cfg = {"model_type": kind, "hidden_size": E, "num_attention_heads": H,
               "num_hidden_layers": NL, "intermediate_size": I, "vocab_size": V,
               "max_position_embeddings": P, "layer_norm_eps": eps, "hidden_act": "gelu",
               "type_vocab_size": 2, "pad_token_id": 1}
    x = m.p(root + "embeddings.word_embeddings.weight", V, E)[ids]
    pos = m.p(root + "embeddings.position_embeddings.weight", P, E)
    if kind == "roberta":  # create_position_ids_from_input_ids, padding_idx 1
        mask = np.array(ids) != 1
        x = x + pos[np.cumsum(mask) * mask + 1]
    else:
        x = x + pos[:L]
    if kind != "distilbert":
        x = x + m.p(root + "embeddings.token_type_embeddings.weight", 2, E)[0]
    x = layer_norm(x, *m.norm_w(root + "embeddings.LayerNorm"), eps)
    hs, ws = [x], []
    for i in range(NL):
        if kind == "distilbert":
            pre = root + "transformer.layer.%d." % i
            names = ["attention.q_lin", "attention.k_lin", "attention.v_lin",
                     "attention.out_lin", "sa_layer_norm", "ffn.lin1", "ffn.lin2",
                     "output_layer_norm"]
        else:
            pre = root + "encoder.layer.%d." % i
            names = ["attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense", "attention.output.LayerNorm",
                     "intermediate.dense", "output.dense", "output.LayerNorm"]
        proj = [(m.p(pre + n + ".weight", E, E), m.p(pre + n + ".bias", E)) for n in names[:4]]
        ln1 = m.norm_w(pre + names[4])
        up = (m.p(pre + names[5] + ".weight", I, E), m.p(pre + names[5] + ".bias", I))
        dn = (m.p(pre + names[6] + ".weight", E, I), m.p(pre + names[6] + ".bias", E))
        ln2 = m.norm_w(pre + names[7])
        a, w = attention(x, *proj[0], *proj[1], *proj[2], *proj[3], H, False, keep=keep)
        x = layer_norm(x + a, *ln1, eps)
        x = layer_norm(x + linear(ACT["gelu"](linear(x, *up)), *dn), *ln2, eps)
        ws.append(w)
        hs.append(x)
    return cfg, ws, hs


def opt(m, remove_final=False, ids=IDS, keep=None):
    cfg = {"model_type": "opt", "hidden_size": E, "num_attention_heads": H,
           "num_hidden_layers": NL, "ffn_dim": I, "vocab_size": V, "max_position_embeddings": P,
           "do_layer_norm_before": True, "activation_function": "relu",
           "word_embed_proj_dim": E, "_remove_final_layer_norm": remove_final}
    root = "model.decoder."
    # OPTDecoder.forward: positions cumsum(attention_mask) * mask - 1, table row + 2
    mask = np.ones(L, int) if keep is None else np.asarray(keep, int)
    at = np.cumsum(mask) * mask - 1 + 2
    x = m.p(root + "embed_tokens.weight", V, E)[ids] + m.p(root + "embed_positions.weight",
                                                           P + 2, E)[at]
    hs, ws = [x], []
    for i in range(NL):
        pre = root + "layers.%d." % i
        proj = [(m.p(pre + "self_attn.%s.weight" % n, E, E), m.p(pre + "self_attn.%s.bias" % n, E))
                for n in ["q_proj", "k_proj", "v_proj", "out_proj"]]
        ln1 = m.norm_w(pre + "self_attn_layer_norm")
        ln2 = m.norm_w(pre + "final_layer_norm")
        f1 = (m.p(pre + "fc1.weight", I, E), m.p(pre + "fc1.bias", I))
        f2 = (m.p(pre + "fc2.weight", E, I), m.p(pre + "fc2.bias", E))
        a, w = attention(layer_norm(x, *ln1, 1e-5), *proj[0], *proj[1], *proj[2], *proj[3], H,
                         True, keep=keep)
        x = x + a
        x = x + linear(ACT["relu"](linear(layer_norm(x, *ln2, 1e-5), *f1)), *f2)
        ws.append(w)
        hs.append(x)
    if not remove_final:  # OPTDecoder: final_layer_norm unless _remove_final_layer_norm
        hs[-1] = layer_norm(x, *m.norm_w(root + "final_layer_norm"), 1e-5)
    return cfg, ws, hs


def gpt_neox(m, parallel=True):
    rd = int(D * 0.5)
    cfg = {"model_type": "gpt_neox", "hidden_size": E, "num_attention_heads": H,
           "num_hidden_layers": NL, "intermediate_size": I, "vocab_size": V,
           "max_position_embeddings": P, "rotary_pct": 0.5, "rotary_emb_base": 10000,
           "layer_norm_eps": 1e-5, "hidden_act": "gelu", "use_parallel_residual": parallel}
    x = m.p("gpt_neox.embed_in.weight", V, E)[IDS]
    hs, ws = [x], []
    for i in range(NL):
        pre = "gpt_neox.layers.%d." % i
        ln1, ln2 = m.norm_w(pre + "input_layernorm"), m.norm_w(pre + "post_attention_layernorm")
        qkv = m.p(pre + "attention.query_key_value.weight", 3 * E, E)
        qkvb = m.p(pre + "attention.query_key_value.bias", 3 * E)
        # view(L, H, 3D): per head q | k | v
        wq = qkv.reshape(H, 3, D, E)[:, 0].reshape(E, E)
        wk = qkv.reshape(H, 3, D, E)[:, 1].reshape(E, E)
        wv = qkv.reshape(H, 3, D, E)[:, 2].reshape(E, E)
        bq, bk, bv = (qkvb.reshape(H, 3, D)[:, j].reshape(E) for j in range(3))
        wo = (m.p(pre + "attention.dense.weight", E, E), m.p(pre + "attention.dense.bias", E))
        up = (m.p(pre + "mlp.dense_h_to_4h.weight", I, E), m.p(pre + "mlp.dense_h_to_4h.bias", I))
        dn = (m.p(pre + "mlp.dense_4h_to_h.weight", E, I), m.p(pre + "mlp.dense_4h_to_h.bias", E))
        a, w = attention(layer_norm(x, *ln1, 1e-5), wq, bq, wk, bk, wv, bv, *wo, H, True,
                         lambda t: rope(t, rd, "neox"))
        mlp = lambda h: linear(ACT["gelu"](linear(h, *up)), *dn)  # noqa: E731
        if parallel:
            x = mlp(layer_norm(x, *ln2, 1e-5)) + a + x
        else:
            x = x + a
            x = mlp(layer_norm(x, *ln2, 1e-5)) + x
        ws.append(w)
        hs.append(x)
    hs[-1] = layer_norm(x, *m.norm_w("gpt_neox.final_layer_norm"), 1e-5)
    return cfg, ws, hs


def gptj(m):
    rd = 2
    cfg = {"model_type": "gptj", "n_embd": E, "n_head": H, "n_layer": NL, "n_positions": P,
           "vocab_size": V, "rotary_dim": rd, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu_new"}
    x = m.p("transformer.wte.weight", V, E)[IDS]
    hs, ws = [x], []
    for i in range(NL):
        pre = "transformer.h.%d." % i
        ln1 = m.norm_w(pre + "ln_1")
        wq, wk, wv, wo = (m.p(pre + "attn.%s.weight" % n, E, E)
                          for n in ["q_proj", "k_proj", "v_proj", "out_proj"])
        up = (m.p(pre + "mlp.fc_in.weight", I, E), m.p(pre + "mlp.fc_in.bias", I))
        dn = (m.p(pre + "mlp.fc_out.weight", E, I), m.p(pre + "mlp.fc_out.bias", E))
        h = layer_norm(x, *ln1, 1e-5)
        a, w = attention(h, wq, None, wk, None, wv, None, wo, None, H, True,
                         lambda t: rope(t, rd, "gptj"))
        x = a + linear(ACT["gelu_new"](linear(h, *up)), *dn) + x
        ws.append(w)
        hs.append(x)
    hs[-1] = layer_norm(x, *m.norm_w("transformer.ln_f"), 1e-5)
    return cfg, ws, hs


ARCHS = {
    "gpt2": lambda m, **kw: gpt2(m, **kw),
    "llama": lambda m: llama_family(m, "llama"),
    "bert": lambda m: bert_family(m, "bert"),
    "gpt_neox": gpt_neox,
    "gptj": gptj,
    "mistral": lambda m, **kw: llama_family(m, "mistral", **kw),
    "qwen2": lambda m, **kw: llama_family(m, "qwen2", **kw),
    "gemma": lambda m, **kw: llama_family(m, "gemma", **kw),
    "phi3": lambda m: llama_family(m, "phi3"),
    "opt": lambda m, **kw: opt(m, **kw),
    "roberta": lambda m, **kw: bert_family(m, "roberta", **kw),
    "distilbert": lambda m: bert_family(m, "distilbert"),
}


def write_model(folder, cfg, tensors, shards=1):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    names = sorted(tensors)
    if shards == 1:
        ref.write_safetensors(os.path.join(folder, "model.safetensors"),
                              [(k, "F32", tensors[k]) for k in names])
        return
    weight_map = {}
    for s in range(shards):
        shard = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = names[s::shards]
        ref.write_safetensors(os.path.join(folder, shard), [(k, "F32", tensors[k]) for k in part])
        weight_map.update({k: shard for k in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)


def build(arch, shards=1, seed=7, **kw):
    m = Model(seed)
    cfg, ws, hs = ARCHS[arch](m, **kw)
    folder = path("model-" + arch + ("-sharded" if shards > 1 else ""))
    write_model(folder, cfg, m.t, shards)
    with open(path("ids.json"), "w") as f:
        json.dump(IDS, f)
    return folder, np.array(ws), np.array(hs), m.t, cfg

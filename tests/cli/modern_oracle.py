"""The numpy float64 forward of the architectures added for issue #36, written from each
model's Hugging Face modeling_<type>.py (the commits docs/models.md names), on the tiny
random folders of forward_oracle.py (its sizes, ids, building blocks and writer).
Used by modern_forward_test.py.
"""
import math

import numpy as np

from forward_oracle import (ACT, D, E, H, I, IDS, NL, L, V, Model, attention, layer_norm,
                            linear, rms_norm, rope, write_model)
from harness import path

QPAS = 8.0  # query_pre_attn_scalar: a scale other than 1/sqrt(D)


def decoder(m, kind, softcap=2.0, window=3, pattern=None, layer_types=None, local_theta=100.0,
            qk_norm=True):
    """qwen3, olmo2, gemma2, gemma3_text: llama's MLP and RoPE, and what each adds:
    Qwen3Attention's q_norm/k_norm over each head (RMSNorm on head_dim, before RoPE);
    Olmo2Attention's over the whole projection, Olmo2DecoderLayer's post-norms only;
    Gemma2DecoderLayer's sandwich norms ((1 + w) RMSNorm), query_pre_attn_scalar,
    attn_logit_softcapping, sliding layers from layer_types ((i + 1) % 2 by default);
    Gemma3's q_norm/k_norm ((1 + w)) and its sliding layers on rope_local_base_freq."""
    hkv, eps = 2, 1e-6
    gemma = kind in ("gemma2", "gemma3_text")
    cfg = {"model_type": kind, "hidden_size": E, "num_attention_heads": H,
           "num_key_value_heads": hkv, "num_hidden_layers": NL, "intermediate_size": I,
           "vocab_size": V, "rms_norm_eps": eps, "hidden_act": "silu", "head_dim": D,
           "max_position_embeddings": 64}
    act, off, scale, cap, theta = "silu", 0.0, None, None, 10000.0
    sliding = [False] * NL
    if kind != "gemma3_text":
        cfg["rope_theta"] = theta
    if gemma:
        act, off = "gelu_pytorch_tanh", 1.0
        cfg.update(hidden_activation=act, query_pre_attn_scalar=QPAS, sliding_window=window)
        scale = QPAS ** -0.5
        cap = softcap
        cfg["attn_logit_softcapping"] = softcap
        if kind == "gemma2":
            sliding = [bool((i + 1) % 2) for i in range(NL)]
        else:  # Gemma3TextConfig: rope_theta 1e6 by default, layers by sliding_window_pattern
            theta = 1e6
            cfg["rope_local_base_freq"] = local_theta
            if pattern:
                cfg["sliding_window_pattern"] = pattern
            sliding = [bool((i + 1) % (pattern or 6)) for i in range(NL)]
        if layer_types is not None:
            cfg["layer_types"] = layer_types
            sliding = [t == "sliding_attention" for t in layer_types]
    x = m.p("model.embed_tokens.weight", V, E)[IDS]
    if gemma:  # the normalizer sqrt(hidden_size)
        x = x * math.sqrt(E)
    hs, ws = [x], []
    norm = lambda t, w: rms_norm(t, w + off, eps)  # noqa: E731
    for i in range(NL):
        pre = "model.layers.%d." % i
        n1 = None if kind == "olmo2" else m.norm_w(pre + "input_layernorm", bias=False)[0]
        wq = m.p(pre + "self_attn.q_proj.weight", H * D, E)
        wk = m.p(pre + "self_attn.k_proj.weight", hkv * D, E)
        wv = m.p(pre + "self_attn.v_proj.weight", hkv * D, E)
        wo = m.p(pre + "self_attn.o_proj.weight", E, H * D)
        qk = None
        if kind == "olmo2":  # Olmo2RMSNorm(H·D) on the projections
            qn = m.norm_w(pre + "self_attn.q_norm", bias=False, n=H * D)[0]
            kn = m.norm_w(pre + "self_attn.k_norm", bias=False, n=hkv * D)[0]
            qk = lambda q, k: (norm(q, qn), norm(k, kn))  # noqa: E731
        elif kind in ("qwen3", "gemma3_text"):  # RMSNorm(head_dim) after view(..., -1, D)
            qn = m.norm_w(pre + "self_attn.q_norm", bias=False, n=D)[0]
            kn = m.norm_w(pre + "self_attn.k_norm", bias=False, n=D)[0]
            qk = lambda q, k: (norm(q.reshape(-1, H, D), qn).reshape(-1, H * D),  # noqa: E731
                               norm(k.reshape(-1, hkv, D), kn).reshape(-1, hkv * D))
        if not qk_norm:  # the sensitivity check's llama: the norms there, not applied
            qk = None
        names = {"olmo2": ["post_attention_layernorm", None, "post_feedforward_layernorm"],
                 "qwen3": [None, "post_attention_layernorm", None]}.get(
            kind, ["post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm"])
        p1, n2, p2 = (None if n is None else m.norm_w(pre + n, bias=False)[0] for n in names)
        g = m.p(pre + "mlp.gate_proj.weight", I, E)
        u = m.p(pre + "mlp.up_proj.weight", I, E)
        dn = m.p(pre + "mlp.down_proj.weight", E, I)
        th = local_theta if kind == "gemma3_text" and sliding[i] else theta
        a, w = attention(x if n1 is None else norm(x, n1), wq, None, wk, None, wv, None, wo,
                         None, hkv, True, lambda t, th=th: rope(t, D, "neox", th),
                         window if sliding[i] else None, scale, qk=qk, softcap=cap)
        x = x + (a if p1 is None else norm(a, p1))
        h = x if n2 is None else norm(x, n2)
        f = linear(ACT[act](linear(h, g)) * linear(h, u), dn)
        x = x + (f if p2 is None else norm(f, p2))
        ws.append(w)
        hs.append(x)
    nf = m.norm_w("model.norm", bias=False)[0]
    hs[-1] = norm(x, nf)
    return cfg, ws, hs


def ln_family(m, kind, qk_layernorm=False, parallel=False, qkv_bias=False, window=None,
              partial=True, qk_norm=True):
    """phi, stablelm, starcoder2: LayerNorm models. PhiDecoderLayer: one input_layernorm,
    attn + mlp + x, dense with bias, fc1/fc2, partial RoPE, q_layernorm/k_layernorm
    (LayerNorm over head_dim, shared by the heads) with qk_layernorm, final_layernorm.
    StableLmDecoderLayer: llama's names, LayerNorm, partial RoPE, biases with use_qkv_bias,
    StableLmLayerNormPerHead (one LayerNorm without bias per head) with qk_layernorm,
    use_parallel_residual. Starcoder2: biases everywhere (use_bias), c_fc/c_proj,
    norm_epsilon, sliding_window."""
    eps = 1e-5
    hkv = H if kind == "phi" else 2
    cfg = {"model_type": kind, "hidden_size": E, "num_attention_heads": H,
           "num_key_value_heads": hkv, "num_hidden_layers": NL, "intermediate_size": I,
           "vocab_size": V, "rope_theta": 10000.0, "max_position_embeddings": 64}
    rd = D // 2 if partial and kind != "starcoder2" else D  # StarCoder2: full RoPE
    if kind == "phi":
        act = "gelu_new"
        cfg.update(layer_norm_eps=eps, hidden_act=act, qk_layernorm=qk_layernorm)
        if partial:
            cfg["partial_rotary_factor"] = 0.5
    elif kind == "stablelm":  # 0.25 (its default) of D = 4 is one feature: 0.5 here
        act = "silu"
        cfg.update(layer_norm_eps=eps, hidden_act=act, qk_layernorm=qk_layernorm,
                   use_parallel_residual=parallel, use_qkv_bias=qkv_bias,
                   partial_rotary_factor=0.5 if partial else 1.0)
    else:
        act = "gelu_pytorch_tanh"
        cfg.update(norm_epsilon=eps, hidden_act=act, use_bias=True, sliding_window=window)
    x = m.p("model.embed_tokens.weight", V, E)[IDS]
    hs, ws = [x], []
    ln = lambda t, wb: layer_norm(t, wb[0], wb[1], eps)  # noqa: E731
    for i in range(NL):
        pre = "model.layers.%d." % i
        n1 = m.norm_w(pre + "input_layernorm")
        bias = kind != "stablelm" or qkv_bias
        proj = []
        for n, rows in (("q_proj", H * D), ("k_proj", hkv * D), ("v_proj", hkv * D)):
            proj += [m.p(pre + "self_attn.%s.weight" % n, rows, E),
                     m.p(pre + "self_attn.%s.bias" % n, rows) if bias else None]
        o = "self_attn.dense" if kind == "phi" else "self_attn.o_proj"
        wo = m.p(pre + o + ".weight", E, H * D)
        bo = m.p(pre + o + ".bias", E) if kind != "stablelm" else None
        qk = None
        if qk_layernorm and kind == "phi":  # one LayerNorm(head_dim) for every head
            qn, kn = m.norm_w(pre + "self_attn.q_layernorm", n=D), m.norm_w(
                pre + "self_attn.k_layernorm", n=D)
            qk = lambda q, k: (ln(q.reshape(-1, H, D), qn).reshape(-1, H * D),  # noqa: E731
                               ln(k.reshape(-1, hkv, D), kn).reshape(-1, hkv * D))
        elif qk_layernorm:  # StableLmLayerNormPerHead: head h its own weight, no bias
            qn = [m.norm_w(pre + "self_attn.q_layernorm.norms.%d" % h, False, D)[0]
                  for h in range(H)]
            kn = [m.norm_w(pre + "self_attn.k_layernorm.norms.%d" % h, False, D)[0]
                  for h in range(hkv)]

            def qk(q, k, qn=qn, kn=kn):
                q = np.stack([layer_norm(q[:, h * D:(h + 1) * D], qn[h], None, eps)
                              for h in range(H)], 1)
                k = np.stack([layer_norm(k[:, h * D:(h + 1) * D], kn[h], None, eps)
                              for h in range(hkv)], 1)
                return q.reshape(-1, H * D), k.reshape(-1, hkv * D)
        if not qk_norm:  # the sensitivity check's: the norms there, not applied
            qk = None
        n2 = None if kind == "phi" or parallel else m.norm_w(pre + "post_attention_layernorm")
        if kind == "stablelm":
            g = m.p(pre + "mlp.gate_proj.weight", I, E)
            u = m.p(pre + "mlp.up_proj.weight", I, E)
            dn = m.p(pre + "mlp.down_proj.weight", E, I)
            mlp = lambda h, g=g, u=u, dn=dn: linear(  # noqa: E731
                ACT[act](linear(h, g)) * linear(h, u), dn)
        else:
            up_name, down_name = ("mlp.fc1", "mlp.fc2") if kind == "phi" else ("mlp.c_fc",
                                                                              "mlp.c_proj")
            up = (m.p(pre + up_name + ".weight", I, E), m.p(pre + up_name + ".bias", I))
            dn = (m.p(pre + down_name + ".weight", E, I), m.p(pre + down_name + ".bias", E))
            mlp = lambda h, up=up, dn=dn: linear(ACT[act](linear(h, *up)), *dn)  # noqa: E731
        h = ln(x, n1)
        a, w = attention(h, *proj, wo, bo, hkv, True, lambda t: rope(t, rd, "neox"), window,
                         qk=qk)
        if n2 is None:  # Phi, StableLM use_parallel_residual: attn + mlp(ln1) + x
            x = x + a + mlp(h)
        else:
            x = x + a
            x = x + mlp(ln(x, n2))
        ws.append(w)
        hs.append(x)
    hs[-1] = ln(x, m.norm_w("model.final_layernorm" if kind == "phi" else "model.norm"))
    return cfg, ws, hs


def gpt_bigcode(m, multi_query=True):
    """GPTBigCodeBlock: ln_1, c_attn (nn.Linear) split (E, 2·D) with multi_query (one key
    and value head) else view(H, 3D) per head, scores · 1/√D, c_proj; ln_2, c_fc/c_proj;
    learned wpe; ln_f."""
    eps = 1e-5
    cfg = {"model_type": "gpt_bigcode", "n_embd": E, "n_head": H, "n_layer": NL,
           "n_positions": 64, "n_inner": I, "vocab_size": V, "layer_norm_epsilon": eps,
           "activation_function": "gelu_pytorch_tanh", "multi_query": multi_query,
           "scale_attn_weights": True}
    root = "transformer."
    x = m.p(root + "wte.weight", V, E)[IDS] + m.p(root + "wpe.weight", 64, E)[:L]
    hs, ws = [x], []
    ln = lambda t, wb: layer_norm(t, wb[0], wb[1], eps)  # noqa: E731
    hkv = 1 if multi_query else H
    for i in range(NL):
        pre = root + "h.%d." % i
        n1 = m.norm_w(pre + "ln_1")
        rows = E + 2 * hkv * D
        w, b = m.p(pre + "attn.c_attn.weight", rows, E), m.p(pre + "attn.c_attn.bias", rows)
        if multi_query:  # split((embed_dim, 2 * kv_dim)), then (head_dim, head_dim)
            parts = [(w[:E], b[:E]), (w[E:E + D], b[E:E + D]), (w[E + D:], b[E + D:])]
        else:  # view(H, 3 * head_dim): per head q | k | v
            parts = [(w.reshape(H, 3, D, E)[:, j].reshape(E, E),
                      b.reshape(H, 3, D)[:, j].reshape(E)) for j in range(3)]
        wo = (m.p(pre + "attn.c_proj.weight", E, E), m.p(pre + "attn.c_proj.bias", E))
        n2 = m.norm_w(pre + "ln_2")
        up = (m.p(pre + "mlp.c_fc.weight", I, E), m.p(pre + "mlp.c_fc.bias", I))
        dn = (m.p(pre + "mlp.c_proj.weight", E, I), m.p(pre + "mlp.c_proj.bias", E))
        a, wt = attention(ln(x, n1), *parts[0], *parts[1], *parts[2], *wo, hkv, True)
        x = x + a
        x = x + linear(ACT["gelu_pytorch_tanh"](linear(ln(x, n2), *up)), *dn)
        ws.append(wt)
        hs.append(x)
    hs[-1] = ln(x, m.norm_w(root + "ln_f"))
    return cfg, ws, hs


def falcon(m, new=False, multi_query=True, parallel=True, n_ln=None, bias=False):
    """FalconDecoderLayer: query_key_value split by _split_heads (new_decoder_architecture:
    view(Hkv, H/Hkv + 2, D), each group's query heads then its k and v; multi_query: view(H
    + 2, D); else view(H, 3, D)), RoPE, dense; ln_attn and ln_mlp (new, num_ln_in_parallel_attn
    2) or input_layernorm; mlp(...) + attn + x, or post_attention_layernorm before the MLP
    without parallel_attn; gelu (erf); ln_f."""
    eps = 1e-5
    hkv = 2 if new else (1 if multi_query else H)
    cfg = {"model_type": "falcon", "hidden_size": E, "num_attention_heads": H,
           "num_hidden_layers": NL, "vocab_size": V, "layer_norm_epsilon": eps,
           "new_decoder_architecture": new, "multi_query": multi_query,
           "parallel_attn": parallel, "bias": bias, "alibi": False, "rope_theta": 10000.0,
           "num_kv_heads": hkv if new else H, "num_ln_in_parallel_attn": n_ln}
    ln = lambda t, wb: layer_norm(t, wb[0], wb[1], eps)  # noqa: E731
    x = m.p("transformer.word_embeddings.weight", V, E)[IDS]
    hs, ws = [x], []
    for i in range(NL):
        pre = "transformer.h.%d." % i
        two = new and (n_ln or 2) == 2
        if two:
            n1, n_mlp = m.norm_w(pre + "ln_attn"), m.norm_w(pre + "ln_mlp")
        else:
            n1 = m.norm_w(pre + "input_layernorm")
            n_mlp = None if parallel else m.norm_w(pre + "post_attention_layernorm")
        rows = (H + 2 * hkv) * D
        w = m.p(pre + "self_attention.query_key_value.weight", rows, E)
        b = m.p(pre + "self_attention.query_key_value.bias", rows) if bias else np.zeros(rows)
        if new:
            g = H // hkv
            wv, bv = w.reshape(hkv, g + 2, D, E), b.reshape(hkv, g + 2, D)
            parts = [(wv[:, :g].reshape(H * D, E), bv[:, :g].reshape(H * D)),
                     (wv[:, g].reshape(hkv * D, E), bv[:, g].reshape(hkv * D)),
                     (wv[:, g + 1].reshape(hkv * D, E), bv[:, g + 1].reshape(hkv * D))]
        elif multi_query:
            parts = [(w[:E], b[:E]), (w[E:E + D], b[E:E + D]), (w[E + D:], b[E + D:])]
        else:
            parts = [(w.reshape(H, 3, D, E)[:, j].reshape(E, E),
                      b.reshape(H, 3, D)[:, j].reshape(E)) for j in range(3)]
        wo = (m.p(pre + "self_attention.dense.weight", E, E),
              m.p(pre + "self_attention.dense.bias", E) if bias else None)
        up = (m.p(pre + "mlp.dense_h_to_4h.weight", I, E),
              m.p(pre + "mlp.dense_h_to_4h.bias", I) if bias else None)
        dn = (m.p(pre + "mlp.dense_4h_to_h.weight", E, I),
              m.p(pre + "mlp.dense_4h_to_h.bias", E) if bias else None)
        mlp = lambda h, up=up, dn=dn: linear(ACT["gelu"](linear(h, *up)), *dn)  # noqa: E731
        h1 = ln(x, n1)
        a, wt = attention(h1, *parts[0], *parts[1], *parts[2], *wo, hkv, True,
                          lambda t: rope(t, D, "neox"))
        if new or parallel:
            x = mlp(ln(x, n_mlp) if two else h1) + a + x
        else:
            x = x + a
            x = x + mlp(ln(x, n_mlp))
        ws.append(wt)
        hs.append(x)
    hs[-1] = ln(x, m.norm_w("transformer.ln_f"))
    return cfg, ws, hs


def bloom_slopes(n_head):
    """build_alibi_tensor's slopes: 2^(-8/n)^(1..n) for n the largest power of two <= H,
    then 2^(-4/n)^(1, 3, 5, ...) for the rest."""
    n = 2 ** math.floor(math.log2(n_head))
    base = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
    slopes = [base ** p for p in range(1, n + 1)]
    if n != n_head:
        extra = 2.0 ** (-(2.0 ** -(math.log2(2 * n) - 3)))
        slopes += [extra ** p for p in range(1, 1 + 2 * min(n, n_head - n), 2)]
    return np.array(slopes)


def bloom(m, alibi=True):
    """BloomBlock: word_embeddings_layernorm; input_layernorm, query_key_value view(H, 3, D),
    scores = alibi + q·kᵀ/√D (alibi: slope_h · key position), dense; post_attention_layernorm,
    dense_h_to_4h (4E), BloomGelu, dense_4h_to_h; ln_f."""
    eps = 1e-5
    cfg = {"model_type": "bloom", "hidden_size": E, "n_head": H, "n_layer": NL,
           "vocab_size": V, "layer_norm_epsilon": eps}
    ln = lambda t, wb: layer_norm(t, wb[0], wb[1], eps)  # noqa: E731
    gelu = lambda t: t * 0.5 * (1.0 + np.tanh(0.79788456 * t * (1 + 0.044715 * t * t)))  # noqa
    x = ln(m.p("transformer.word_embeddings.weight", V, E)[IDS],
           m.norm_w("transformer.word_embeddings_layernorm"))
    bias = bloom_slopes(H)[:, None, None] * np.arange(L)[None, None, :] if alibi else None
    hs, ws = [x], []
    for i in range(NL):
        pre = "transformer.h.%d." % i
        n1 = m.norm_w(pre + "input_layernorm")
        w = m.p(pre + "self_attention.query_key_value.weight", 3 * E, E)
        b = m.p(pre + "self_attention.query_key_value.bias", 3 * E)
        parts = [(w.reshape(H, 3, D, E)[:, j].reshape(E, E), b.reshape(H, 3, D)[:, j].reshape(E))
                 for j in range(3)]
        wo = (m.p(pre + "self_attention.dense.weight", E, E),
              m.p(pre + "self_attention.dense.bias", E))
        n2 = m.norm_w(pre + "post_attention_layernorm")
        up = (m.p(pre + "mlp.dense_h_to_4h.weight", 4 * E, E),
              m.p(pre + "mlp.dense_h_to_4h.bias", 4 * E))
        dn = (m.p(pre + "mlp.dense_4h_to_h.weight", E, 4 * E),
              m.p(pre + "mlp.dense_4h_to_h.bias", E))
        a, wt = attention(ln(x, n1), *parts[0], *parts[1], *parts[2], *wo, H, True, bias=bias)
        x = x + a
        x = x + linear(gelu(linear(ln(x, n2), *up)), *dn)
        ws.append(wt)
        hs.append(x)
    hs[-1] = ln(x, m.norm_w("transformer.ln_f"))
    return cfg, ws, hs


def moe(m, kind, experts=4, top_k=2, normalize=None, shared=True, step=1, dense=(),
        flip_norm=False, used=None):
    """mixtral, qwen2_moe: llama's attention (Qwen2-MoE's with q/k/v biases) and, for the
    MLP, MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock: softmax(gate(x)) in float, topk,
    divided by the top-k sum (Mixtral always; Qwen2-MoE with norm_topk_prob), each expert
    down(act(gate(x)) * up(x)) times its weight added per token; Qwen2-MoE adds
    sigmoid(shared_expert_gate(x)) * shared_expert(x). Qwen2-MoE's layers in mlp_only_layers
    or off decoder_sparse_step keep the dense mlp. `used` collects (layer, expert) routed to;
    `flip_norm` (sensitivity check) renormalizes the other way."""
    hkv, eps, ie = 2, 1e-6, 8
    mixtral = kind == "mixtral"
    cfg = {"model_type": kind, "hidden_size": E, "num_attention_heads": H,
           "num_key_value_heads": hkv, "num_hidden_layers": NL, "intermediate_size": I,
           "vocab_size": V, "rms_norm_eps": eps, "rope_theta": 10000.0, "hidden_act": "silu",
           "max_position_embeddings": 64, "num_experts_per_tok": top_k}
    if mixtral:
        cfg.update(num_local_experts=experts)
        norm = True
        names = ("block_sparse_moe.gate", "block_sparse_moe.experts.%d.", "w1", "w3", "w2")
    else:
        cfg.update(num_experts=experts, moe_intermediate_size=ie, decoder_sparse_step=step,
                   shared_expert_intermediate_size=ie, mlp_only_layers=list(dense))
        if normalize is not None:
            cfg["norm_topk_prob"] = normalize
        norm = bool(normalize)
        names = ("mlp.gate", "mlp.experts.%d.", "gate_proj", "up_proj", "down_proj")
    norm = norm != flip_norm
    x = m.p("model.embed_tokens.weight", V, E)[IDS]
    hs, ws = [x], []
    gated = lambda h, g, u, d: linear(ACT["silu"](linear(h, g)) * linear(h, u), d)  # noqa
    for i in range(NL):
        pre = "model.layers.%d." % i
        n1 = m.norm_w(pre + "input_layernorm", bias=False)[0]
        proj = []
        for n, rows in (("q_proj", H * D), ("k_proj", hkv * D), ("v_proj", hkv * D)):
            proj += [m.p(pre + "self_attn.%s.weight" % n, rows, E),
                     None if mixtral else m.p(pre + "self_attn.%s.bias" % n, rows)]
        wo = m.p(pre + "self_attn.o_proj.weight", E, H * D)
        n2 = m.norm_w(pre + "post_attention_layernorm", bias=False)[0]
        sparse = mixtral or (i not in dense and (i + 1) % step == 0)
        if not sparse:  # Qwen2MoeMLP(intermediate_size)
            mats = [m.p(pre + "mlp.%s.weight" % n, *sh) for n, sh in
                    (("gate_proj", (I, E)), ("up_proj", (I, E)), ("down_proj", (E, I)))]
            ffn = lambda h, mats=mats: gated(h, *mats)  # noqa: E731
        else:
            router = m.p(pre + names[0] + ".weight", experts, E)
            ex = [[m.p(pre + names[1] % e + n + ".weight", *sh) for n, sh in
                   ((names[2], (ie, E)), (names[3], (ie, E)), (names[4], (E, ie)))]
                  for e in range(experts)]
            sh_mats = sh_gate = None
            if not mixtral:
                sh_mats = [m.p(pre + "mlp.shared_expert.%s.weight" % n, *sz) for n, sz in
                           (("gate_proj", (ie, E)), ("up_proj", (ie, E)), ("down_proj", (E, ie)))]
                sh_gate = m.p(pre + "mlp.shared_expert_gate.weight", 1, E)

            def ffn(h, router=router, ex=ex, sh_mats=sh_mats, sh_gate=sh_gate, layer=i):
                logits = h @ router.T
                p = np.exp(logits - logits.max(-1, keepdims=True))
                p = p / p.sum(-1, keepdims=True)
                out = np.zeros_like(h)
                for t in range(h.shape[0]):
                    top = np.argsort(-p[t], kind="stable")[:top_k]
                    wt = p[t, top] / (p[t, top].sum() if norm else 1.0)
                    for e, we in zip(top, wt):
                        out[t] += we * gated(h[t:t + 1], *ex[e])[0]
                        if used is not None:
                            used.add((layer, int(e)))
                if sh_mats is not None and shared:
                    out = out + 1 / (1 + np.exp(-(h @ sh_gate.T))) * gated(h, *sh_mats)
                return out
        rot = lambda t: rope(t, D, "neox")  # noqa: E731
        a, w = attention(rms_norm(x, n1, eps), *proj, wo, None, hkv, True, rot)
        x = x + a
        x = x + ffn(rms_norm(x, n2, eps))
        ws.append(w)
        hs.append(x)
    hs[-1] = rms_norm(x, m.norm_w("model.norm", bias=False)[0], eps)
    return cfg, ws, hs


ARCHS = {
    "qwen3": lambda m, **kw: decoder(m, "qwen3", **kw),
    "olmo2": lambda m, **kw: decoder(m, "olmo2", **kw),
    "gemma2": lambda m, **kw: decoder(m, "gemma2", **kw),
    "gemma3_text": lambda m, **kw: decoder(m, "gemma3_text", **kw),
    "phi": lambda m, **kw: ln_family(m, "phi", **kw),
    "stablelm": lambda m, **kw: ln_family(m, "stablelm", **kw),
    "starcoder2": lambda m, **kw: ln_family(m, "starcoder2", **kw),
    "gpt_bigcode": gpt_bigcode,
    "falcon": falcon,
    "bloom": bloom,
    "mixtral": lambda m, **kw: moe(m, "mixtral", **kw),
    "qwen2_moe": lambda m, **kw: moe(m, "qwen2_moe", **kw),
}


def build(arch, name=None, seed=11, **kw):
    """The folder (written), the reference weights [layers, H, L, L] and hidden states, the
    tensors and the config."""
    m = Model(seed)
    cfg, ws, hs = ARCHS[arch](m, **kw)
    folder = path("model-" + (name or arch))
    write_model(folder, cfg, m.t)
    return folder, np.array(ws), np.array(hs), m.t, cfg

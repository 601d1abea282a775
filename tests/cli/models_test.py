#!/usr/bin/env python3
"""Real models layer by layer: a tiny GPT-2, llama (GQA, llama-3 RoPE scaling) and BERT,
each a float64 NumPy forward pass written here from the Hugging Face modeling code
(embeddings -> per layer: norm, attention, MLP, residual), saved as .safetensors with the
exact Hugging Face tensor names and shapes (with the buffers attn does not need: GPT-2's
attn.bias, BERT's int64 position_ids) and a config.json. attn, given a layer's hidden state
(or the token ids for layer 0) and the checkpoint, reproduces that layer's attention
weights. One case per check.

/usr/bin/python3 tests/cli/models_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import sys

import numpy as np

from harness import ROOT, TMP, check, keep, main, run, test

sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import reference as ref  # noqa: E402

RNG = np.random.default_rng(1515)
B, L, V = 2, 7, 50


# --- files --------------------------------------------------------------------------------

def save_safetensors(file, tensors):
    """The Hugging Face format: float32 and int64 tensors, in the given order."""
    dtypes = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}
    ref.write_safetensors(file, [(name, dtypes[a.dtype], a) for name, a in tensors.items()])


def model_dir(name, tensors, config):
    """TMP/name/{model.safetensors, config.json}; tensors rounded to float32."""
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    save_safetensors(os.path.join(d, "model.safetensors"), tensors)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    return keep(d)


def exact32(t):
    """Every tensor rounded to float32 (what the checkpoint holds), as float64."""
    return {k: v.astype(np.float32).astype(np.float64) for k, v in t.items()}


def w(*shape, scale=0.5):
    """A random float32 weight, returned as float64 (exact) for the forward pass."""
    return RNG.normal(0, scale, shape).astype(np.float32).astype(np.float64)


# --- the reference forward passes (float64) -----------------------------------------------

def layer_norm(x, g, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def rms_norm(x, g, eps):  # LlamaRMSNorm
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * g


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def heads(x, h):  # [B, L, h*D] -> [B, h, L, D]
    return x.reshape(x.shape[0], x.shape[1], h, -1).transpose(0, 2, 1, 3)


def merge(x):  # [B, h, L, D] -> [B, L, h*D]
    return x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)


def attention(q, k, v, causal, keep=None):
    """q [B, H, L, D], k/v [B, H, L, D]; keep [B, L] (HF attention_mask). Weights, output."""
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    n = q.shape[2]
    if causal:
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    if keep is not None:
        s = np.where(keep[:, None, None, :].astype(bool), s, -np.inf)
    p = softmax(s)
    return p, p @ v


def gelu(x):  # GPT-2's gelu_new
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def llama3_inv_freq(theta, dim, s):  # modeling_rope_utils._compute_llama3_parameters
    inv = 1.0 / theta ** (np.arange(0, dim, 2) / dim)
    low_wl = s["original_max_position_embeddings"] / s["low_freq_factor"]
    high_wl = s["original_max_position_embeddings"] / s["high_freq_factor"]
    wl = 2 * np.pi / inv
    out = np.where(wl > low_wl, inv / s["factor"], inv)
    smooth = (s["original_max_position_embeddings"] / wl - s["low_freq_factor"]) / (
        s["high_freq_factor"] - s["low_freq_factor"])
    smoothed = (1 - smooth) * out / s["factor"] + smooth * out
    medium = ~(wl < high_wl) & ~(wl > low_wl)
    return np.where(medium, smoothed, out)


def rotate(x, inv):  # apply_rotary_pos_emb with rotate_half, positions 0..L-1
    f = np.arange(x.shape[2])[:, None] * inv[None]
    emb = np.concatenate([f, f], -1)
    half = x.shape[-1] // 2
    turned = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * np.cos(emb) + turned * np.sin(emb)


def gpt2():
    e, h, n, p = 16, 4, 2, 16
    t = {"wte.weight": w(V, e), "wpe.weight": w(p, e)}
    for i in range(n):
        t |= {f"h.{i}.ln_1.weight": 1 + w(e, scale=0.1), f"h.{i}.ln_1.bias": w(e, scale=0.1),
              f"h.{i}.attn.bias": np.tril(np.ones((1, 1, p, p))),  # the mask buffer
              f"h.{i}.attn.c_attn.weight": w(e, 3 * e), f"h.{i}.attn.c_attn.bias": w(3 * e),
              f"h.{i}.attn.c_proj.weight": w(e, e), f"h.{i}.attn.c_proj.bias": w(e),
              f"h.{i}.ln_2.weight": 1 + w(e, scale=0.1), f"h.{i}.ln_2.bias": w(e, scale=0.1),
              f"h.{i}.mlp.c_fc.weight": w(e, 4 * e), f"h.{i}.mlp.c_fc.bias": w(4 * e),
              f"h.{i}.mlp.c_proj.weight": w(4 * e, e), f"h.{i}.mlp.c_proj.bias": w(e)}
    t |= {"ln_f.weight": 1 + w(e, scale=0.1), "ln_f.bias": w(e, scale=0.1)}
    t = exact32(t)
    eps = 1e-5
    ids = RNG.integers(0, V, (B, L))
    x = t["wte.weight"][ids] + t["wpe.weight"][np.arange(L)][None]
    hidden, weights = [x], []
    for i in range(n):
        g = lambda k: t[f"h.{i}.{k}"]  # noqa: E731
        a = layer_norm(x, g("ln_1.weight"), g("ln_1.bias"), eps)
        q, k, v = np.split(a @ g("attn.c_attn.weight") + g("attn.c_attn.bias"), 3, -1)
        pw, o = attention(heads(q, h), heads(k, h), heads(v, h), causal=True)
        x = x + merge(o) @ g("attn.c_proj.weight") + g("attn.c_proj.bias")
        m = layer_norm(x, g("ln_2.weight"), g("ln_2.bias"), eps)
        x = x + gelu(m @ g("mlp.c_fc.weight") + g("mlp.c_fc.bias")) @ g(
            "mlp.c_proj.weight") + g("mlp.c_proj.bias")
        hidden.append(x)
        weights.append(pw)
    config = {"model_type": "gpt2", "n_embd": e, "n_head": h, "n_layer": n, "n_positions": p,
              "layer_norm_epsilon": eps, "vocab_size": V, "activation_function": "gelu_new"}
    d = model_dir("gpt2", {k: v.astype(np.float32) for k, v in t.items()}, config)
    return d, ids, hidden, weights, [f"h.{i}.attn." for i in range(n)]


def llama():
    e, h, hkv, dh, n = 16, 4, 2, 8, 2
    theta = 500000.0
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    t = {"model.embed_tokens.weight": w(V, e)}
    for i in range(n):
        pre = f"model.layers.{i}."
        t |= {pre + "input_layernorm.weight": 1 + w(e, scale=0.1),
              pre + "self_attn.q_proj.weight": w(h * dh, e),
              pre + "self_attn.k_proj.weight": w(hkv * dh, e),
              pre + "self_attn.v_proj.weight": w(hkv * dh, e),
              pre + "self_attn.o_proj.weight": w(e, h * dh),
              pre + "post_attention_layernorm.weight": 1 + w(e, scale=0.1),
              pre + "mlp.gate_proj.weight": w(32, e), pre + "mlp.up_proj.weight": w(32, e),
              pre + "mlp.down_proj.weight": w(e, 32)}
    t |= {"model.norm.weight": 1 + w(e, scale=0.1), "lm_head.weight": w(V, e)}
    t = exact32(t)
    eps = 1e-6
    inv = llama3_inv_freq(theta, dh, scaling)
    ids = RNG.integers(0, V, (B, L))
    x = t["model.embed_tokens.weight"][ids]
    hidden, weights = [x], []
    for i in range(n):
        g = lambda k: t[f"model.layers.{i}.{k}"]  # noqa: E731
        a = rms_norm(x, g("input_layernorm.weight"), eps)
        q = rotate(heads(a @ g("self_attn.q_proj.weight").T, h), inv)
        k = rotate(heads(a @ g("self_attn.k_proj.weight").T, hkv), inv)
        v = heads(a @ g("self_attn.v_proj.weight").T, hkv)
        k, v = np.repeat(k, h // hkv, 1), np.repeat(v, h // hkv, 1)  # repeat_kv
        pw, o = attention(q, k, v, causal=True)
        x = x + merge(o) @ g("self_attn.o_proj.weight").T
        m = rms_norm(x, g("post_attention_layernorm.weight"), eps)
        gate = m @ g("mlp.gate_proj.weight").T
        x = x + (gate / (1 + np.exp(-gate)) * (m @ g("mlp.up_proj.weight").T)) @ g(
            "mlp.down_proj.weight").T
        hidden.append(x)
        weights.append(pw)
    config = {"model_type": "llama", "hidden_size": e, "num_attention_heads": h,
              "num_key_value_heads": hkv, "head_dim": dh, "num_hidden_layers": n,
              "rms_norm_eps": eps, "rope_theta": theta, "rope_scaling": scaling,
              "vocab_size": V, "max_position_embeddings": 131072}
    d = model_dir("llama", {k: v.astype(np.float32) for k, v in t.items()}, config)
    return d, ids, hidden, weights, [f"model.layers.{i}.self_attn." for i in range(n)]


def bert():
    e, h, n, p = 16, 2, 2, 16
    eps = 1e-12
    pre = "bert.embeddings."
    t = {pre + "word_embeddings.weight": w(V, e), pre + "position_embeddings.weight": w(p, e),
         pre + "token_type_embeddings.weight": w(2, e),
         pre + "LayerNorm.weight": 1 + w(e, scale=0.1), pre + "LayerNorm.bias": w(e, scale=0.1)}
    for i in range(n):
        lp = f"bert.encoder.layer.{i}."
        for part in ("query", "key", "value"):
            t |= {lp + f"attention.self.{part}.weight": w(e, e),
                  lp + f"attention.self.{part}.bias": w(e)}
        t |= {lp + "attention.output.dense.weight": w(e, e), lp + "attention.output.dense.bias": w(e),
              lp + "attention.output.LayerNorm.weight": 1 + w(e, scale=0.1),
              lp + "attention.output.LayerNorm.bias": w(e, scale=0.1),
              lp + "intermediate.dense.weight": w(32, e), lp + "intermediate.dense.bias": w(32),
              lp + "output.dense.weight": w(e, 32), lp + "output.dense.bias": w(e),
              lp + "output.LayerNorm.weight": 1 + w(e, scale=0.1),
              lp + "output.LayerNorm.bias": w(e, scale=0.1)}
    t = exact32(t)
    ids = RNG.integers(0, V, (B, L))
    keep = np.ones((B, L), np.int64)
    keep[1, 5:] = 0  # the second sequence is right-padded (HF attention_mask)
    x = t[pre + "word_embeddings.weight"][ids] + t[pre + "token_type_embeddings.weight"][0] + \
        t[pre + "position_embeddings.weight"][np.arange(L)][None]
    x = layer_norm(x, t[pre + "LayerNorm.weight"], t[pre + "LayerNorm.bias"], eps)
    hidden, weights = [x], []
    for i in range(n):
        g = lambda k: t[f"bert.encoder.layer.{i}.{k}"]  # noqa: E731
        lin = lambda a, k: a @ g(k + ".weight").T + g(k + ".bias")  # noqa: E731
        q, k, v = (heads(lin(x, f"attention.self.{s}"), h) for s in ("query", "key", "value"))
        pw, o = attention(q, k, v, causal=False, keep=keep)
        x = layer_norm(x + lin(merge(o), "attention.output.dense"),
                       g("attention.output.LayerNorm.weight"), g("attention.output.LayerNorm.bias"),
                       eps)
        m = lin(x, "intermediate.dense")
        m = 0.5 * m * (1 + np.vectorize(__import__("math").erf)(m / np.sqrt(2)))
        x = layer_norm(x + lin(m, "output.dense"), g("output.LayerNorm.weight"),
                       g("output.LayerNorm.bias"), eps)
        hidden.append(x)
        weights.append(pw)
    tensors = {k: v.astype(np.float32) for k, v in t.items()}
    tensors[pre + "position_ids"] = np.arange(p, dtype=np.int64)[None]  # a buffer, int64
    config = {"model_type": "bert", "hidden_size": e, "num_attention_heads": h,
              "num_hidden_layers": n, "layer_norm_eps": eps, "max_position_embeddings": p,
              "type_vocab_size": 2, "vocab_size": V}
    d = model_dir("bert", tensors, config)
    np.save(os.path.join(d, "attention_mask.npy"), keep)
    return d, ids, hidden, weights, [f"bert.encoder.layer.{i}.attention." for i in range(n)]


MODELS = {}


def model(name):
    if name not in MODELS:
        MODELS[name] = {"gpt2": gpt2, "llama": llama, "bert": bert}[name]()
    return MODELS[name]


EXTRA = {"gpt2": ["--causal"], "llama": ["--causal"], "bert": ["--key-padding", "attention_mask.npy"]}


def weights_of(name, source, prefix, *flags, dtype="f32"):
    """Runs attn on a layer of the model; returns its weights (or None)."""
    d = model(name)[0]
    out = os.path.join(d, "w.npy")
    rc, _, err = run(["compute", *source, "--params", "model.safetensors", "--prefix", prefix,
                      *EXTRA[name], "--weights", out, "--dtype", dtype, *flags], cwd=d)
    check("exit 0", rc == 0, err)
    return np.load(out).astype(np.float64) if rc == 0 else None


def close(name, got, want, tol):
    err = float(np.max(np.abs(got - want))) if got is not None else None
    check(name, got is not None and got.shape == want.shape and err <= tol,
          f"shape {None if got is None else got.shape} vs {want.shape}, max error {err}")


for NAME in ("gpt2", "llama", "bert"):
    @test(f"{NAME}: every layer's weights from its hidden state")
    def _(name=NAME):
        d, _, hidden, weights, prefixes = model(name)
        for i, prefix in enumerate(prefixes):
            np.save(os.path.join(d, f"hs{i}.npy"), hidden[i].astype(np.float32))
            got = weights_of(name, ["-x", f"hs{i}.npy"], prefix)
            close(f"layer {i}", got, weights[i], 2e-5)

    @test(f"{NAME}: f64 from float64 hidden states")
    def _(name=NAME):
        d, _, hidden, weights, prefixes = model(name)
        i = len(prefixes) - 1
        np.save(os.path.join(d, f"hs{i}_f8.npy"), hidden[i])
        got = weights_of(name, ["-x", f"hs{i}_f8.npy"], prefixes[i], "--precision", "f64",
                         dtype="f64")
        close(f"layer {i} f64", got, weights[i], 1e-10)

    @test(f"{NAME}: every layer in one call (--hidden-states)")
    def _(name=NAME):
        d, _, hidden, weights, _ = model(name)
        np.save(os.path.join(d, "hs_all.npy"), np.stack(hidden).astype(np.float32))
        out = os.path.join(d, "w_all.npy")
        rc, _, err = run(["compute", "--hidden-states", "hs_all.npy", "--params",
                          "model.safetensors", *EXTRA[name], "--weights", out], cwd=d)
        check("exit 0", rc == 0, err)
        got = np.load(out).astype(np.float64) if rc == 0 else None
        close("every layer, norm and RoPE in each", got, np.stack(weights), 2e-5)

    @test(f"{NAME}: layer 0 from token ids")
    def _(name=NAME):
        d, ids, _, weights, prefixes = model(name)
        np.save(os.path.join(d, "ids.npy"), ids.astype(np.int64))
        close("layer 0", weights_of(name, ["--token-ids", "ids.npy"], prefixes[0]), weights[0],
              2e-5)


@test("llama: --rope=off and --no-norm change the weights")
def _():
    d, _, hidden, weights, prefixes = model("llama")
    np.save(os.path.join(d, "hs1.npy"), hidden[1].astype(np.float32))
    for flag in ("--rope=off", "--no-norm"):
        got = weights_of("llama", ["-x", "hs1.npy"], prefixes[1], flag)
        check(flag, got is not None and np.max(np.abs(got - weights[1])) > 1e-3, flag)


@test("explain: where heads, norm and rope came from")
def _():
    d, _, hidden, _, prefixes = model("llama")
    np.save(os.path.join(d, "hs0.npy"), hidden[0].astype(np.float32))
    rc, out, err = run(["explain", "-x", "hs0.npy", "--params", "model.safetensors", "--prefix",
                        prefixes[0], "--causal"], cwd=d)
    text = out.decode()
    check("exit 0", rc == 0, err)
    check("heads from config", "num_heads    4 (config.json num_attention_heads)" in text, text)
    check("kv heads from config", "num_kv_heads 2 (config.json num_key_value_heads)" in text,
          text)
    check("norm", "RMSNorm model.layers.0.input_layernorm, eps 1e-06 (checkpoint; eps: "
          "config.json rms_norm_eps)" in text, text)
    check("rope", "theta 500000, neox, dim 8 of 8, llama3 scaling x8 (config.json rope_theta)"
          in text, text)
    rc, out, err = run(["explain", "-x", "hs0.npy", "--params", "model.safetensors", "--prefix",
                        prefixes[0], "--heads", "2", "--kv-heads", "1", "--rope=10000"], cwd=d)
    text = out.decode()
    check("flags override", "num_heads    2 (given)" in text and "num_kv_heads 1 (given)" in text
          and "theta 10000, neox, dim 16 of 16, llama3 scaling x8 (given)" in text, text)


@test("--config names a config.json elsewhere")
def _():
    d, _, hidden, weights, prefixes = model("gpt2")
    other = os.path.join(TMP, "gpt2-noconfig")
    os.makedirs(other, exist_ok=True)
    os.replace(os.path.join(d, "config.json"), os.path.join(other, "cfg.json"))
    try:
        np.save(os.path.join(d, "hs1.npy"), hidden[1].astype(np.float32))
        got = weights_of("gpt2", ["-x", "hs1.npy"], prefixes[1], "--heads", "1")
        check("one head without config", got is not None and got.shape == (B, L, L), str(got is None))
        rc, _, err = run(["compute", "-x", "hs1.npy", "--params", "model.safetensors", "--prefix",
                          prefixes[1], "--no-weights", "--output", "o.npy"], cwd=d)
        check("heads left at 1: one warning", rc == 0 and err.startswith(
            "attn: warning: num_heads: no config.json beside the checkpoint and no --heads")
            and err.count("\n") == 1, err)
        rc, _, err = run(["compute", "-x", "hs1.npy", "--params", "model.safetensors", "--prefix",
                          prefixes[1], "--no-weights", "--output", "o.npy", "--quiet"], cwd=d)
        check("--quiet silences it", rc == 0 and err == "", err)
        got = weights_of("gpt2", ["-x", "hs1.npy"], prefixes[1], "--config",
                         os.path.join(other, "cfg.json"))
        close("layer 1 with --config", got, weights[1], 2e-5)
    finally:
        os.replace(os.path.join(other, "cfg.json"), os.path.join(d, "config.json"))


@test("info: layers, heads, norm and rope of a checkpoint")
def _():
    expected = {"gpt2": ("gpt2", 2, 4, 4, 4, "layer_norm", False),
                "llama": ("llama", 2, 4, 2, 8, "rms_norm", True),
                "bert": ("bert", 2, 2, 2, 8, None, False)}
    for name, want in expected.items():
        d = model(name)[0]
        rc, out, err = run(["info", "--json", "model.safetensors"], cwd=d)
        check(f"{name} exit 0", rc == 0, err)
        m = json.loads(out)["model"] if rc == 0 else {}
        got = tuple(m.get(k) for k in ("layout", "layers", "heads", "kv_heads", "head_dim",
                                       "norm", "rope"))
        check(f"{name} model", got == want, f"{got} != {want}")
        rc, out, err = run(["info", "model.safetensors"], cwd=d)
        check(f"{name} text", rc == 0 and b"model: " + want[0].encode() in out, out + err.encode())


@test("rope on plain rank-4 Q/K inputs")
def _():
    q = RNG.normal(size=(1, 2, 5, 8))
    k = RNG.normal(size=(1, 2, 5, 8))
    v = RNG.normal(size=(1, 2, 5, 8))
    for n, a in (("q", q), ("k", k), ("v", v)):
        np.save(os.path.join(TMP, f"plain_{n}.npy"), a)
    inv = 1.0 / 10000.0 ** (np.arange(0, 8, 2) / 8)
    want, _ = attention(rotate(q, inv), rotate(k, inv), v, causal=False)
    rc, _, err = run(["compute", "-q", "plain_q.npy", "-k", "plain_k.npy", "-v", "plain_v.npy",
                      "--rope", "--precision", "f64", "--dtype", "f64", "--weights",
                      "plain_w.npy"])
    check("exit 0", rc == 0, err)
    got = np.load(os.path.join(TMP, "plain_w.npy")) if rc == 0 else None
    close("rotated weights", got, want, 1e-12)


@test("token ids: bad input is one line, exit 2")
def _():
    d = model("gpt2")[0]
    np.save(os.path.join(d, "bad_ids.npy"), np.array([[1, V]], np.int64))
    for args, pattern in (
            (["--token-ids", "bad_ids.npy", "--params", "model.safetensors", "--prefix", "h.0.attn."],
             "token_ids: id 50 at [0, 1] is outside the vocabulary of 50 tokens"),
            (["--token-ids", "bad_ids.npy"], "token_ids: needs a checkpoint"),
            (["--token-ids", "bad_ids.npy", "-x", "bad_ids.npy", "--params", "model.safetensors"],
             "token_ids: give either token_ids or input")):
        rc, _, err = run(["compute", *args], cwd=d)
        check(pattern, rc == 2 and err.strip().count("\n") == 0 and pattern in err, err)


main()

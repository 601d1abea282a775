#!/usr/bin/env python3
"""NumPy float64 oracle for rotary embeddings, LayerNorm, RMSNorm and embedding lookups,
written from Hugging Face / PyTorch code (not from attn's C++): RoPE as
modeling_llama.apply_rotary_pos_emb + rotate_half ("neox") and GPT-J's
rotate_every_two ("interleaved"), inverse frequencies as modeling_rope_utils
(_compute_default/linear/llama3_parameters), torch.nn.LayerNorm (biased variance),
LlamaRMSNorm, GPT-2 wte + wpe, BERT word + token type 0 + position + LayerNorm.
Random cases go through tests/oracle/numerics_driver (float32 and float64) in one process.
Usage: numerics_oracle.py PATH/TO/attn_numerics_driver"""
import json
import subprocess
import sys

import numpy as np

DRIVER = sys.argv[1]
rng = np.random.default_rng(20240515)


# --- the reference, from the Hugging Face / PyTorch definitions ---------------------------

def inv_freq(theta, dr, scaling):
    inv = 1.0 / (theta ** (np.arange(0, dr, 2, dtype=np.float64) / dr))
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "linear":
        inv = inv / scaling["factor"]
    elif kind == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * np.pi / inv
        llama = np.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * llama / factor + smooth * llama
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        inv = np.where(medium, smoothed, llama)
    return inv


def rope(x, pos, theta=10000.0, style="neox", dim=0, scaling=None):
    """x [B, H, L, D]; pos [L] or [B, L] (position_ids)."""
    d = x.shape[-1]
    dr = dim or d
    freqs = np.asarray(pos, np.float64)[..., None] * inv_freq(theta, dr, scaling)
    freqs = freqs[None, None] if freqs.ndim == 2 else freqs[:, None]  # -> [B|1, 1, L, dr/2]
    rot, rest = x[..., :dr], x[..., dr:]
    if style == "neox":  # LlamaRotaryEmbedding: emb = cat(freqs, freqs); rotate_half
        emb = np.concatenate([freqs, freqs], -1)
        cos, sin = np.cos(emb), np.sin(emb)
        x1, x2 = rot[..., : dr // 2], rot[..., dr // 2:]
        turned = np.concatenate([-x2, x1], -1)
    else:  # GPT-J: repeat_interleave(sin/cos, 2); rotate_every_two
        cos, sin = np.repeat(np.cos(freqs), 2, -1), np.repeat(np.sin(freqs), 2, -1)
        x1, x2 = rot[..., ::2], rot[..., 1::2]
        turned = np.stack([-x2, x1], -1).reshape(rot.shape)
    return np.concatenate([rot * cos + turned * sin, rest], -1)


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * w
    return y + b if b is not None else y


def rms_norm(x, w, eps):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * w


def embed(ids, token, position=None, token_type=None, norm=None, offset=0):
    y = token[ids]
    if token_type is not None:  # BertEmbeddings: inputs + token_type, then + position
        y = y + token_type[0]
    if position is not None:
        y = y + position[offset: offset + ids.shape[1]][None]
    if norm is not None:
        y = layer_norm(y, norm["weight"], norm["bias"], norm["eps"])
    return y


# --- cases ------------------------------------------------------------------------------

def arr(shape, precision, lo=-1.0, hi=1.0):
    a = rng.uniform(lo, hi, shape)
    return a.astype(np.float32).astype(np.float64) if precision == "f32" else a


def enc(a):
    return {"shape": list(a.shape), "data": [float(v) for v in np.ravel(a)]}


cases, expected, labels = [], [], []


def add(label, case, want):
    cases.append(case)
    expected.append(want)
    labels.append(label)


LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
for precision in ("f32", "f64"):
    for style in ("neox", "interleaved"):
        for scaling in (None, {"rope_type": "linear", "factor": 4.0}, {"type": "linear", "factor": 2.5},
                        LLAMA3):
            for dim in (0, 8):
                b, h, l, d = rng.integers(1, 3), rng.integers(1, 4), rng.integers(1, 6), 16
                x = arr((b, h, l, d), precision)
                pos = rng.integers(0, 3000, l)
                pos[0] = 100000  # long positions: angles in float32 would be off by ~1e-2
                theta = float(rng.choice([10000.0, 500000.0, 1.0e6]))
                c = {"op": "rope", "precision": precision, "q": enc(x), "positions": pos.tolist(),
                     "theta": theta, "style": style, "dim": dim}
                if scaling:
                    c["scaling"] = scaling
                add(f"rope {precision} {style} dim={dim} {scaling}", c,
                    [rope(x, pos, theta, style, dim, scaling)])
        # per-sequence positions [B, L] (packed / left-padded)
        x = arr((2, 3, 4, 8), precision)
        pos = np.array([[0, 1, 2, 3], [5, 0, 1, 2]])
        add(f"rope {precision} {style} per-batch positions",
            {"op": "rope", "precision": precision, "q": enc(x), "positions": pos.ravel().tolist(),
             "style": style}, [rope(x, pos, style=style)])
        # queries and keys: default offset Lk - Lq, an explicit offset, explicit lists
        q, k = arr((2, 4, 3, 8), precision), arr((2, 2, 7, 8), precision)
        add(f"rope {precision} {style} q/k default offset",
            {"op": "rope", "precision": precision, "q": enc(q), "k": enc(k), "style": style},
            [rope(q, np.arange(4, 7), style=style), rope(k, np.arange(7), style=style)])
        add(f"rope {precision} {style} q/k offset 40",
            {"op": "rope", "precision": precision, "q": enc(q), "k": enc(k), "style": style,
             "offset": 40},
            [rope(q, np.arange(40, 43), style=style), rope(k, np.arange(7), style=style)])
        qp, kp = [9, 2, 30], [0, 1, 2, 3, 10, 11, 12]
        add(f"rope {precision} {style} q/k explicit positions",
            {"op": "rope", "precision": precision, "q": enc(q), "k": enc(k), "style": style,
             "positions": {"query": qp, "key": kp}, "dim": 4},
            [rope(q, qp, style=style, dim=4), rope(k, kp, style=style, dim=4)])

    for eps in (1e-5, 1e-12, 0.5):
        x = arr((2, 3, 24), precision, -3.0, 7.0)
        w, bias = arr((24,), precision), arr((24,), precision)
        add(f"layer_norm {precision} eps={eps}",
            {"op": "layer_norm", "precision": precision, "x": enc(x), "weight": enc(w),
             "bias": enc(bias), "eps": eps}, [layer_norm(x, w, bias, eps)])
        add(f"layer_norm {precision} eps={eps} no bias",
            {"op": "layer_norm", "precision": precision, "x": enc(x), "weight": enc(w), "eps": eps},
            [layer_norm(x, w, None, eps)])
        add(f"rms_norm {precision} eps={eps}",
            {"op": "rms_norm", "precision": precision, "x": enc(x), "weight": enc(w), "eps": eps},
            [rms_norm(x, w, eps)])

    v, e, p = 11, 6, 9
    token, position, types = arr((v, e), precision), arr((p, e), precision), arr((2, e), precision)
    ids = rng.integers(0, v, (2, 5))
    norm = {"weight": arr((e,), precision), "bias": arr((e,), precision), "eps": 1e-12}
    add(f"embed {precision} gpt2", {"op": "embed", "precision": precision, "ids": enc(ids),
                                    "token": enc(token), "position": enc(position), "offset": 3},
        [embed(ids, token, position, offset=3)])
    add(f"embed {precision} llama", {"op": "embed", "precision": precision, "ids": enc(ids),
                                     "token": enc(token)}, [embed(ids, token)])
    add(f"embed {precision} bert",
        {"op": "embed", "precision": precision, "ids": enc(ids), "token": enc(token),
         "position": enc(position), "token_type": enc(types),
         "norm": {"weight": enc(norm["weight"]), "bias": enc(norm["bias"]), "eps": 1e-12}},
        [embed(ids, token, position, types, norm)])

# refusals: one line naming the culprit
add("rope odd dim", {"op": "rope", "q": enc(np.zeros((1, 1, 2, 8))), "positions": [0, 1], "dim": 3},
    "rope.dim: expected an even number from 2 to the head dim 8, got 3")
add("rope short positions", {"op": "rope", "q": enc(np.zeros((2, 1, 3, 4))), "positions": [0, 1]},
    "rope.positions: expected 3 positions (one per row) or 6 ([batch, rows]), got 2")
add("rope yarn", {"op": "rope", "q": enc(np.zeros((1, 1, 1, 4))), "positions": [0],
                  "scaling": {"rope_type": "yarn", "factor": 4.0}},
    "rope.scaling: rope_type 'yarn' is not supported (supported: default, linear, llama3)")
add("embed id", {"op": "embed", "ids": enc(np.array([[0, 11]])), "token": enc(np.zeros((11, 2)))},
    "token_ids: id 11 at [0, 1] is outside the vocabulary of 11 tokens")

# --- run --------------------------------------------------------------------------------

run = subprocess.run([DRIVER], input=json.dumps({"cases": cases}), capture_output=True,
                     text=True, check=True)
results = json.loads(run.stdout)["results"]
passed = failed = 0
for label, case, want, got in zip(labels, cases, expected, results):
    if isinstance(want, str):
        ok = got.get("error") == want
        detail = f"expected error {want!r}, got {got}"
    elif "error" in got:
        ok, detail = False, f"unexpected error {got['error']!r}"
    else:
        ok, detail = True, ""
        for w, o in zip(want, got["outputs"]):
            a = np.array(o["data"]).reshape(o["shape"])
            if a.shape != w.shape:
                ok, detail = False, f"shape {a.shape} vs {w.shape}"
                break
            # float32: one rounding of a value computed in double (<= 2^-24 relative);
            # float64: a few ulps, plus pow/cos differences amplified by long positions.
            if case.get("precision", "f32") == "f32":
                tol = 1.2e-7 * np.abs(w) + 1e-12
            else:
                tol = 1e-13 * np.abs(w) + 1e-14 + 4e-16 * 1e5
            err = np.abs(a - w)
            if not np.all(err <= tol):
                i = np.unravel_index(np.argmax(err - tol), err.shape)
                ok, detail = False, f"worst at {i}: got {a[i]!r}, expected {w[i]!r}"
                break
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {label}: {detail}")
print(f"numerics oracle: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)

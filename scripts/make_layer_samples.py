#!/usr/bin/env python3
"""Writes the inputs of README's every-layer and varlen examples: samples/layers/ (a tiny
random 4-layer, 4-head checkpoint in attn's layout and its hidden states, 8 tokens) and
samples/varlen/ (Q, K, V and a right-padded key_padding_mask). Deterministic; numpy only.

    /usr/bin/python3 scripts/make_layer_samples.py
"""
import os
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import reference as ref  # noqa: E402


def write_safetensors(path, tensors):
    """tensors: {name: array}, written F32 in name order."""
    ref.write_safetensors(path, [(k, "F32", tensors[k]) for k in sorted(tensors)])


def main():
    rng = np.random.default_rng(2026)
    n_layers, E, H, L = 4, 16, 4, 8
    out = os.path.join(ROOT, "samples", "layers")
    os.makedirs(out, exist_ok=True)
    tensors = {}
    for l in range(n_layers):
        # Sharper with depth, so the model view shows the layers apart.
        gain = 1.0 + l
        for name, rows in (("w_q", E), ("w_k", E), ("w_v", E), ("w_o", E)):
            w = rng.standard_normal((rows, E)) / np.sqrt(E)
            tensors[f"layers.{l}.attn.{name}"] = w * (gain if name in ("w_q", "w_k") else 1.0)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    np.save(os.path.join(out, "hidden_states.npy"),
            rng.standard_normal((n_layers + 1, L, E)).astype(np.float32))

    out = os.path.join(ROOT, "samples", "varlen")
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "q.npy"), np.array([[[[1.0, 0.0]], [[0.0, 1.0]]]], np.float32)
            .reshape(2, 1, 1, 2).repeat(2, axis=2))
    np.save(os.path.join(out, "k.npy"), np.array([[[[1, 0], [0, 1], [1, 1], [0, 0]]]] * 2,
                                                 np.float32).reshape(2, 1, 4, 2))
    np.save(os.path.join(out, "key_padding.npy"), np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool))
    print("wrote samples/layers/ and samples/varlen/")


if __name__ == "__main__":
    main()

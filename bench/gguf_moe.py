#!/usr/bin/env python3
"""A 4-bit GGUF shaped like Mixtral (8 experts, top 2; hidden 1024, 8 layers, 16 heads, 4 kv
heads of 64, expert MLP 3584, vocabulary 32000: Mixtral 8x7B scaled down to fit; every matrix
Q4_K, norms and routers float32) filled with random blocks, then the time and peak RSS of
its whole forward pass: `attn compute --params FILE --token-ids ... --no-weights
--return entropy` (every layer, L tokens).

    python3 bench/gguf_moe.py build/release/app/attn [--tokens 512] [--keep FILE]

The file is llama.cpp's layout for Mixtral (general.architecture llama with expert_count:
ffn_gate_exps/ffn_up_exps/ffn_down_exps stacked [experts, ...]), written with
gguf_first_layer.py's small writer. Goal (issue #36): peak RSS <= the shared weights (all
but the experts) + the experts the tokens route to + 512 MiB. With L random tokens every
expert of every layer is routed to, so the bound counts them all; the run reports it.
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np

from gguf_first_layer import (BLOCK_BYTES, F32, Q4_K, header, kv, nbytes, pad, timed_compute,
                              written)

E, LAYERS, HEADS, KV, D, FF, VOCAB, EXPERTS, USED = 1024, 8, 16, 4, 64, 3584, 32000, 8, 2


def tensors():
    """(name, numpy shape, type): Mixtral's tensors as convert_hf_to_gguf.py names them."""
    out = [("token_embd.weight", (VOCAB, E), Q4_K), ("output_norm.weight", (E,), F32)]
    for n in range(LAYERS):
        p = f"blk.{n}."
        out += [(p + "attn_norm.weight", (E,), F32), (p + "ffn_norm.weight", (E,), F32),
                (p + "attn_q.weight", (HEADS * D, E), Q4_K),
                (p + "attn_k.weight", (KV * D, E), Q4_K),
                (p + "attn_v.weight", (KV * D, E), Q4_K),
                (p + "attn_output.weight", (E, HEADS * D), Q4_K),
                (p + "ffn_gate_inp.weight", (EXPERTS, E), F32),
                (p + "ffn_gate_exps.weight", (EXPERTS, FF, E), Q4_K),
                (p + "ffn_up_exps.weight", (EXPERTS, FF, E), Q4_K),
                (p + "ffn_down_exps.weight", (EXPERTS, E, FF), Q4_K)]
    return out


def meta():
    return [kv("general.architecture", "str", "llama"), kv("llama.block_count", "u32", LAYERS),
            kv("llama.context_length", "u32", 32768), kv("llama.embedding_length", "u32", E),
            kv("llama.feed_forward_length", "u32", FF),
            kv("llama.attention.head_count", "u32", HEADS),
            kv("llama.attention.head_count_kv", "u32", KV),
            kv("llama.rope.freq_base", "f32", 1000000.0),
            kv("llama.attention.layer_norm_rms_epsilon", "f32", 1e-5),
            kv("llama.expert_count", "u32", EXPERTS),
            kv("llama.expert_used_count", "u32", USED), kv("llama.vocab_size", "u32", VOCAB)]


def write(path):
    rng = np.random.default_rng(1)
    infos = [(n, s, k, nbytes(s, k)) for n, s, k in tensors()]
    with open(path, "wb") as f:
        f.write(header(meta(), infos))
        for name, shape, kind in tensors():
            if kind == F32:
                scale = 1.0 if "gate_inp" in name else 0.1
                data = ((0 if "gate_inp" in name else 1) + scale * rng.standard_normal(shape))
                data = data.astype(np.float32).tobytes()
            else:
                blocks = rng.integers(0, 256, (nbytes(shape, kind) // BLOCK_BYTES, BLOCK_BYTES),
                                      dtype=np.uint8)
                # d and dmin: fp16 in [2^-12, 2^-9): finite, weights of a few hundredths.
                scales = (rng.integers(0, 0x0C00, (blocks.shape[0], 2)) + 0x0C00).astype("<u2")
                blocks[:, :4] = scales.view(np.uint8).reshape(-1, 4)
                data = blocks.tobytes()
            f.write(data + pad(len(data)))


def verify(attn, path, tmp):
    """Before timing: 8 tokens' hidden states with float32 (the experts multiplied as stored,
    one Q4_K slice of ffn_*_exps each) equal float64's (each slice dequantized) to float32
    rounding."""
    ids = os.path.join(tmp, "verify_ids.json")
    with open(ids, "w") as f:
        json.dump([5, 100, 31000, 7, 2048, 999, 12, 4], f)
    states = {}
    for precision in ("f32", "f64"):
        out = os.path.join(tmp, f"verify_{precision}.npz")
        subprocess.run([attn, "compute", "--params", path, "--token-ids", ids, "--return",
                        "hidden_states", "--precision", precision, "--quiet", "-o", out],
                       check=True)
        states[precision] = np.load(out)["hidden_states"].astype(np.float64)
    err = np.abs(states["f32"] - states["f64"]).max() / np.abs(states["f64"]).max()
    if not err < 1e-5:
        raise SystemExit(f"f32 and f64 hidden states differ: {err:g} of the largest")
    print(f"verified: f32 hidden states = f64's within {err:.1e} of the largest")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("attn")
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--keep", help="write the GGUF here and keep it (default: a temp file)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = written(a.keep or os.path.join(tmp, "mixtral-shaped-q4k.gguf"), write)
        verify(a.attn, path, tmp)
        wall, rss = timed_compute(a.attn, path, tmp, a.tokens, VOCAB, "--no-weights", "--return",
                                  "entropy", "-o", os.path.join(tmp, "out.json"))
        experts = sum(nbytes(s, k) for n, s, k in tensors() if "_exps" in n) / 2**20
        shared = os.path.getsize(path) / 2**20 - experts
        print(f"{a.tokens} tokens, {LAYERS} layers: {wall:.2f} s, peak RSS {rss:.0f} MiB; "
              f"bound: shared {shared:.0f} MiB + experts (all routed) {experts:.0f} MiB + 512 "
              f"MiB = {shared + experts + 512:.0f} MiB")


if __name__ == "__main__":
    main()

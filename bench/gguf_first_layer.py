#!/usr/bin/env python3
"""A 4-bit GGUF shaped like a 1B-parameter llama (Llama 3.2 1B: hidden 2048, 16 layers, 32
heads, 8 kv heads of 64, MLP 8192, vocabulary 128256, tied embeddings; every matrix Q4_K,
norms float32) filled with random blocks (finite fp16 scales), then the time to the first
layer's attention and the peak RSS of `attn compute --params FILE --token-ids ... --layers 0`.

    python3 bench/gguf_first_layer.py build/bench/app/attn [--tokens 128] [--keep FILE]

The GGUF is written here with a small writer of its own (header, metadata, tensor infos,
32-byte aligned data), no gguf-py needed. Goal (issue #22): peak RSS <= the file's size +
one dequantized layer (float32).
"""
import argparse
import json
import os
import re
import struct
import subprocess
import tempfile
import time

import numpy as np

E, LAYERS, HEADS, KV, D, FF, VOCAB = 2048, 16, 32, 8, 64, 8192, 128256
Q4_K, Q4_0, Q6_K, F32 = 12, 2, 14, 0
Q4_K_M = "q4_k_m"  # not a ggml type: llama.cpp's Q4_K_M mix of Q4_K and Q6_K (mixed_type)
BLOCK, BLOCK_BYTES = 256, 144
# ggml's block sizes (values, bytes) of the types the random writer fills, and where each
# block's fp16 scales lie (offset, bytes: Q4_K's d and dmin and Q4_0's d first, Q6_K's d last).
BLOCKS = {Q4_K: (256, 144, 0, 4), Q4_0: (32, 18, 0, 2), Q6_K: (256, 210, 208, 2)}


def use_more_bits(i, n):
    """llama.cpp's use_more_bits (llama-quant.cpp): the layers Q4_K_M gives more bits."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def mixed_type(name, layer):
    """The type llama.cpp's llama_tensor_get_type gives a Llama tensor under Q4_K_M: Q6_K for
    the output (here the tied token embeddings) and for attn_v and ffn_down of the
    use_more_bits layers, Q4_K for the rest."""
    if name == "token_embd.weight":
        return Q6_K
    if (name.endswith("attn_v.weight") or name.endswith("ffn_down.weight")) and \
            use_more_bits(layer, LAYERS):
        return Q6_K
    return Q4_K


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, kind, value):
    out = gguf_str(key)
    if kind == "str":
        return out + struct.pack("<I", 8) + gguf_str(value)
    if kind == "u32":
        return out + struct.pack("<II", 4, value)
    return out + struct.pack("<If", 6, value)


def tensors(m=Q4_K):
    """(name, numpy shape [rows, cols], type): every matrix of ggml type m (Q4_K_M: each
    matrix's type by mixed_type), norms float32."""
    def kind(name, layer=0):
        return mixed_type(name, layer) if m == Q4_K_M else m
    out = [("token_embd.weight", (VOCAB, E), kind("token_embd.weight")),
           ("output_norm.weight", (E,), F32)]
    for n in range(LAYERS):
        p = f"blk.{n}."
        out += [(p + "attn_norm.weight", (E,), F32), (p + "ffn_norm.weight", (E,), F32)]
        out += [(p + name, shape, kind(p + name, n)) for name, shape in (
            ("attn_q.weight", (HEADS * D, E)), ("attn_k.weight", (KV * D, E)),
            ("attn_v.weight", (KV * D, E)), ("attn_output.weight", (E, HEADS * D)),
            ("ffn_gate.weight", (FF, E)), ("ffn_up.weight", (FF, E)),
            ("ffn_down.weight", (E, FF)))]
    return out


def nbytes(shape, kind):
    n = int(np.prod(shape))
    return n * 4 if kind == F32 else n // BLOCKS[kind][0] * BLOCKS[kind][1]


def llama_meta():
    """The metadata of Llama 3.2 1B's shape (no tokenizer: runs take --token-ids)."""
    return [kv("general.architecture", "str", "llama"), kv("llama.block_count", "u32", LAYERS),
            kv("llama.context_length", "u32", 131072), kv("llama.embedding_length", "u32", E),
            kv("llama.feed_forward_length", "u32", FF),
            kv("llama.attention.head_count", "u32", HEADS),
            kv("llama.attention.head_count_kv", "u32", KV),
            kv("llama.rope.freq_base", "f32", 500000.0),
            kv("llama.attention.layer_norm_rms_epsilon", "f32", 1e-5),
            kv("llama.vocab_size", "u32", VOCAB)]


def pad(n):
    """Zero bytes that take n bytes to GGUF's 32-byte alignment."""
    return b"\0" * ((-n) % 32)


def header(meta, infos):
    """The GGUF v3 header, metadata and tensor infos, padded to the data's start; infos are
    (name, numpy shape, ggml type, data bytes) in file order, each tensor 32-byte aligned."""
    out, offset = b"", 0
    for name, shape, kind, size in infos:
        dims = list(reversed(shape))
        out += gguf_str(name) + struct.pack("<I", len(dims)) + struct.pack(
            f"<{len(dims)}Q", *dims) + struct.pack("<IQ", kind, offset)
        offset += (size + 31) // 32 * 32
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(meta)) + b"".join(meta) + out
    return head + pad(len(head))


def write(path, m=Q4_K):
    """Every matrix of type m (Q4_K, Q4_0, Q6_K or the Q4_K_M mix) as random blocks, norms
    float32."""
    rng = np.random.default_rng(1)
    infos = [(n, s, k, nbytes(s, k)) for n, s, k in tensors(m)]
    with open(path, "wb") as f:
        f.write(header(llama_meta(), infos))
        for name, shape, kind in tensors(m):
            if kind == F32:
                data = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32).tobytes()
            else:
                _, size, at, scale_bytes = BLOCKS[kind]
                blocks = rng.integers(0, 256, (nbytes(shape, kind) // size, size),
                                      dtype=np.uint8)
                # The scales: fp16 in [2^-12, 2^-9): finite, weights of a few hundredths.
                scales = (rng.integers(0, 0x0C00, (blocks.shape[0], scale_bytes // 2))
                          + 0x0C00).astype("<u2")
                blocks[:, at:at + scale_bytes] = scales.view(np.uint8).reshape(-1, scale_bytes)
                data = blocks.tobytes()
            f.write(data + pad(len(data)))


def written(path, write_file):
    """path, written by write_file(path) unless it exists (a kept file is reused)."""
    if not os.path.exists(path):
        t0 = time.time()
        write_file(path)
        print(f"wrote {path}: {os.path.getsize(path) / 2**20:.0f} MiB in "
              f"{time.time() - t0:.1f} s")
    return path


def timed_compute(attn, path, tmp, tokens, vocab, *flags):
    """`attn compute --params path` on `tokens` random ids under /usr/bin/time -v:
    (wall seconds, peak RSS in MiB)."""
    ids = os.path.join(tmp, "ids.json")
    with open(ids, "w") as f:
        json.dump([int(i) for i in np.random.default_rng(2).integers(0, vocab, tokens)], f)
    t0 = time.time()
    p = subprocess.run(["/usr/bin/time", "-v", attn, "compute", "--params", path,
                        "--token-ids", ids, "--quiet", *flags], capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        raise SystemExit(p.stderr[-2000:])
    return wall, int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)[1]) / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("attn")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--keep", help="write the GGUF here and keep it (default: a temp file)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = written(a.keep or os.path.join(tmp, "llama-1b-q4k.gguf"), write)
        wall, rss = timed_compute(a.attn, path, tmp, a.tokens, VOCAB, "--layers", "0", "-o",
                                  os.path.join(tmp, "out.npy"))
        size = os.path.getsize(path)
        layer = sum(int(np.prod(s)) * 4 for n, s, _ in tensors() if n.startswith("blk.0."))
        print(f"{a.tokens} tokens, layer 0: {wall:.2f} s, peak RSS {rss:.0f} MiB; "
              f"file {size / 2**20:.0f} MiB + one float32 layer {layer / 2**20:.0f} MiB = "
              f"{(size + layer) / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The BF16 Llama-3.2-1B-shaped folder (bench/llama_forward.py's) through attn and through a
llama written here in torch 1.13 eager (issue #32: attn >= 3x torch), every layer's attention
weights kept on both sides: attn writes them to a .npy as it computes them, torch keeps them
as `output_attentions=True` does. Not a test: a measurement to quote.

    /usr/bin/python3 bench/llama_torch.py build/release/app/attn [--seq 512]
        [--threads 1,2] [--repeat 3] [--dir /tmp/attn-bench-llama32]

The torch side is LlamaForCausalLM's eager path as transformers writes it (modeling_llama.py:
LlamaRMSNorm in float32, rotate_half RoPE with inv_freq = 1 / theta^(2i/D), repeat_kv for the
kv heads, softmax in float32 with the causal mask, SiLU-gated MLP), on the folder's BF16
weights converted to float32 at load, as `from_pretrained` does without `torch_dtype`
(transformers is not installed here). Each process is timed from fork to exit (loading
included, as a user waits for it), with wait4's peak RSS; torch's forward alone is printed
too. Before timing, both sides' weights of the first and last layer must agree within
float32 tolerance.
"""
import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def read_bf16_folder(folder):
    """{name: float32 numpy array} of the folder's one model.safetensors (BF16 tensors)."""
    path = os.path.join(folder, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if e["dtype"] != "BF16":
            sys.exit(f"{name}: {e['dtype']}, expected BF16")
        b, end = e["data_offsets"]
        u16 = raw[b:end].view("<u2")
        out[name] = (u16.astype(np.uint32) << 16).view(np.float32).reshape(e["shape"])
    return out


def torch_child(folder, ids_path, threads, keep_path):
    """Loads the folder as float32 torch tensors, runs the forward with every layer's
    attention weights kept; prints the forward's wall seconds. keep_path: the first and last
    layer's weights saved there (the agreement check)."""
    import torch
    torch.set_num_threads(threads)
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    w = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in read_bf16_folder(folder).items()}
    ids = torch.from_numpy(np.load(ids_path).astype(np.int64))
    heads, kv, hidden = c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"]
    d = hidden // heads
    eps, theta, layers = c["rms_norm_eps"], c["rope_theta"], c["num_hidden_layers"]

    def rms(x, weight):  # LlamaRMSNorm
        var = x.pow(2).mean(-1, keepdim=True)
        return weight * (x * torch.rsqrt(var + eps))

    def rotate_half(x):
        return torch.cat((-x[..., d // 2:], x[..., : d // 2]), dim=-1)

    t0 = time.perf_counter()
    with torch.no_grad():
        b, length = ids.shape
        inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
        freqs = torch.arange(length).float()[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((length, length), torch.finfo(torch.float32).min).triu(1)
        h = w["model.embed_tokens.weight"][ids]
        attentions = []
        for i in range(layers):
            p = f"model.layers.{i}."
            x = rms(h, w[p + "input_layernorm.weight"])
            q = (x @ w[p + "self_attn.q_proj.weight"].T).view(b, length, heads, d).transpose(1, 2)
            k = (x @ w[p + "self_attn.k_proj.weight"].T).view(b, length, kv, d).transpose(1, 2)
            v = (x @ w[p + "self_attn.v_proj.weight"].T).view(b, length, kv, d).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k[:, :, None].expand(b, kv, heads // kv, length, d).reshape(b, heads, length, d)
            v = v[:, :, None].expand(b, kv, heads // kv, length, d).reshape(b, heads, length, d)
            scores = q @ k.transpose(2, 3) / math.sqrt(d) + mask
            a = torch.softmax(scores, dim=-1, dtype=torch.float32)
            attentions.append(a)
            o = (a @ v).transpose(1, 2).reshape(b, length, hidden)
            h = h + o @ w[p + "self_attn.o_proj.weight"].T
            x = rms(h, w[p + "post_attention_layernorm.weight"])
            gate = torch.nn.functional.silu(x @ w[p + "mlp.gate_proj.weight"].T)
            h = h + (gate * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        h = rms(h, w["model.norm.weight"])
    print(time.perf_counter() - t0)
    if keep_path:
        np.save(keep_path, torch.stack([attentions[0][0], attentions[-1][0]]).numpy())


def timed(argv, env=None):
    """(wall seconds, user + system CPU seconds, peak RSS MiB, stdout) of one process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    out, err = p.stdout.read().decode(), p.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv[:3]} failed: {err[-800:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def threads_env(t):
    """torch's child limited to t threads: its own pool (set_num_threads) and the BLAS's,
    which Debian's torch takes from OpenBLAS and which starts one thread a core otherwise."""
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-child":
        torch_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5
                    else "")
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("attn")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/attn-bench-llama32")
    ap.add_argument("--activations", default="f32",
                    help="attn's --activations: bf16 rounds the BF16 weights' inputs to BF16 "
                         "as llama.cpp does (torch keeps float32)")
    a = ap.parse_args()
    import llama_forward
    folder = llama_forward.model_files(a.dir)["bf16"]
    ids = np.random.default_rng(7).integers(0, 128256, (1, a.seq))
    ids_path = os.path.join(a.dir, f"torch-ids{a.seq}.npy")
    np.save(ids_path, ids)
    w_path, keep = os.path.join(a.dir, "torch-w.npy"), os.path.join(a.dir, "torch-keep.npy")
    me = [sys.executable, os.path.abspath(__file__), "--torch-child", folder, ids_path]

    def attn_argv(t):
        return [a.attn, "compute", "--params", folder, "--token-ids", ids_path, "--weights",
                w_path, "-o", os.path.join(a.dir, "torch-o.npy"), "--threads", str(t),
                "--quiet", "--max-memory", "none", "--activations", a.activations]

    # Agreement first: the first and last layer's weights, both sides.
    timed(attn_argv(2))
    timed(me + ["2", keep], env=threads_env(2))
    ours = np.load(w_path, mmap_mode="r")
    theirs = np.load(keep)
    for n, layer in ((0, 0), (1, ours.shape[0] - 1)):
        diff = float(np.max(np.abs(np.asarray(ours[layer]).reshape(theirs[n].shape) - theirs[n])))
        print(f"layer {layer}: max |attn - torch| = {diff:.2e}")
        # f32: the same float32 model; bf16: each matrix's input moved by up to 2^-8 of
        # itself, which moves a weight by up to about that much of the largest.
        if diff > (1e-4 if a.activations == "f32" else 2e-2):
            sys.exit("the two sides disagree")
    os.remove(keep)
    print(f"BF16 folder {folder}, L = {a.seq}, every layer's weights kept, attn "
          f"--activations {a.activations}; medians of {a.repeat}, interleaved")
    for t in (int(x) for x in a.threads.split(",")):
        runs = {"attn": [], "torch": []}
        for _ in range(a.repeat):
            runs["attn"].append(timed(attn_argv(t)))
            runs["torch"].append(timed(me + [str(t)], env=threads_env(t)))
        med = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in runs.items()}
        fwd = statistics.median(float(r[3].split()[-1]) for r in runs["torch"])
        print(f"  {t} thread(s): attn {med['attn'][0]:.2f} s wall ({med['attn'][1]:.2f} s CPU, "
              f"{med['attn'][2]:.0f} MiB); torch {med['torch'][0]:.2f} s wall "
              f"({med['torch'][1]:.2f} s CPU, {med['torch'][2]:.0f} MiB; forward alone "
              f"{fwd:.2f} s): torch / attn {med['torch'][0] / med['attn'][0]:.2f}x wall, "
              f"forward alone / attn {fwd / med['attn'][0]:.2f}x")
    os.remove(w_path)


if __name__ == "__main__":
    main()

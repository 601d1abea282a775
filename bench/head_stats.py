#!/usr/bin/env python3
"""What `--return head_stats` and `--return rollout` cost on a real-size model (issue #33):
a Llama-3.2-1B-shaped random BF16 checkpoint (hidden 2048, 32 heads / 8 kv heads, MLP
8192, vocab 128256; --layers of them, default 16) written to the temp folder, L random
token ids, and three processes alternated --repeat times:

    attn compute --params M --token-ids ids --no-weights                    (the baseline)
    attn compute --params M --token-ids ids --no-weights --return head_stats
    attn compute --params M --token-ids ids --no-weights --return rollout    (--rollout)

Not a test: wall time and peak RSS (wait4) of each process, medians, ratios to the
baseline from the same run.

    /usr/bin/python3 bench/head_stats.py build/release/app/attn [--seq 2048] [--layers 16]
        [--threads 2] [--repeat 3] [--rollout] [--no-head-stats] [--dir /tmp/attn-bench-1b]
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_forward as mf  # noqa: E402  (timed)

E, H, KV, F, V = 2048, 32, 8, 8192, 128256


def tensors(layers):
    D = E // H
    yield "model.embed_tokens.weight", (V, E), 0.02
    for i in range(layers):
        p = "model.layers.%d." % i
        yield p + "input_layernorm.weight", (E,), None
        yield p + "self_attn.q_proj.weight", (H * D, E), 0.02
        yield p + "self_attn.k_proj.weight", (KV * D, E), 0.02
        yield p + "self_attn.v_proj.weight", (KV * D, E), 0.02
        yield p + "self_attn.o_proj.weight", (E, H * D), 0.02
        yield p + "post_attention_layernorm.weight", (E,), None
        yield p + "mlp.gate_proj.weight", (F, E), 0.02
        yield p + "mlp.up_proj.weight", (F, E), 0.02
        yield p + "mlp.down_proj.weight", (E, F), 0.02
    yield "model.norm.weight", (E,), None


def write_model(folder, layers):
    """A BF16 safetensors folder, written tensor by tensor (never all in memory)."""
    os.makedirs(folder, exist_ok=True)
    header, offset = {}, 0
    for name, shape, _ in tensors(layers):
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    rng = np.random.default_rng(0)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape, scale in tensors(layers):
            rows = shape[0] if len(shape) == 2 else 1
            step = max(1, (1 << 24) // (int(np.prod(shape)) // rows))
            for r0 in range(0, rows, step):
                part = (rows if len(shape) == 1 else min(step, rows - r0),) + tuple(shape[1:])
                if len(shape) == 1:
                    part = shape
                a = (np.ones(part, np.float32) if scale is None
                     else rng.standard_normal(part, dtype=np.float32) * scale)
                f.write((a.view(np.uint32) >> 16).astype("<u2").tobytes())
                if len(shape) == 1:
                    break
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "llama", "hidden_size": E, "intermediate_size": F,
                   "num_attention_heads": H, "num_key_value_heads": KV,
                   "num_hidden_layers": layers, "vocab_size": V, "rms_norm_eps": 1e-5,
                   "rope_theta": 500000.0, "max_position_embeddings": 131072,
                   "hidden_act": "silu", "tie_word_embeddings": True}, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attn")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rollout", action="store_true")
    ap.add_argument("--no-head-stats", action="store_true", help="leave the head_stats run out")
    ap.add_argument("--dir", default="/tmp/attn-bench-1b")
    a = ap.parse_args()
    folder = os.path.join(a.dir, "model-%d" % a.layers)
    if not os.path.exists(os.path.join(folder, "config.json")):
        mf.in_child(write_model, folder, a.layers)  # written apart: see in_child
    ids = os.path.join(a.dir, "ids.npy")
    np.save(ids, np.random.default_rng(1).integers(0, V, a.seq))
    size = os.path.getsize(os.path.join(folder, "model.safetensors")) / 2 ** 20
    cpu = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
           if ln.startswith("model name")][:1]
    print("CPU %s; Llama-3.2-1B-shaped, %d layers, BF16 %.0f MiB; L %d; %d threads; load %.1f"
          % (cpu[0] if cpu else "?", a.layers, size, a.seq, a.threads, os.getloadavg()[0]))
    base = [os.path.abspath(a.attn), "compute", "--params", folder, "--token-ids", ids,
            "--no-weights", "--threads", str(a.threads), "--quiet", "--max-memory", "none",
            "--output", os.path.join(a.dir, "out.npz")]
    kinds = {"no-weights": base}
    if not a.no_head_stats:
        kinds["head_stats"] = base + ["--return", "head_stats"]
    if a.rollout:
        kinds["rollout"] = base + ["--return", "rollout"]
    runs = {k: [] for k in kinds}
    for _ in range(a.repeat):  # alternated, so a busy spell hits each alike
        for k, argv in kinds.items():
            runs[k].append(mf.timed(argv, {"OPENBLAS_NUM_THREADS": "1"}))
    t0 = float(np.median([r[0] for r in runs["no-weights"]]))
    for k in kinds:
        t = float(np.median([r[0] for r in runs[k]]))
        rss = float(np.median([r[1] for r in runs[k]]))
        print("%-11s median of %d: %.1f s (%.2fx the --no-weights run), peak RSS %.0f MiB; "
              "runs %s" % (k, a.repeat, t, t / t0, rss,
                           ", ".join("%.1f" % r[0] for r in runs[k])))


if __name__ == "__main__":
    main()

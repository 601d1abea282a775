#!/usr/bin/env python3
"""A head census over a corpus, attn against the way people do it today: a torch 1.13
eager GPT-2 forward per text keeping every layer's attention (output_attentions=True),
then the same seven statistics in numpy (vectorised per layer), pooled over the texts.
Not a test: a measurement to quote (wall time and peak RSS of each process; the median
of --repeat runs, interleaved). Both censuses are checked against each other first.

    /usr/bin/python3 bench/census.py build/release/app/attn [--texts 2000] [--seq 128]
        [--threads 2] [--repeat 3] [--dir /tmp/attn-bench-census]

The model is model_forward.py's GPT-2-small-shaped random checkpoint (12 layers, E 768,
12 heads, vocab 50257) in a Hugging Face folder; the corpus is --texts lines of --seq
random ids with repeats (so duplicate_token and induction have rows). attn runs
`attn census MODEL corpus.jsonl --jobs J --threads 1` with J = --threads (texts in
parallel), torch one text after another on --threads threads. --rss also runs attn on a
quarter of the corpus: the census's memory does not grow with the corpus.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model_forward as mf  # noqa: E402  (write_model, timed)

NAMES = ["entropy", "first_token", "previous_token", "self", "distance", "duplicate_token",
         "induction"]


def stats(w, ids, sums, rows, layer):
    """One layer's [H, L, L] causal weights of one text added to sums/rows [layers, H]."""
    H, L, _ = w.shape
    i = np.arange(L)
    safe = np.where(w > 0, w, 1.0)
    per = {"entropy": -(w * np.log(safe)).sum(-1), "first_token": w[:, :, 0],
           "self": w[:, i, i], "distance": (w * np.abs(i[:, None] - i[None, :])).sum(-1)}
    for k, v in per.items():
        sums[k][layer] += v.sum(-1)
        rows[k][layer] += L
    sums["previous_token"][layer] += w[:, i[1:], i[1:] - 1].sum(-1)
    rows["previous_token"][layer] += L - 1
    same = ids[:, None] == ids[None, :]
    dup = np.tril(same, -1)  # j < i with id_j = id_i
    has = dup.any(-1)
    sums["duplicate_token"][layer] += (w * dup).sum(-1)[:, has].sum(-1)
    rows["duplicate_token"][layer] += has.sum()
    ind = np.tril(same, -2)  # j < i - 1: the key after j is j + 1 <= i - 1
    has = ind.any(-1)
    shifted = np.zeros_like(ind)
    shifted[:, 1:] = ind[:, :-1]  # key j + 1 for each such j
    sums["induction"][layer] += (w * shifted).sum(-1)[:, has].sum(-1)
    rows["induction"][layer] += has.sum()


def torch_census(folder, corpus, out, threads):
    import torch
    torch.set_num_threads(threads)
    cfg = json.load(open(os.path.join(folder, "config.json")))
    raw = open(os.path.join(folder, "model.safetensors"), "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    tensors = {}
    for name, h in header.items():
        if name != "__metadata__":
            a, b = h["data_offsets"]
            tensors[name] = torch.from_numpy(
                np.frombuffer(data[a:b], dtype="<f4").reshape(h["shape"]))
    w = tensors.__getitem__
    E, H, NL = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    D = E // H
    ln = torch.nn.functional.layer_norm
    sums = {k: np.zeros((NL, H)) for k in NAMES}
    rows = {k: np.zeros((NL, H), np.int64) for k in NAMES}
    with torch.no_grad():
        for line in open(corpus):
            ids_np = np.array(json.loads(line)["token_ids"])
            ids = torch.from_numpy(ids_np)
            L = len(ids_np)
            x = w("transformer.wte.weight")[ids] + w("transformer.wpe.weight")[:L]
            mask = torch.tril(torch.ones(L, L, dtype=torch.bool))
            for i in range(NL):
                pre = "transformer.h.%d." % i
                h = ln(x, (E,), w(pre + "ln_1.weight"), w(pre + "ln_1.bias"), 1e-5)
                qkv = torch.addmm(w(pre + "attn.c_attn.bias"), h, w(pre + "attn.c_attn.weight"))
                q, k, v = (t.view(L, H, D).transpose(0, 1) for t in qkv.split(E, -1))
                s = (q @ k.transpose(-1, -2) / math.sqrt(D)).masked_fill(~mask, float("-inf"))
                p = torch.softmax(s, -1)
                stats(p.numpy().astype(np.float64), ids_np, sums, rows, i)
                a = (p @ v).transpose(0, 1).reshape(L, E)
                x = x + torch.addmm(w(pre + "attn.c_proj.bias"), a, w(pre + "attn.c_proj.weight"))
                h = ln(x, (E,), w(pre + "ln_2.weight"), w(pre + "ln_2.bias"), 1e-5)
                m = torch.addmm(w(pre + "mlp.c_fc.bias"), h, w(pre + "mlp.c_fc.weight"))
                m = 0.5 * m * (1 + torch.tanh(math.sqrt(2 / math.pi) * (m + 0.044715 * m.pow(3))))
                x = x + torch.addmm(w(pre + "mlp.c_proj.bias"), m, w(pre + "mlp.c_proj.weight"))
    np.savez(out, **{k: np.where(rows[k] > 0, sums[k] / np.maximum(rows[k], 1), np.nan)
                     for k in NAMES})


def write_corpus(path, texts, seq, vocab, seed=1):
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for _ in range(texts):
            half = rng.integers(0, vocab, seq // 2)
            ids = np.concatenate([half, half, rng.integers(0, vocab, seq - 2 * (seq // 2))])
            f.write(json.dumps({"token_ids": ids.tolist()}) + "\n")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-child":
        torch_census(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("attn")
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rss", action="store_true")
    ap.add_argument("--dir", default="/tmp/attn-bench-census")
    a = ap.parse_args()
    folder = os.path.join(a.dir, "model")
    if not os.path.exists(os.path.join(folder, "model.safetensors")):
        mf.write_model(folder, 12, 768, 12, 50257, 1024)
    corpus = os.path.join(a.dir, "corpus.jsonl")
    write_corpus(corpus, a.texts, a.seq, 50257)
    cpu = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
           if ln.startswith("model name")][:1]
    print("CPU %s; %d texts of %d ids, GPT-2-small-shaped, %d threads, load average %.1f"
          % (cpu[0] if cpu else "?", a.texts, a.seq, a.threads, os.getloadavg()[0]))
    out_a, out_t = os.path.join(a.dir, "attn.npz"), os.path.join(a.dir, "torch.npz")
    attn_argv = [os.path.abspath(a.attn), "census", folder, corpus, "--jobs", str(a.threads),
                 "--threads", "1", "--quiet", "--output", out_a]
    torch_argv = [sys.executable, os.path.abspath(__file__), "--torch-child", folder, corpus,
                  out_t, str(a.threads)]
    runs_a, runs_t = [], []
    for _ in range(a.repeat):  # interleaved, so a busy spell hits both alike
        runs_a.append(mf.timed(attn_argv, {"OPENBLAS_NUM_THREADS": "1"}))
        runs_t.append(mf.timed(torch_argv))
    za, zt = np.load(out_a), np.load(out_t)
    worst = max(float(np.nanmax(np.abs(za[k] - zt[k]))) for k in NAMES)
    ta, ra = (float(np.median([r[i] for r in runs_a])) for i in (0, 1))
    tt, rt = (float(np.median([r[i] for r in runs_t])) for i in (0, 1))
    print("median of %d: attn census %.1f s, peak RSS %.0f MiB | torch eager + numpy %.1f s, "
          "peak RSS %.0f MiB | speed-up %.2fx | max |pooled difference| %.2g"
          % (a.repeat, ta, ra, tt, rt, tt / ta, worst))
    print("  attn runs: %s; torch runs: %s" % (", ".join("%.1f s" % r[0] for r in runs_a),
                                              ", ".join("%.1f s" % r[0] for r in runs_t)))
    if a.rss:
        quarter = os.path.join(a.dir, "quarter.jsonl")
        with open(corpus) as f, open(quarter, "w") as g:
            g.writelines(f.readlines()[:max(1, a.texts // 4)])
        tq, rq = mf.timed(attn_argv[:3] + [quarter] + attn_argv[4:])
        print("attn census of %d texts: %.1f s, peak RSS %.0f MiB (all %d: %.0f MiB)"
              % (max(1, a.texts // 4), tq, rq, a.texts, ra))


if __name__ == "__main__":
    main()

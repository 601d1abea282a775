#!/usr/bin/env python3
"""A whole model's forward pass, attn against PyTorch eager: a GPT-2-small-shaped random
checkpoint (12 layers, E 768, 12 heads, vocab 50257 by default) in a Hugging Face folder,
L token ids, every layer's attention weights written to one .npy. Not a test: a
measurement to quote (wall time and peak RSS of each process, 1 and 2 threads; each
figure the median of --repeat runs, one process per run).

    /usr/bin/python3 bench/model_forward.py build/release/app/attn [--seq 1024]
        [--layers 12] [--threads 1,2] [--repeat 3] [--dir /tmp/attn-bench-gpt2]

The torch side is GPT-2 written here in torch 1.13 (transformers is not installed):
wte + wpe, per layer ln_1, Conv1D c_attn, causal softmax (the weights kept, as
output_attentions=True keeps them), c_proj, ln_2, gelu_new MLP, ln_f. Both sides are
checked against each other first (weights within float32 tolerance); each process is
timed from fork to exit, with wait4's peak RSS.
"""
import argparse
import json
import math
import os
import sys
import time
import traceback

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))


def write_model(folder, layers, embd, heads, vocab, positions, seed=0):
    import reference_files as rf
    rng = np.random.default_rng(seed)
    t = []

    def p(name, *shape, scale=0.02, base=0.0):
        t.append((name, "F32", (base + rng.standard_normal(shape) * scale).astype(np.float32)))

    p("transformer.wte.weight", vocab, embd)
    p("transformer.wpe.weight", positions, embd, scale=0.01)
    for i in range(layers):
        pre = "transformer.h.%d." % i
        p(pre + "ln_1.weight", embd, base=1.0)
        p(pre + "ln_1.bias", embd)
        p(pre + "attn.c_attn.weight", embd, 3 * embd)
        p(pre + "attn.c_attn.bias", 3 * embd)
        p(pre + "attn.c_proj.weight", embd, embd)
        p(pre + "attn.c_proj.bias", embd)
        p(pre + "ln_2.weight", embd, base=1.0)
        p(pre + "ln_2.bias", embd)
        p(pre + "mlp.c_fc.weight", embd, 4 * embd)
        p(pre + "mlp.c_fc.bias", 4 * embd)
        p(pre + "mlp.c_proj.weight", 4 * embd, embd)
        p(pre + "mlp.c_proj.bias", embd)
    p("transformer.ln_f.weight", embd, base=1.0)
    p("transformer.ln_f.bias", embd)
    os.makedirs(folder, exist_ok=True)
    rf.write_safetensors(os.path.join(folder, "model.safetensors"), t)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "gpt2", "n_embd": embd, "n_head": heads, "n_layer": layers,
                   "n_positions": positions, "vocab_size": vocab,
                   "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}, f)


def torch_forward(folder, ids_path, out_path, threads):
    """GPT-2 in torch eager from the folder's tensors; all layers' weights to one .npy."""
    import torch
    import reference_files as rf  # noqa: F401  (same reader path as the writer)
    torch.set_num_threads(threads)
    cfg = json.load(open(os.path.join(folder, "config.json")))
    raw = bytearray(open(os.path.join(folder, "model.safetensors"), "rb").read())
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]

    def w(name):
        h = header[name]
        a, b = h["data_offsets"]
        return torch.from_numpy(np.frombuffer(data[a:b], dtype="<f4").reshape(h["shape"]))

    ids = torch.from_numpy(np.load(ids_path).astype(np.int64))
    E, H = cfg["n_embd"], cfg["n_head"]
    D = E // H
    L = ids.shape[-1]
    ln = torch.nn.functional.layer_norm
    with torch.no_grad():
        x = w("transformer.wte.weight")[ids] + w("transformer.wpe.weight")[:L]
        mask = torch.tril(torch.ones(L, L, dtype=torch.bool))
        attentions = []
        for i in range(cfg["n_layer"]):
            pre = "transformer.h.%d." % i
            h = ln(x, (E,), w(pre + "ln_1.weight"), w(pre + "ln_1.bias"), 1e-5)
            qkv = torch.addmm(w(pre + "attn.c_attn.bias"), h, w(pre + "attn.c_attn.weight"))
            q, k, v = (t.view(L, H, D).transpose(0, 1) for t in qkv.split(E, -1))
            s = q @ k.transpose(-1, -2) / math.sqrt(D)
            s = s.masked_fill(~mask, float("-inf"))
            p = torch.softmax(s, -1)
            attentions.append(p)
            a = (p @ v).transpose(0, 1).reshape(L, E)
            x = x + torch.addmm(w(pre + "attn.c_proj.bias"), a, w(pre + "attn.c_proj.weight"))
            h = ln(x, (E,), w(pre + "ln_2.weight"), w(pre + "ln_2.bias"), 1e-5)
            m = torch.addmm(w(pre + "mlp.c_fc.bias"), h, w(pre + "mlp.c_fc.weight"))
            m = 0.5 * m * (1 + torch.tanh(math.sqrt(2 / math.pi) * (m + 0.044715 * m.pow(3))))
            x = x + torch.addmm(w(pre + "mlp.c_proj.bias"), m, w(pre + "mlp.c_proj.weight"))
        np.save(out_path, torch.stack(attentions).numpy())


def in_child(fn, *args):
    """fn(*args) in a forked child, this process waiting (exit 1 if it fails). For writing
    benchmark inputs: a process forked from this one starts with its pages, and Linux keeps
    the larger of that and the process's own peak across exec, so wait4's peak RSS of every
    later `timed` run would count a writer's arrays had they been made here."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fn(*args)
        except BaseException:  # noqa: B036  (the child reports it and exits, whatever it was)
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {fn.__name__}")


def timed(argv, env=None, usage=False):
    """(wall seconds from fork to exit, wait4's peak RSS in MiB) of one process; with usage,
    also its user and system CPU seconds."""
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            if env:
                os.environ.update(env)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("failed: %s" % " ".join(argv))
    wall, rss = time.perf_counter() - t0, ru.ru_maxrss / 1024.0
    return (wall, rss, ru.ru_utime, ru.ru_stime) if usage else (wall, rss)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-child":
        torch_forward(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("attn")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--embd", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/attn-bench-gpt2")
    a = ap.parse_args()
    folder = os.path.join(a.dir, "model")
    if not os.path.exists(os.path.join(folder, "model.safetensors")):
        write_model(folder, a.layers, a.embd, a.heads, a.vocab, max(a.seq, 1024))
    ids = os.path.join(a.dir, "ids.npy")
    np.save(ids, np.random.default_rng(1).integers(0, a.vocab, a.seq))
    ckpt = os.path.getsize(os.path.join(folder, "model.safetensors")) / 2 ** 20
    cpu = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
           if ln.startswith("model name")][:1]
    print("CPU %s; checkpoint %.0f MiB, L %d, load average %.1f"
          % (cpu[0] if cpu else "?", ckpt, a.seq, os.getloadavg()[0]))
    w_attn, w_torch = os.path.join(a.dir, "attn_w.npy"), os.path.join(a.dir, "torch_w.npy")
    for threads in [int(t) for t in a.threads.split(",")]:
        attn_argv = [os.path.abspath(a.attn), "compute", "--params", folder, "--token-ids", ids,
                     "--weights", w_attn, "--output", os.path.join(a.dir, "attn_o.npy"),
                     "--threads", str(threads), "--quiet", "--max-memory", "none"]
        torch_argv = [sys.executable, os.path.abspath(__file__), "--torch-child", folder, ids,
                      w_torch, str(threads)]
        runs_a, runs_t = [], []
        for _ in range(a.repeat):  # interleaved, so a busy spell hits both alike
            runs_a.append(timed(attn_argv, {"OPENBLAS_NUM_THREADS": "1"}))
            runs_t.append(timed(torch_argv))
        ta, ra = (float(np.median([r[i] for r in runs_a])) for i in (0, 1))
        tt, rt = (float(np.median([r[i] for r in runs_t])) for i in (0, 1))
        err = np.abs(np.load(w_attn, mmap_mode="r") - np.load(w_torch, mmap_mode="r")).max()
        print("threads %d (median of %d): attn %.2f s, peak RSS %.0f MiB | torch eager %.2f s, "
              "peak RSS %.0f MiB | speed-up %.2fx | max |weights difference| %.2g"
              % (threads, a.repeat, ta, ra, tt, rt, tt / ta, err))
        print("  attn runs: %s; torch runs: %s"
              % (", ".join("%.2f s" % r[0] for r in runs_a),
                 ", ".join("%.2f s" % r[0] for r in runs_t)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A Llama-3.2-1B-shaped model's whole forward pass against its products alone (issue #32):
one set of random weights (hidden 2048, 16 layers, 32 heads / 8 kv heads of 64, MLP 8192,
vocabulary 128256) as a Q8_0, a Q4_0 and a Q4_K GGUF and a BF16 safetensors folder, L
random token ids, 1 and 2 threads, and in the SAME run, interleaved, --repeat rounds:

    attn compute --params FILE --token-ids ids --no-weights          (each file)
    attn compute --params FILE --token-ids ids --weights-dtype f16 --weights w.npy
    numpy's OpenBLAS sgemm: the same 7 products a layer x 16 in float32 (the limit)
    ggml_mul_mat on the GGUF's own tensors at n = L (--ggml: bench/ggml_matmul, the anchor)

Not a test: medians of wall time, user + system CPU and wait4's peak RSS per process, the
ratios against the goals (--no-weights <= the sgemm limit for the quantized files, <= 1/0.85
of it for BF16; f16 weights <= 1.25x --no-weights; peak RSS <= file + 512 MiB).

    /usr/bin/python3 bench/llama_forward.py build/release/app/attn [--seq 512]
        [--threads 1,2] [--repeat 3] [--files q8_0,q4_0,q4_k,q4_k_m,bf16] [--ggml PATH]
        [--baseline OLD_ATTN] [--no-f16] [--dir /tmp/attn-bench-llama32] [--shape 8b]
        [--simd AVX2] [--q8 | --rounded] [--ggml-plain]

--ggml places each weight as llama.cpp's loader does on a CPU (Q4_0 and Q4_K repacked into
ggml's interleaved layouts on x86 with AVX2; Q8_0 plain); --ggml-plain adds a run with every
weight plain (llama.cpp's --no-repack) in the same rounds.
--baseline runs a second binary's --no-weights in the same rounds (a change, before/after),
and with --q8 its rounded activations' runs too.
--q8 (or --rounded) runs the Q8_0 and Q4_0 files' --no-weights with --activations q8_0 too,
the Q4_K and Q4_K_M files' with --activations q8 (their inputs rounded to Q8_K) and the BF16
folder's with --activations bf16 (its inputs rounded to BF16, BF16 pair products), in the same
rounds.
q4_k_m (not in the default --files): the types llama.cpp's quantizer gives a Llama under
Q4_K_M (llama_tensor_get_type: Q6_K for the tied embeddings and for attn_v and ffn_down of
the use_more_bits layers, 8 of 16; Q4_K elsewhere), as random blocks: what users download.
--simd NAME passes `--simd NAME` to every attn run (both binaries): a SIMD target forced, e.g.
AVX2 on an AVX-512 CPU against the sgemm limit (OpenBLAS's kernel as numpy picks it).

The files are written once per --dir and kept (about 3.8 GB): Q8_0 and Q4_0 by compare.py's
reference quantizers from one set of N(0, 0.02) weights, Q4_K by gguf_first_layer.py's
random blocks, BF16 by head_stats.py's writer. The sgemm child and ggml time their products
only (the weights already in memory, one layer's float32 matrices reused for every layer).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (write_pair: Q8_0 and Q4_0 by ggml's reference quantizers)
import gguf_first_layer as g  # noqa: E402  (write: random Q4_K blocks)
import head_stats  # noqa: E402  (write_model: the BF16 folder)
from model_forward import in_child, timed  # noqa: E402

# Llama-3-8B's shape (hidden 4096, 32 layers, 32 / 8 heads of 128, MLP 14336, the same
# vocabulary): --shape 8b sets gguf_first_layer's module constants to it.
SHAPE_8B = {"E": 4096, "LAYERS": 32, "HEADS": 32, "KV": 8, "D": 128, "FF": 14336}
# --q8: the --activations choice each file runs with (llama.cpp's rounding for its type).
Q8_CHOICE = {"q8_0": "q8_0", "q4_0": "q8_0", "q4_k": "q8", "q4_k_m": "q8", "bf16": "bf16"}


def set_shape(shape):
    if shape == "8b":
        for name, value in SHAPE_8B.items():
            setattr(g, name, value)


def products():
    """The 7 products of one layer: (name, rows of W, cols of W) with y = x . W^T."""
    return [("q", g.HEADS * g.D, g.E), ("k", g.KV * g.D, g.E), ("v", g.KV * g.D, g.E),
            ("o", g.E, g.HEADS * g.D), ("gate", g.FF, g.E), ("up", g.FF, g.E),
            ("down", g.E, g.FF)]


def sgemm_child(seq, threads):
    """Run in a fresh python whose OPENBLAS_NUM_THREADS is set: the products' wall and CPU
    seconds (the process's, all threads)."""
    rng = np.random.default_rng(3)
    w = {n: rng.standard_normal((r, c), dtype=np.float32) * np.float32(0.02)
         for n, r, c in products()}
    x = rng.standard_normal((seq, g.E), dtype=np.float32)
    h = rng.standard_normal((seq, g.FF), dtype=np.float32)
    x @ w["q"].T  # OpenBLAS's threads and buffers started before timing
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(g.LAYERS):
        for n, _, c in products():
            (h if c == g.FF else x) @ w[n].T
    print(time.perf_counter() - t0, time.process_time() - c0)


def sgemm_time(seq, threads, shape):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--sgemm-child", str(seq),
                          str(threads), shape], env=env, capture_output=True, text=True,
                         check=True)
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu)


def ggml_time(ggml, path, seq, threads, plain=False):
    """bench/ggml_matmul's wall and CPU seconds for the 7 x 16 products on path's tensors
    (placed as llama.cpp places them, repacked where it repacks; plain: never repacked)."""
    out = subprocess.run([ggml, path, str(seq), str(threads)] + (["plain"] if plain else []),
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"ggml_matmul failed: {out.stderr[-500:]}")
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu)


def model_files(folder, shape="1b"):
    """{name: path}, each written unless it exists; for the 8B shape one Q4_0 file of
    random blocks (ggml's reference quantizer would take long on 8 B weights)."""
    os.makedirs(folder, exist_ok=True)
    if shape == "8b":
        return {"q4_0": g.written(os.path.join(folder, "llama-8b-q4_0.gguf"),
                                  lambda path: g.write(path, g.Q4_0))}
    p = {k: os.path.join(folder, f"llama-1b-{k}.gguf") for k in ("q8_0", "q4_0", "q4_k")}
    p["bf16"] = os.path.join(folder, "llama-1b-bf16")
    if not (os.path.exists(p["q8_0"]) and os.path.exists(p["q4_0"])):
        compare.check_quantizers()
        t0 = time.time()
        compare.write_pair([p["q8_0"], p["q4_0"]], [compare.Q8_0, compare.Q4_0])
        print(f"wrote the Q8_0 and Q4_0 files in {time.time() - t0:.0f} s")
    g.written(p["q4_k"], g.write)
    p["q4_k_m"] = g.written(os.path.join(folder, "llama-1b-q4_k_m.gguf"),
                            lambda path: g.write(path, g.Q4_K_M))
    if not os.path.exists(os.path.join(p["bf16"], "model.safetensors")):
        head_stats.write_model(p["bf16"], g.LAYERS)
    return p


def file_size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def med(runs, i):
    return statistics.median(r[i] for r in runs)


def report(a, files, runs, cpu):
    print(f"\nL {a.seq}; medians of {a.repeat}: wall s, (user + sys s), peak RSS MiB")
    for t in a.threads:
        limit, limit_cpu = med(runs[("sgemm", t)], 0), med(runs[("sgemm", t)], 2)
        print(f"threads {t}: numpy sgemm limit {limit:.2f} s, CPU {limit_cpu:.2f} s (runs "
              + ", ".join(f"{r[0]:.2f}" for r in runs[("sgemm", t)]) + ")")
        for name in a.files:
            nw = runs[(name, "nw", t)]
            goal = 1 if name != "bf16" else 1 / 0.85
            budget = file_size(files[name]) / 2**20 + 512
            line = (f"  {name:5s} --no-weights {med(nw, 0):6.2f} s ({med(nw, 2):.2f} + "
                    f"{med(nw, 3):.2f}), {med(nw, 1):5.0f} MiB: {med(nw, 0) / limit:.2f}x "
                    f"limit, CPU {(med(nw, 2) + med(nw, 3)) / limit_cpu:.2f}x (goal <= "
                    f"{goal:.2f}), RSS {'met' if med(nw, 1) <= budget else 'missed'}"
                    f" (<= {budget:.0f})")
            if (name, "f16", t) in runs:
                f16 = runs[(name, "f16", t)]
                line += (f"; f16 weights {med(f16, 0):6.2f} s, {med(f16, 1):5.0f} MiB: "
                         f"{med(f16, 0) / med(nw, 0):.2f}x (goal <= 1.25)")
            if (name, "q8", t) in runs:
                q8 = runs[(name, "q8", t)]
                line += (f"; --activations {Q8_CHOICE[name]} {med(q8, 0):6.2f} s "
                         f"({med(q8, 2):.2f} + "
                         f"{med(q8, 3):.2f}): {med(q8, 0) / limit:.2f}x limit, "
                         f"{med(q8, 0) / med(nw, 0):.2f}x f32")
            if (name, "old", t) in runs:
                old = runs[(name, "old", t)]
                line += (f"; baseline {med(old, 0):6.2f} s ({med(old, 2):.2f} + "
                         f"{med(old, 3):.2f}), {med(old, 1):5.0f} MiB")
            if (name, "old q8", t) in runs:
                old = runs[(name, "old q8", t)]
                line += (f"; baseline --activations {Q8_CHOICE[name]} {med(old, 0):6.2f} s "
                         f"({med(old, 2):.2f} + {med(old, 3):.2f})")
            for key, label in (("ggml", "ggml_mul_mat"), ("ggml plain", "plain (--no-repack)")):
                if (key, name, t) in runs:
                    gm, gm_cpu = med(runs[(key, name, t)], 0), med(runs[(key, name, t)], 2)
                    line += (f"; {label} {gm:.2f} s, CPU {gm_cpu:.2f} s (attn / ggml "
                             f"{med(nw, 0) / gm:.2f}x, CPU "
                             f"{(med(nw, 2) + med(nw, 3)) / gm_cpu:.2f}x)")
            print(line)
    print(f"CPU: {cpu}; attn --simd {a.simd or 'best (not forced)'}; load average at the end "
          f"{os.getloadavg()[0]:.1f}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--sgemm-child":
        set_shape(sys.argv[4])
        sgemm_child(int(sys.argv[2]), int(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("attn")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--files", default="q8_0,q4_0,q4_k,bf16")
    ap.add_argument("--ggml", help="bench/ggml_matmul's binary: the anchor column")
    ap.add_argument("--ggml-plain", action="store_true",
                    help="also ggml with every weight unpacked (llama.cpp's --no-repack)")
    ap.add_argument("--baseline", help="a second attn binary, --no-weights only")
    ap.add_argument("--no-f16", action="store_true", help="skip the f16 weights runs")
    ap.add_argument("--dir", default="/tmp/attn-bench-llama32")
    ap.add_argument("--shape", choices=["1b", "8b"], default="1b",
                    help="8b: Llama-3-8B's shape, one Q4_0 file of random blocks (4.3 GiB)")
    ap.add_argument("--simd", help="a SIMD target for every attn run (attn's --simd)")
    ap.add_argument("--q8", "--rounded", dest="q8", action="store_true",
                    help="also --no-weights with --activations q8_0 (Q8_0, Q4_0), q8 "
                    "(Q4_K) or bf16 (BF16): the rounded activations' products")
    a = ap.parse_args()
    set_shape(a.shape)
    if a.shape == "8b":
        a.files = "q4_0"
    a.threads = [int(t) for t in a.threads.split(",")]
    a.files = a.files.split(",")
    attn = os.path.abspath(a.attn)
    in_child(model_files, a.dir, a.shape)  # written apart: see in_child
    files = model_files(a.dir, a.shape)
    ids = os.path.join(a.dir, f"ids{a.seq}.npy")
    np.save(ids, np.random.default_rng(2).integers(0, g.VOCAB, a.seq))
    model = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
             if ln.startswith("model name")][:1]
    flags = next((ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")), "").split()
    cpu = (f"{model[0] if model else '?'} ({os.cpu_count()} CPUs, avx512f "
           f"{'yes' if 'avx512f' in flags else 'no'}); "
           + os.popen(f"{attn} --version").read().strip().replace("\n", "; "))
    rss = next(ln.split()[1] for ln in open("/proc/self/status") if ln.startswith("VmRSS"))
    print(f"{cpu}\nload average at the start {os.getloadavg()[0]:.1f}; this harness's RSS "
          f"{int(rss) / 1024:.0f} MiB (a floor under every run's peak RSS below)")
    runs = {}
    out, w = os.path.join(a.dir, "o.npy"), os.path.join(a.dir, "w.npy")
    for r in range(a.repeat):  # interleaved, so a busy spell hits all alike
        for t in a.threads:
            wall, products_cpu = sgemm_time(a.seq, t, a.shape)
            runs.setdefault(("sgemm", t), []).append((wall, 0, products_cpu, 0))
            for name in a.files:
                base = [attn, "compute", "--params", files[name], "--token-ids", ids,
                        "--threads", str(t), "--quiet", "--max-memory", "none", "-o", out]
                base += ["--simd", a.simd] if a.simd else []
                runs.setdefault((name, "nw", t), []).append(
                    timed(base + ["--no-weights"], usage=True))
                if not a.no_f16:
                    runs.setdefault((name, "f16", t), []).append(
                        timed(base + ["--weights-dtype", "f16", "--weights", w], usage=True))
                if a.q8 and name in Q8_CHOICE:
                    runs.setdefault((name, "q8", t), []).append(timed(
                        base + ["--no-weights", "--activations", Q8_CHOICE[name]], usage=True))
                if a.baseline:
                    old = [os.path.abspath(a.baseline)] + base[1:] + ["--no-weights"]
                    runs.setdefault((name, "old", t), []).append(timed(old, usage=True))
                    if a.q8 and name in Q8_CHOICE:
                        runs.setdefault((name, "old q8", t), []).append(timed(
                            old + ["--activations", Q8_CHOICE[name]], usage=True))
                if a.ggml and name != "bf16":
                    wall, ggml_cpu = ggml_time(a.ggml, files[name], a.seq, t)
                    runs.setdefault(("ggml", name, t), []).append((wall, 0, ggml_cpu, 0))
                    if a.ggml_plain:
                        wall, ggml_cpu = ggml_time(a.ggml, files[name], a.seq, t, plain=True)
                        runs.setdefault(("ggml plain", name, t), []).append(
                            (wall, 0, ggml_cpu, 0))
        print(f"round {r + 1} of {a.repeat} done, load average {os.getloadavg()[0]:.1f}",
              flush=True)
    if os.path.exists(w):
        os.remove(w)
    report(a, files, runs, cpu)


if __name__ == "__main__":
    main()

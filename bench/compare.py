#!/usr/bin/env python3
"""`attn compare` on two real-size models (issue #35): one set of random weights shaped like
Llama 3.2 1B (hidden 2048, 16 layers, 32 heads / 8 kv heads of 64, MLP 8192, vocabulary
128256, tied embeddings; matrices N(0, 0.02), norms float32, seeded) quantized two ways,
Q8_0 and Q4_0, into two GGUF files; then, on L random token ids, the time and peak RSS of
`attn compute --no-weights` on each file and of `attn compare Q8_0.gguf Q4_0.gguf` (runs
interleaved, medians of --repeat; each process timed from fork to exit with wait4's peak
RSS, as model_forward.py does), one more compare with --html for the page's cost, and the
comparison's answer (the most different layer and head, mean js per layer).

    /usr/bin/python3 bench/compare.py build/release/app/attn [--seq 512] [--repeat 3]
        [--threads 2] [--dir /tmp/attn-bench-compare]

Goals: compare <= 2.2x the mean of the two --no-weights runs, peak RSS <= both files +
512 MiB. The quantizers are ggml's reference ones (ggml-quants.c, quantize_row_q8_0_ref
and quantize_row_q4_0_ref), vectorised: the files are what llama.cpp's reference path would
write for these weights (with --pure: every matrix, the tied embeddings too, in one type).
The GGUF layout (header, metadata, tensor infos) is gguf_first_layer.py's writer. The files
are written once per --dir (about 2 GB) and kept.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_first_layer as g  # noqa: E402
from model_forward import in_child, timed  # noqa: E402

Q4_0, Q8_0 = 2, 8
QK = 32
BLOCK_BYTES = {Q8_0: 34, Q4_0: 18}
ROWS_PER_CHUNK = 4096  # rows of a matrix generated and quantized at once (<= 128 MiB f32)


def fp16_bytes(d):
    """ggml's GGML_FP32_TO_FP16 (round to nearest even, as numpy's cast) as 2 bytes a row."""
    return d.astype("<f2").view(np.uint8).reshape(-1, 2)


def round_away(v):
    """C's roundf: halves away from zero (np.rint rounds them to even)."""
    t = np.trunc(v)
    return np.where(np.abs(v - t) == np.float32(0.5), t + np.sign(v), np.rint(v))


def quantize_q8_0(x):
    """quantize_row_q8_0_ref on float32 x [n]: per 32 values d = max|x| / 127 (fp16),
    q = roundf(x / d) as int8; 34 bytes a block."""
    x = x.reshape(-1, QK)
    d = np.abs(x).max(axis=1) / np.float32(127)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    out = np.empty((x.shape[0], 34), np.uint8)
    out[:, :2] = fp16_bytes(d)
    out[:, 2:] = round_away(x * inv[:, None]).astype(np.int8).view(np.uint8)
    return out


def quantize_q4_0(x):
    """quantize_row_q4_0_ref: d = (the value of largest magnitude, the first on a tie) / -8
    (fp16), q = min(15, (int8)(x / d + 8.5)); byte j holds q[j] (low nibble) and q[j + 16]
    (high); 18 bytes a block."""
    x = x.reshape(-1, QK)
    first_max = x[np.arange(x.shape[0]), np.abs(x).argmax(axis=1)]
    d = first_max / np.float32(-8)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    q = np.minimum(15, np.trunc(x * inv[:, None] + np.float32(8.5))).astype(np.uint8)
    out = np.empty((x.shape[0], 18), np.uint8)
    out[:, :2] = fp16_bytes(d)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out


QUANTIZE = {Q8_0: quantize_q8_0, Q4_0: quantize_q4_0}


def nbytes(shape, kind):
    n = int(np.prod(shape))
    return n * 4 if kind == g.F32 else n // QK * BLOCK_BYTES[kind]


def write_pair(paths, kinds, seed=0):
    """One set of weights, each matrix quantized as kinds[i] into paths[i]; written chunk
    by chunk (never a whole matrix in memory)."""
    rng = np.random.default_rng(seed)
    files = [open(p + ".part", "wb") for p in paths]
    for f, kind in zip(files, kinds):
        f.write(g.header(g.llama_meta(),
                         [(n, s, k, nbytes(s, k)) for n, s, k in g.tensors(kind)]))
    for name, shape, kind in g.tensors(None):
        if kind == g.F32:
            data = (1 + 0.1 * rng.standard_normal(shape, dtype=np.float32)).astype("<f4")
            for f in files:
                f.write(data.tobytes() + g.pad(data.nbytes))
            continue
        for r in range(0, shape[0], ROWS_PER_CHUNK):
            rows = min(ROWS_PER_CHUNK, shape[0] - r)
            x = rng.standard_normal((rows, shape[1]), dtype=np.float32) * np.float32(0.02)
            for f, k in zip(files, kinds):
                f.write(QUANTIZE[k](x.ravel()).tobytes())
        for f, k in zip(files, kinds):
            f.write(g.pad(nbytes(shape, k)))
    for f, p in zip(files, paths):
        f.close()
        os.replace(p + ".part", p)


def check_quantizers():
    """The vectorised quantizers against a literal per-value transcription of ggml's C (ties,
    zeros and the rounding edge included) on a few thousand blocks."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(QK * 2000) * 0.02).astype(np.float32)
    x[:QK] = 0                                                 # an all-zero block
    x[QK:2 * QK] = np.arange(QK, dtype=np.float32) * np.float32(0.5) * np.float32(
        -1) ** np.arange(QK)                                   # d = 1 in Q8_0: exact halves
    x[QK + 1] = np.float32(127)                                # (roundf: away from zero)
    x[2 * QK + 3], x[2 * QK + 9] = np.float32(-0.07), np.float32(0.07)  # |max| tie: first wins
    for kind, ref in ((Q8_0, ref_q8_0), (Q4_0, ref_q4_0)):
        got = QUANTIZE[kind](x)
        want = np.array([ref(x[i:i + QK]) for i in range(0, x.size, QK)], np.uint8)
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)[:3]
            sys.exit(f"quantizer {kind} differs from the C transcription at {bad.tolist()}")


def ref_q8_0(b):
    amax = np.float32(0)
    for v in b:
        amax = max(amax, abs(v))
    d = np.float32(amax / np.float32(127))
    inv = np.float32(1) / d if d else np.float32(0)
    qs = []
    for v in b:
        x0 = np.float32(v * inv)
        qs.append(int(math.copysign(math.floor(abs(float(x0)) + 0.5), x0)))  # roundf
    return (list(fp16_bytes(np.array([d], np.float32))[0])
            + list(np.array(qs, np.int8).view(np.uint8)))


def ref_q4_0(b):
    amax, mx = np.float32(0), np.float32(0)
    for v in b:
        if amax < abs(v):
            amax, mx = abs(v), v
    d = np.float32(mx / np.float32(-8))
    inv = np.float32(1) / d if d else np.float32(0)
    q = [min(15, int(np.float32(np.float32(v * inv) + np.float32(8.5)))) for v in b]
    return list(fp16_bytes(np.array([d], np.float32))[0]) + [q[j] | q[j + 16] << 4
                                                            for j in range(16)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("attn")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/attn-bench-compare")
    a = ap.parse_args()
    attn = os.path.abspath(a.attn)
    os.makedirs(a.dir, exist_ok=True)
    q8, q4 = os.path.join(a.dir, "llama-1b-q8_0.gguf"), os.path.join(a.dir, "llama-1b-q4_0.gguf")
    check_quantizers()
    if not (os.path.exists(q8) and os.path.exists(q4)):
        t0 = time.time()
        in_child(write_pair, [q8, q4], [Q8_0, Q4_0])  # written apart: see in_child
        print(f"wrote {q8} and {q4} in {time.time() - t0:.0f} s")
    ids = os.path.join(a.dir, "ids.npy")
    np.save(ids, np.random.default_rng(2).integers(0, g.VOCAB, a.seq))
    s8, s4 = os.path.getsize(q8), os.path.getsize(q4)
    model = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
             if ln.startswith("model name")][:1]
    flags = next((ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")), "").split()
    version = os.popen(f"{attn} --version").read().strip().replace("\n", "; ")
    print(f"CPU {model[0] if model else '?'} ({os.cpu_count()} CPUs, "
          f"avx512f {'yes' if 'avx512f' in flags else 'no'}); {version}")
    print(f"files: Q8_0 {s8 / 2**20:.0f} MiB, Q4_0 {s4 / 2**20:.0f} MiB; L {a.seq}, "
          f"threads {a.threads}, load average {os.getloadavg()[0]:.1f}")

    common = ["--token-ids", ids, "--threads", str(a.threads), "--quiet"]
    argv = {
        "compute Q8_0": [attn, "compute", "--params", q8, "--no-weights", "--max-memory", "none",
                         "-o", os.path.join(a.dir, "o8.npy")] + common,
        "compute Q4_0": [attn, "compute", "--params", q4, "--no-weights", "--max-memory", "none",
                         "-o", os.path.join(a.dir, "o4.npy")] + common,
        "compare": [attn, "compare", q8, q4, "-o", os.path.join(a.dir, "cmp.npz")] + common,
    }
    runs = {k: [] for k in argv}
    for _ in range(a.repeat):  # interleaved, so a busy spell hits all alike
        for k, v in argv.items():
            runs[k].append(timed(v))
    med = {k: tuple(float(np.median([r[i] for r in v])) for i in (0, 1)) for k, v in runs.items()}
    for k, (t, rss) in med.items():
        print(f"{k:13s} median of {a.repeat}: {t:6.2f} s, peak RSS {rss:5.0f} MiB   (runs: "
              + ", ".join(f"{r[0]:.2f}" for r in runs[k]) + ")")
    one = (med["compute Q8_0"][0] + med["compute Q4_0"][0]) / 2
    ratio = med["compare"][0] / one
    budget = (s8 + s4) / 2**20 + 512
    print(f"compare / mean(one model) = {med['compare'][0]:.2f} / {one:.2f} = {ratio:.2f}x "
          f"(goal <= 2.2x: {'met' if ratio <= 2.2 else 'missed'})")
    print(f"compare peak RSS {med['compare'][1]:.0f} MiB vs both files + 512 MiB = "
          f"{budget:.0f} MiB ({'met' if med['compare'][1] <= budget else 'missed'})")
    html = os.path.join(a.dir, "cmp.html")
    t, rss = timed(argv["compare"][:-1] + ["--html", html])
    print(f"compare --html (one run): {t:.2f} s, peak RSS {rss:.0f} MiB, page "
          f"{os.path.getsize(html) / 2**20:.1f} MiB "
          f"(+{t - med['compare'][0]:.2f} s over the median)")

    c = np.load(os.path.join(a.dir, "cmp.npz"))
    js = c["js"]
    if not np.all(np.isfinite(js)) or not np.all(js > 0):
        print(f"ODD: js has {np.sum(~np.isfinite(js))} non-finite and {np.sum(js == 0)} "
              "zero cells")
    layer, head = np.unravel_index(np.nanargmax(js), js.shape)
    print(f"answer: most different: layer {layer} head {head} (js {js[layer, head]:.3g}); mean js "
          f"{np.nanmean(js):.3g} over {js.size} maps, {int(c['rows'][0])} query rows each; "
          f"mean tv {np.nanmean(c['tv']):.3g}, top1 agreement {np.nanmean(c['top1']):.3f}, "
          f"top{int(c['top_k'][0])} overlap {np.nanmean(c['topk']):.3f}")
    print("per layer (mean over heads): js " + " ".join(f"{v:.2g}" for v in js.mean(axis=1)))
    print("                          top1 " + " ".join(f"{v:.2f}" for v in c["top1"].mean(axis=1)))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""attn compute --no-weights against numpy float32 on the same NPY files, in one run.

Writes Q, K, V as [1, H, L, D] float32 .npy files, then alternates runs of
  attn compute -q q.npy -k k.npy -v v.npy --no-weights --threads T -o out.npy
and a numpy float32 attention (this script, --numpy mode, one head at a time) under
/usr/bin/time -v, checks that both outputs agree, and prints the median wall times,
their ratio and each side's peak RSS. With --attn-only (long sequences, where numpy's
L x L scores do not fit) it runs attn alone and compares its peak RSS with the size of
the inputs plus the output.

--attn-flags "--simd AVX2" adds flags to every attn run (shell-split). --torch also runs
torch.nn.functional's scaled dot-product attention on the same files (torch 1.13:
`_scaled_dot_product_attention`, newer: `scaled_dot_product_attention`) with
torch.set_num_threads(--threads), alternated with the others, and prints its ratio.
torch is a benchmark dependency only (Debian's python3-torch), never a test one.

It does not set or unset OPENBLAS_CORETYPE: the caller decides (prefix the command with
`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` or `OPENBLAS_CORETYPE=SkylakeX`), and the
report names the OpenBLAS kernel numpy actually ran.

Needs Debian's python3-numpy (/usr/bin/python3) and the `time` package (/usr/bin/time).
Example:
  /usr/bin/python3 bench/compare_numpy.py --attn build/release/app/attn -L 4096 -H 8 -D 64
"""
import argparse
import ctypes
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time


def openblas_core():
    """The OpenBLAS kernel numpy's BLAS runs (read from the loaded library)."""
    with open("/proc/self/maps") as maps:
        libs = {line.split()[-1] for line in maps if "blas" in line and ".so" in line}
    for lib in sorted(libs):
        try:
            handle = ctypes.CDLL(lib)
            fn = handle.openblas_get_corename
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_char_p
        return fn().decode() + " (" + os.path.realpath(lib) + ")"
    return "unknown (no OpenBLAS loaded)"


def numpy_mode(argv):
    """--numpy Q K V OUT: float32 softmax(Q·Kᵀ/√D)·V, head by head; prints compute time."""
    import numpy as np

    qf, kf, vf, outf = argv
    q, k, v = np.load(qf), np.load(kf), np.load(vf)
    scale = np.float32(1.0 / np.sqrt(q.shape[-1]))
    t0 = time.perf_counter()
    out = np.empty((q.shape[0], q.shape[1], q.shape[2], v.shape[3]), dtype=np.float32)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            s = (q[b, h] @ k[b, h].T) * scale
            s -= s.max(axis=1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=1, keepdims=True)
            out[b, h] = s @ v[b, h]
    t1 = time.perf_counter()
    np.save(outf, out)
    print(f"numpy_compute_seconds {t1 - t0:.4f}")
    print(f"numpy_blas_core {openblas_core()}")


def torch_mode(argv):
    """--torch Q K V OUT THREADS: torch's scaled dot-product attention, all heads in one
    call, float32, THREADS intra-op threads; prints compute time and the torch version."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    qf, kf, vf, outf, threads = argv
    torch.set_num_threads(int(threads))
    q, k, v = (torch.from_numpy(np.load(f)) for f in (qf, kf, vf))
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    with torch.inference_mode():
        t0 = time.perf_counter()
        if sdpa is not None:
            out = sdpa(q, k, v)
        else:  # torch 1.13: returns (output, weights)
            out = F._scaled_dot_product_attention(q, k, v, need_attn_weights=False)[0]
        t1 = time.perf_counter()
    np.save(outf, out.numpy())
    print(f"torch_compute_seconds {t1 - t0:.4f}")
    print(f"torch_version {torch.__version__}, {torch.get_num_threads()} threads")


def timed(cmd):
    """Runs cmd under /usr/bin/time -v: (wall seconds, peak RSS in MiB, stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    return wall, rss_kb / 1024.0, proc.stdout


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--numpy":
        numpy_mode(sys.argv[2:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-run":
        torch_mode(sys.argv[2:])
        return
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--attn", required=True, help="path of the attn binary")
    ap.add_argument("-L", type=int, default=4096)
    ap.add_argument("-H", type=int, default=8)
    ap.add_argument("-D", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--causal", action="store_true", help="attn only: --causal (numpy has no skip)")
    ap.add_argument("--attn-only", action="store_true", help="skip numpy (long sequences)")
    ap.add_argument("--dir", help="folder for the .npy files (default: a temporary one)")
    ap.add_argument("--attn-flags", default="",
                    help='extra attn compute flags, e.g. --attn-flags="--simd AVX2"')
    ap.add_argument("--torch", action="store_true",
                    help="also time torch's scaled dot-product attention (python3-torch)")
    args = ap.parse_args()

    work = args.dir or tempfile.mkdtemp(prefix="attn-cmp-")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    shape = (1, args.H, args.L, args.D)
    paths = {n: os.path.join(work, n + ".npy") for n in ("q", "k", "v")}
    for n, p in paths.items():
        np.save(p, rng.uniform(-1, 1, size=shape).astype(np.float32))
    attn_out = os.path.join(work, "attn_out.npy")
    numpy_out = os.path.join(work, "numpy_out.npy")
    attn_cmd = [args.attn, "compute", "-q", paths["q"], "-k", paths["k"], "-v", paths["v"],
                "--no-weights", "--threads", str(args.threads), "-o", attn_out]
    if args.causal:
        attn_cmd.append("--causal")
    attn_cmd += shlex.split(args.attn_flags)
    torch_out = os.path.join(work, "torch_out.npy")
    torch_cmd = ["/usr/bin/python3", os.path.abspath(__file__), "--torch-run",
                 paths["q"], paths["k"], paths["v"], torch_out, str(args.threads)]
    numpy_cmd = ["/usr/bin/python3", os.path.abspath(__file__), "--numpy",
                 paths["q"], paths["k"], paths["v"], numpy_out]

    io_mib = 4 * args.H * args.L * args.D * 4 / 2**20  # q, k, v and the output, float32
    print(f"shape [1, {args.H}, {args.L}, {args.D}] f32, threads {args.threads}, "
          f"inputs+output {io_mib:.0f} MiB, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print("attn: " + " ".join(attn_cmd))
    attn_runs, numpy_runs, numpy_compute = [], [], []
    torch_runs, torch_compute = [], []
    attn_rss = numpy_rss = torch_rss = 0.0
    core = torch_version = "-"
    for _ in range(args.repeats):  # alternate, so drifting machine load hits both alike
        wall, rss, _ = timed(attn_cmd)
        attn_runs.append(wall)
        attn_rss = max(attn_rss, rss)
        if not args.attn_only:
            wall, rss, out = timed(numpy_cmd)
            numpy_runs.append(wall)
            numpy_rss = max(numpy_rss, rss)
            numpy_compute.append(float(re.search(r"numpy_compute_seconds (\S+)", out).group(1)))
            core = re.search(r"numpy_blas_core (.*)", out).group(1)
        if args.torch and not args.attn_only:
            wall, rss, out = timed(torch_cmd)
            torch_runs.append(wall)
            torch_rss = max(torch_rss, rss)
            torch_compute.append(float(re.search(r"torch_compute_seconds (\S+)", out).group(1)))
            torch_version = re.search(r"torch_version (.*)", out).group(1)

    flops = 4.0 * args.H * args.L * args.L * args.D
    a = statistics.median(attn_runs)
    print(f"attn   wall median {a:.3f} s ({flops / a / 1e9:.1f} GFLOP/s dense-equivalent, "
          f"incl. reading and writing files), peak RSS {attn_rss:.0f} MiB "
          f"= {attn_rss / io_mib:.2f}x inputs+output")
    if args.attn_only:
        return
    got = np.load(attn_out)

    def compare(label, out, runs, compute, rss, extra):
        """The other side's output agrees with attn's; its wall and compute-only medians
        and their ratios to attn's wall."""
        err = float(np.max(np.abs(got - np.load(out))))
        if not err <= 1e-4:
            sys.exit(f"MISMATCH: max |attn - {label}| = {err:g}")
        m = statistics.median(runs)
        c = statistics.median(compute)
        print(f"{label:<6} wall median {m:.3f} s (compute only {c:.3f} s), peak RSS {rss:.0f} MiB, "
              f"{extra}")
        print(f"ratio  {label}/attn wall {m / a:.2f}x, {label} compute-only/attn wall {c / a:.2f}x; "
              f"max |attn - {label}| = {err:.2e}")

    compare("numpy", numpy_out, numpy_runs, numpy_compute, numpy_rss, f"BLAS kernel {core}")
    if args.torch:
        compare("torch", torch_out, torch_runs, torch_compute, torch_rss, f"torch {torch_version}")

if __name__ == "__main__":
    main()

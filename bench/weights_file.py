#!/usr/bin/python3
"""The weights path and the picture path at scale, in one run (issue #24's goals).

Writes Q, K, V as [1, H, L, D] float32 .npy files, then alternates, under /usr/bin/time -v
(wall time and peak RSS, medians over --repeats):
  attn:   attn compute -q q.npy -k k.npy -v v.npy --weights w.npy -o o.npy --threads T
  numpy:  this script's --numpy mode: float32 matmul-softmax-matmul over all heads at once,
          then np.save of the weights and of the output
and checks that the weights agree. Then, on attn's w.npy (H·L·L float32):
  heatmap: attn heatmap w.npy -o w.png (the file mapped, each panel's pages dropped once
           pooled) and the same bytes through stdin (read whole, then decoded: the old
           path), checking that both pictures are byte-identical.
Prints the CPU (lscpu's model name), the medians, the ratios and the peak RSS against the
inputs' size. Needs Debian's python3-numpy and /usr/bin/time.

Example:
  /usr/bin/python3 bench/weights_file.py --attn build/bench/app/attn -L 4096 -H 8 -D 64
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def numpy_mode(argv):
    import numpy as np

    qf, kf, vf, wf, of = argv
    q, k, v = np.load(qf), np.load(kf), np.load(vf)
    s = (q @ np.swapaxes(k, -1, -2)) * np.float32(1.0 / np.sqrt(q.shape[-1]))
    s -= s.max(-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(-1, keepdims=True)
    o = s @ v
    np.save(wf, s)
    np.save(of, o)


def timed(cmd, stdin=None):
    """(wall seconds, peak RSS in MB, stdout bytes) of cmd under /usr/bin/time -v."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdin=stdin, capture_output=True)
    wall = time.perf_counter() - t0
    err = p.stderr.decode()
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {err[-2000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)) / 1024
    return wall, rss, p.stdout


def cpu_name():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    m = re.search(r"Model name:\s*(.+)", out)
    return m.group(1).strip() if m else "unknown"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--numpy":
        numpy_mode(sys.argv[2:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn", required=True)
    ap.add_argument("-L", type=int, default=4096)
    ap.add_argument("-H", type=int, default=8)
    ap.add_argument("-D", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", default=None, help="working folder (default: a temp folder)")
    a = ap.parse_args()
    import numpy as np

    d = a.dir or tempfile.mkdtemp(prefix="attn-weights-bench-")
    rng = np.random.default_rng(0)
    files = {}
    for n in "qkv":
        files[n] = os.path.join(d, n + ".npy")
        np.save(files[n], rng.standard_normal((1, a.H, a.L, a.D)).astype(np.float32))
    inputs_mb = sum(os.path.getsize(f) for f in files.values()) / 2**20
    w_attn, o_attn = os.path.join(d, "w.npy"), os.path.join(d, "o.npy")
    w_np, o_np = os.path.join(d, "w_np.npy"), os.path.join(d, "o_np.npy")
    attn_cmd = [a.attn, "compute", "-q", files["q"], "-k", files["k"], "-v", files["v"],
                "--weights", w_attn, "-o", o_attn, "--threads", str(a.threads)]
    np_cmd = [sys.executable, os.path.abspath(__file__), "--numpy", files["q"], files["k"],
              files["v"], w_np, o_np]
    env_threads = str(a.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = env_threads
    attn_runs, np_runs = [], []
    for _ in range(a.repeats):
        attn_runs.append(timed(attn_cmd)[:2])
        np_runs.append(timed(np_cmd)[:2])
    wa, wn = np.load(w_attn, mmap_mode="r"), np.load(w_np, mmap_mode="r")
    err = max(float(np.abs(wa[0, h] - wn[0, h]).max()) for h in range(a.H))
    if err > 1e-4:
        sys.exit(f"weights disagree: max |attn - numpy| = {err:g}")

    png, png_old = os.path.join(d, "w.png"), os.path.join(d, "w_old.png")
    heat_runs, heat_old = [], []
    for _ in range(a.repeats):
        heat_runs.append(timed([a.attn, "heatmap", w_attn, "-o", png, "--title", "w"])[:2])
        with open(w_attn, "rb") as f:
            t, rss, out = timed([a.attn, "heatmap", "-", "-o", "-", "--title", "w"], stdin=f)
        heat_old.append((t, rss))
        with open(png_old, "wb") as g:
            g.write(out)
    with open(png, "rb") as f1, open(png_old, "rb") as f2:
        identical = f1.read() == f2.read()

    def med(runs, i):
        return statistics.median(r[i] for r in runs)

    w_mb = os.path.getsize(w_attn) / 2**20
    print(f"CPU: {cpu_name()}; L = {a.L}, H = {a.H}, D = {a.D}, threads {a.threads}, "
          f"{a.repeats} runs each, medians")
    print(f"inputs {inputs_mb:.0f} MB, weights file {w_mb:.0f} MB; max |attn - numpy| {err:.2g}")
    ta, tn = med(attn_runs, 0), med(np_runs, 0)
    print(f"weights path: attn {ta:.2f} s, {med(attn_runs, 1):.0f} MB peak RSS "
          f"(inputs + {med(attn_runs, 1) - inputs_mb:.0f} MB); numpy matmul-softmax-matmul + "
          f"np.save {tn:.2f} s, {med(np_runs, 1):.0f} MB; numpy / attn = {tn / ta:.2f}x")
    print(f"heatmap PNG of w.npy: mapped {med(heat_runs, 0):.2f} s, {med(heat_runs, 1):.0f} MB "
          f"peak RSS; read through stdin (the old path) {med(heat_old, 0):.2f} s, "
          f"{med(heat_old, 1):.0f} MB; pictures byte-identical: {identical}")
    print(f"picture {os.path.getsize(png) / 2**20:.2f} MB")


if __name__ == "__main__":
    main()

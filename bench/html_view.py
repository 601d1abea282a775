#!/usr/bin/python3
"""The HTML view at scale: writes an L x L, H-head view (default L = 4096, H = 8: the
largest one page holds) with `attn heatmap`, reports its size and the time to write it,
then opens it from file:// in headless chromium (tests/browser/cdp.py) and reports the
time until the page is drawn and ready, and how long a head switch, a zoom and a hover
take once it is (measured in the page with performance.now()). A benchmark, not a test:

    /usr/bin/python3 bench/html_view.py --attn build/bench/app/attn [-L 4096] [-H 8] [--causal]

Weights are softmax rows of N(0, 1) scores (float32, .npy), like an untrained layer's;
--causal zeroes and hatches the upper triangle (--masked-zero), as a decoder's are.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "browser"))
import cdp  # noqa: E402


def weights(L, H, causal, path):
    rng = np.random.default_rng(0)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(H, L, L))
    for h in range(H):
        for r0 in range(0, L, 512):
            s = rng.standard_normal((min(512, L - r0), L), dtype=np.float32)
            if causal:
                rows = np.arange(r0, r0 + s.shape[0])[:, None]
                s[np.arange(L)[None, :] > rows] = -np.inf
            e = np.exp(s - s.max(-1, keepdims=True))
            out[h, r0:r0 + s.shape[0]] = e / e.sum(-1, keepdims=True)
    out.flush()
    del out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", required=True)
    ap.add_argument("-L", type=int, default=4096)
    ap.add_argument("-H", type=int, default=8)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--keep", help="keep the page at this path")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="attn-html-bench-")
    npy, html = os.path.join(tmp, "w.npy"), a.keep or os.path.join(tmp, "view.html")
    weights(a.L, a.H, a.causal, npy)
    t0 = time.monotonic()
    subprocess.run([a.attn, "heatmap", npy, "-o", html] + (["--masked-zero"] if a.causal else []),
                   check=True)
    t_write = time.monotonic() - t0
    size = os.path.getsize(html)
    print(f"L = {a.L}, H = {a.H}{', causal' if a.causal else ''}: {a.H * a.L * a.L:,} cells")
    print(f"attn heatmap -o view.html: {t_write:.1f} s, {size / 1e6:.1f} MB "
          f"({size / (a.H * a.L * a.L):.2f} bytes per cell)")
    with cdp.Browser(timeout=300) as b:
        t0 = time.monotonic()
        page = b.open("file://" + html)
        page.wait_for("document.body && document.body.dataset.ready === '1'", timeout=600,
                      poll=0.05)
        t_ready = time.monotonic() - t0
        in_page = page.eval("attnView.loadMs")
        timing = page.eval("""(() => {
            const t = (f) => { const t0 = performance.now(); f(); return performance.now() - t0; };
            const c = attnView.cellCenter(100, 100);
            const move = new MouseEvent('mousemove', {clientX: c.x, clientY: c.y, bubbles: true});
            return {
              head: t(() => attnView.setPanel(1)),
              zoom: t(() => attnView.zoom(1 / 16, 2000, 2000)),
              hover: t(() => document.getElementById('map').dispatchEvent(move)),
              reset: t(() => attnView.reset()),
            };
        })()""")
        errors, requests = page.errors(), page.requests()
    print(f"chromium: ready {t_ready:.1f} s after navigation ({in_page / 1000:.1f} s in the page: "
          "decode, inflate, thumbnails, first map)")
    print("then: head switch {head:.0f} ms, zoom {zoom:.0f} ms, hover {hover:.1f} ms, "
          "whole map {reset:.0f} ms".format(**timing))
    print(f"console errors: {len(errors)}, network requests: {len(requests)}")
    if not a.keep:
        os.remove(html)
    os.remove(npy)
    os.rmdir(tmp) if not a.keep else None
    return 1 if errors or requests else 0


if __name__ == "__main__":
    sys.exit(main())

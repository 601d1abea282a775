#!/usr/bin/python3
"""The HTML view at scale: writes an L x L, H-head view (default L = 4096, H = 8) or, with
--layers N, a model view of N layers x H heads (`--layers 12 -H 12 -L 1024`: GPT-2 small
at 1024 tokens, 151 M cells) with `attn heatmap`, reports its size, the time to write it
and attn's peak RSS, then opens it from file:// in headless chromium
(tests/browser/cdp.py) and reports the time until the page is drawn and ready, and how
long a head switch, a zoom, a hover and the head view of one layer take once it is
(measured in the page with performance.now()). A benchmark, not a test:

    /usr/bin/python3 bench/html_view.py --attn build/bench/app/attn [-L 4096] [-H 8] [--causal]
    /usr/bin/python3 bench/html_view.py --attn build/bench/app/attn --layers 12 -H 12 -L 1024
    /usr/bin/python3 bench/html_view.py --attn build/release/app/attn --compute -L 32768 -H 1 --causal
        [--baseline OLD_ATTN] [--no-browser] [--threads N]

--compute: the long view (L > 4096: pooled levels and top-k, render/long_view.hpp) built
by `attn compute -q -k -v --heatmap view.html` from the kernel's row blocks (Q, K, V
N(0, 1), D = 64, float32), timed against the same run with `--no-weights` (interleaved,
median of --repeat runs each), with the page's size and the peak RSS of both; then the
page in chromium: ready, the whole map, full zoom on a cell, a hover.

Weights are softmax rows of N(0, 1) scores (float32, .npy), like an untrained layer's;
--causal zeroes and hatches the upper triangle (--masked-zero), as a decoder's are.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "browser"))
import cdp  # noqa: E402


def weights(L, H, causal, path, layers):
    rng = np.random.default_rng(0)
    shape = (layers, 1, H, L, L) if layers else (H, L, L)
    mapped = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=shape)
    out = mapped.reshape(-1, L, L)
    for h in range(out.shape[0]):
        for r0 in range(0, L, 512):
            s = rng.standard_normal((min(512, L - r0), L), dtype=np.float32)
            if causal:
                rows = np.arange(r0, r0 + s.shape[0])[:, None]
                s[np.arange(L)[None, :] > rows] = -np.inf
            e = np.exp(s - s.max(-1, keepdims=True))
            out[h, r0:r0 + s.shape[0]] = e / e.sum(-1, keepdims=True)
    mapped.flush()
    del out, mapped


def run_timed(argv):
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of a child process."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv} failed")
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def long_main(a):
    """--compute: the long view from compute against the --no-weights run."""
    tmp = tempfile.mkdtemp(prefix="attn-html-bench-")
    html = a.keep or os.path.join(tmp, "view.html")
    rng = np.random.default_rng(0)
    files = []
    for n in "qkv":
        files += ["-" + n, os.path.join(tmp, n + ".npy")]
        np.save(files[-1], rng.standard_normal((a.H, a.L, 64), dtype=np.float32))
    base = [os.path.abspath(a.attn), "compute"] + files + (["--causal"] if a.causal else []) + [
        "--output", os.path.join(tmp, "o.npy"), "--max-memory", "none"] + (
        ["--threads", str(a.threads)] if a.threads else [])
    runs = {"--no-weights": [], "--heatmap": []}
    if a.baseline:
        runs["baseline"] = []
    for _ in range(a.repeat):
        runs["--no-weights"].append(run_timed(base + ["--no-weights"]))
        runs["--heatmap"].append(run_timed(base + ["--heatmap", html]))
        if a.baseline:
            old = [os.path.abspath(a.baseline)] + base[1:]
            runs["baseline"].append(run_timed(old + ["--heatmap", os.path.join(tmp, "old.html")]))
    med = {k: sorted(v)[len(v) // 2] for k, v in runs.items()}
    size = os.path.getsize(html)
    print(f"L = {a.L}, H = {a.H}, D = 64{', causal' if a.causal else ''}: attn compute, "
          f"median of {a.repeat} interleaved runs each")
    for k, (wall, cpu, rss) in med.items():
        print(f"  {k:13s} {wall:6.2f} s wall ({cpu:.2f} s CPU), peak RSS {rss:.0f} MB")
    print(f"  page {size / 1e6:.1f} MB; --heatmap / --no-weights: "
          f"{med['--heatmap'][0] / med['--no-weights'][0]:.2f}x wall, "
          f"{med['--heatmap'][1] / med['--no-weights'][1]:.2f}x CPU")
    if a.baseline:
        with open(html, "rb") as f, open(os.path.join(tmp, "old.html"), "rb") as g:
            same = f.read() == g.read()
        print(f"  baseline --heatmap / --no-weights: "
              f"{med['baseline'][0] / med['--no-weights'][0]:.2f}x wall, "
              f"{med['baseline'][1] / med['--no-weights'][1]:.2f}x CPU; the pages are "
              f"{'byte-identical' if same else 'DIFFERENT'}")
    if a.no_browser:
        shutil.rmtree(tmp) if not a.keep else None
        return 0
    t0 = time.monotonic()
    with cdp.Browser(timeout=300) as b:
        # Chromium's own start (the browser, then a tab of about:blank), apart from the page's.
        b.open("about:blank").wait_for("document.readyState === 'complete'", timeout=300)
        t_start = time.monotonic() - t0
        t0 = time.monotonic()
        page = b.open("file://" + html)
        page.wait_for("document.body && document.body.dataset.ready === '1' && "
                      "attnView.long.level() >= 0", timeout=600, poll=0.05)
        t_ready = time.monotonic() - t0
        nav = page.eval("(() => { const n = performance.getEntriesByType('navigation')[0]; "
                        "return {parsed: n.domInteractive, dom: n.domContentLoadedEventEnd, "
                        "main: attnView.loadMs}; })()")
        timing = page.eval("""(async () => {
            const L = attnView.meta.rows, n = attnView.meta.panels.length;
            const drawn = async (f) => { const t0 = performance.now(), g = attnView.long.drawn(); f();
              while (document.getElementById('map').dataset.drawn < g + 1) await new Promise(r => setTimeout(r, 1));
              return performance.now() - t0; };
            const full = await drawn(() => attnView.show(L - 1040, L - 1040, 40, 40));
            const c = attnView.cellCenter(L - 1020, L - 1030);
            const move = new MouseEvent('mousemove', {clientX: c.x, clientY: c.y, bubbles: true});
            const t0 = performance.now();
            document.getElementById('map').dispatchEvent(move);
            const hover = performance.now() - t0;
            const mid = await drawn(() => attnView.show(0, 0, L >> 3, L >> 3));
            const whole = await drawn(() => attnView.reset());
            const head = n > 1 ? await drawn(() => attnView.setPanel(n - 1)) : 0;
            return {full, hover, mid, whole, head};
        })()""", timeout=600)
        errors, requests = page.errors(), page.requests()
    print(f"chromium: its start (browser and a blank tab) {t_start:.2f} s; then the page ready "
          f"{t_ready:.2f} s after navigation (in the page: HTML parsed {nav['parsed']:.0f} ms, "
          f"DOMContentLoaded {nav['dom']:.0f} ms, the script's main {nav['main']:.0f} ms)")
    print(f"chromium: ready {t_ready:.1f} s after navigation; then full zoom (level 0, top-k) "
          "{full:.0f} ms, hover {hover:.1f} ms, an eighth of the map {mid:.0f} ms, whole map "
          "{whole:.0f} ms, last panel {head:.0f} ms".format(**timing))
    print(f"console errors: {len(errors)}, network requests: {len(requests)}")
    shutil.rmtree(tmp) if not a.keep else None
    return 1 if errors or requests else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", required=True)
    ap.add_argument("-L", type=int, default=4096)
    ap.add_argument("-H", type=int, default=8)
    ap.add_argument("--layers", type=int, default=0, help="a model view of this many layers")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--keep", help="keep the page at this path")
    ap.add_argument("--compute", action="store_true",
                    help="the long view from attn compute --heatmap against --no-weights")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", help="--compute: another attn binary's --heatmap run too, "
                    "interleaved in the same rounds (say, before a change)")
    ap.add_argument("--no-browser", action="store_true", help="--compute: the timings only")
    ap.add_argument("--threads", type=int, default=0,
                    help="--compute: attn's --threads for every run (0: attn's default, all)")
    a = ap.parse_args()
    if a.compute:
        return long_main(a)
    tmp = tempfile.mkdtemp(prefix="attn-html-bench-")
    npy, html = os.path.join(tmp, "w.npy"), a.keep or os.path.join(tmp, "view.html")
    weights(a.L, a.H, a.causal, npy, a.layers)
    t_write, cpu, rss = run_timed([os.path.abspath(a.attn), "heatmap", npy, "-o", html] +
                             (["--masked-zero"] if a.causal else []))
    size = os.path.getsize(html)
    cells = max(1, a.layers) * a.H * a.L * a.L
    print(f"L = {a.L}, H = {a.H}{f', {a.layers} layers' if a.layers else ''}"
          f"{', causal' if a.causal else ''}: {cells:,} cells "
          f"({cells * 4 / 1e6:.0f} MB of float32 weights)")
    print(f"attn heatmap -o view.html: {t_write:.1f} s ({cpu:.1f} s of CPU), peak RSS {rss:.0f} MB, "
          f"{size / 1e6:.1f} MB ({size / cells:.2f} bytes per cell)")
    with cdp.Browser(timeout=300) as b:
        t0 = time.monotonic()
        page = b.open("file://" + html)
        page.wait_for("document.body && document.body.dataset.ready === '1'", timeout=600,
                      poll=0.05)
        t_ready = time.monotonic() - t0
        in_page = page.eval("attnView.loadMs")
        timing = page.eval("""(async () => {
            const t = async (f) => { const t0 = performance.now(); await f(); return performance.now() - t0; };
            const c = attnView.cellCenter(100, 100);
            const move = new MouseEvent('mousemove', {clientX: c.x, clientY: c.y, bubbles: true});
            const n = attnView.meta.panels.length;
            return {
              head: await t(() => attnView.setPanel(n - 1)),
              zoom: await t(() => attnView.zoom(1 / 16, 200, 200)),
              hover: await t(() => document.getElementById('map').dispatchEvent(move)),
              reset: await t(() => attnView.reset()),
              headview: await t(() => { attnView.view.tab = 'head'; return attnView.headView.draw(); }),
              lines: attnView.headView.state.lines,
              hvhover: await t(() => { attnView.headView.state.hover = {side: 'q', bin: 3, text: ''};
                                       return attnView.headView.draw(); }),
            };
        })()""", timeout=600)
        errors, requests = page.errors(), page.requests()
    print(f"chromium: ready {t_ready:.1f} s after navigation ({in_page / 1000:.1f} s in the page: "
          "decode, inflate, thumbnails, first map)")
    print("then: switch to the last panel {head:.0f} ms (decoded on demand), zoom {zoom:.0f} ms, "
          "hover {hover:.1f} ms, whole map {reset:.0f} ms; head view of its layer {headview:.0f} ms "
          "({lines} lines), with a query hovered {hvhover:.0f} ms".format(**timing))
    print(f"console errors: {len(errors)}, network requests: {len(requests)}")
    if not a.keep:
        os.remove(html)
    os.remove(npy)
    os.rmdir(tmp) if not a.keep else None
    return 1 if errors or requests else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The HTML view of maps longer than 4096 (docs/heatmaps.md, "Long sequences"): the page's
pooled levels and top-k lists, read back out of the written page, against numpy.

- Levels: each level's max plane is the colour index (matplotlib's rule over the page's
  vmin/vmax) of numpy's max over the cells its pixel covers (floor(y·n/side) ..
  floor((y+1)·n/side)); the mean plane the index of numpy's mean, within one bin (the
  sums are added in another order); state 1 exactly where no cell of the block has a
  value. The 8-bit quantization error: a level value lies in its bin,
  [vmin + b·(vmax − vmin)/256, vmin + (b + 1)·(vmax − vmin)/256), so within (vmax −
  vmin)/256 of the pooled weight (0.0039 for [0, 1]).
- Top-k: each row's `view_top_k` keys are numpy's argsort of the row (descending, ties to
  the lowest key index), the weights numpy's astype(float16) of them.
- Both feeders: `attn heatmap W.npy -o view.html` (a mapped file, panel by panel) and
  `attn compute … --heatmap view.html` (the kernel's row blocks, causal: blocked cells are
  left out), the latter checked against the weights the same run wrote (--weights).
- Memory: a compute run at L = 8192 peaks far below Lq × Lk × 4 bytes (wait4's ru_maxrss).

Cost in CI (ASan + UBSan): 57 s of CPU, 48 s wall, run alone on the 2-vCPU Zen 5 (maps of
300 x 9000, 4500 x 700 twice, 4200 x 4200 causal, its two page builds most of it, and one
8192 x 8192 causal compute run).

Run: /usr/bin/python3 tests/cli/long_view_test.py PATH/TO/attn [--case NAME]
"""
import base64
import json
import os
import re
import zlib

import numpy as np

import harness
from harness import check, expect, main, path, run, test

RNG = np.random.default_rng(34)


def page_parts(name):
    """meta and {element id: decompressed bytes} of a written page."""
    text = open(path(name), encoding="utf-8").read()
    meta = json.loads(re.search(r'<script type="application/json" id="meta">(.*?)</script>',
                                text, re.S).group(1))
    blocks = {}
    for m in re.finditer(r'<script type="application/octet-stream" id="([^"]+)">([^<]*)</script>',
                         text):
        blocks[m.group(1)] = zlib.decompress(base64.b64decode(m.group(2))) if m.group(2) else b""
    return meta, blocks, len(text)


def levels_of(meta, blocks, panel):
    """Each level's (max, mean, state) planes, bands joined."""
    out = []
    lg = meta["long"]
    for level, (h, w) in enumerate(lg["levels"]):
        planes = [[], [], []]
        for b in range((h + lg["bandRows"] - 1) // lg["bandRows"]):
            raw = np.frombuffer(blocks[f"p{panel}L{level}B{b}"], dtype=np.uint8)
            rows = min(lg["bandRows"], h - b * lg["bandRows"])
            for k in range(3):
                planes[k].append(raw[k * rows * w:(k + 1) * rows * w].reshape(rows, w))
        out.append(tuple(np.concatenate(p) for p in planes))
    return out


def top_of(meta, blocks, panel, rows):
    """(keys [rows, K] with -1 for none, float16 weights [rows, K])."""
    lg = meta["long"]
    K, ib = lg["topK"], lg["indexBytes"]
    keys, weights = [], []
    for b in range((rows + lg["topKRows"] - 1) // lg["topKRows"]):
        raw = blocks[f"p{panel}K{b}"]
        n = min(lg["topKRows"], rows - b * lg["topKRows"])
        idx = np.frombuffer(raw[:n * K * ib], dtype="<u2" if ib == 2 else "<u4").astype(np.int64)
        idx[idx == (0xFFFF if ib == 2 else 0xFFFFFFFF)] = -1
        keys.append(idx.reshape(n, K))
        weights.append(np.frombuffer(raw[n * K * ib:], dtype="<f2").reshape(n, K))
    return np.concatenate(keys), np.concatenate(weights)


def colour_index(v, lo, hi):
    """matplotlib's lookup index of v on [lo, hi] (attn's PNG rule)."""
    t = (np.asarray(v, dtype=np.float64) - lo) / (hi - lo)
    x = t * 256.0
    return np.where(~(t > 0), 0, np.where(x >= 255, 255, np.floor(np.nan_to_num(x)))).astype(int)


def pooled(w, blocked, h, side_w):
    """numpy's max and mean over each pixel's cells (NaN where it has none)."""
    R, C = w.shape
    ry = np.array([y * R // h for y in range(h)])
    cx = np.array([x * C // side_w for x in range(side_w)])
    v = w.astype(np.float64)
    mx = np.maximum.reduceat(np.maximum.reduceat(np.where(blocked, -np.inf, v), ry, 0), cx, 1)
    total = np.add.reduceat(np.add.reduceat(np.where(blocked, 0.0, v), ry, 0), cx, 1)
    count = np.add.reduceat(np.add.reduceat((~blocked).astype(np.int64), ry, 0), cx, 1)
    none = count == 0
    mx[none] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(none, np.nan, total / np.maximum(count, 1))
    return mx, mean


def check_levels(name, meta, blocks, panel, w, blocked, max_off=0):
    """max_off: how many bins the max plane may be off (0: numpy's index exactly)."""
    lo, hi = meta["vmin"], meta["vmax"]
    for level, (mx_p, mean_p, st_p) in enumerate(levels_of(meta, blocks, panel)):
        h, lw = mx_p.shape
        mx, mean = pooled(w, blocked, h, lw)
        none = np.isnan(mx)
        check(f"{name}: level {level} ({h}x{lw}) states are the blocks without a value",
              np.array_equal(st_p == 1, none), f"{np.sum((st_p == 1) != none)} differ")
        want = colour_index(np.nan_to_num(mx), lo, hi)
        bad = np.argwhere((np.abs(mx_p.astype(int) - want) > max_off) & ~none)
        check(f"{name}: level {level} max = numpy's max pooling (colour index, within "
              f"{max_off} bins)", len(bad) == 0, f"{len(bad)} differ, first {bad[:3].tolist()}")
        want = colour_index(np.nan_to_num(mean), lo, hi)
        off = np.abs(mean_p.astype(int) - want)[~none]
        check(f"{name}: level {level} mean = numpy's mean pooling within one bin",
              off.size == 0 or off.max() <= 1, f"max off {off.max()}")


def check_top(name, meta, blocks, panel, w, blocked):
    K = meta["long"]["topK"]
    keys, weights = top_of(meta, blocks, panel, w.shape[0])
    bad = []
    for i in range(w.shape[0]):
        row = np.where(blocked[i], -np.inf, w[i].astype(np.float64))
        order = np.lexsort((np.arange(row.size), -row))  # descending, ties: lowest key
        order = order[np.isfinite(row[order])][:K]
        want_k = np.full(K, -1)
        want_k[:order.size] = order
        if not np.array_equal(keys[i], want_k) or not np.array_equal(
                weights[i][:order.size], w[i][order].astype(np.float16)):
            bad.append(i)
    check(f"{name}: top-{K} keys = numpy's argsort per row (ties: lowest key), f16 weights",
          not bad, f"{len(bad)} rows differ, first {bad[:3]}")


def check_top_within(name, meta, blocks, panel, w, blocked, rtol):
    """Top-k lists made from other float32 arithmetic than `w` (the streaming kernel's
    scores and sums against the materialized kernel's weights): each row lists min(K,
    visible) distinct visible keys, strongest first; each listed f16 weight is w's at that
    key within one f16 step (2^-10 relative: rounding to f16 can cross a step where w and
    the page's float32 weight differ) plus rtol; no unlisted visible key is stronger in w
    than the weakest listed by more than rtol (relative)."""
    K = meta["long"]["topK"]
    keys, weights = top_of(meta, blocks, panel, w.shape[0])
    bad = []
    for i in range(w.shape[0]):
        vis = ~blocked[i]
        n = min(K, int(vis.sum()))
        k = keys[i]
        got = k[:n]
        wi = w[i].astype(np.float64)
        ok = (np.all(k[n:] == -1) and np.all(got >= 0) and len(set(got.tolist())) == n
              and np.all(vis[got]))
        if ok and n:
            wl = weights[i][:n].astype(np.float64)
            ok = (np.all(np.diff(wl) <= 0) and
                  np.all(np.abs(wl - wi[got]) <= wi[got] * (2.0**-10 + rtol) + 2.0**-24))
            rest = vis.copy()
            rest[got] = False
            if ok and rest.any():
                ok = wi[rest].max() <= wi[got].min() * (1 + rtol)
        if not ok:
            bad.append(i)
    check(f"{name}: top-{K} keys = the strongest in the weights (rtol {rtol}), f16 weights",
          not bad, f"{len(bad)} rows differ, first {bad[:3]}")


def softmax_rows(shape, ties=False):
    s = RNG.standard_normal(shape).astype(np.float32) * 2
    if ties:
        s = np.round(s * 2) / 2  # repeated scores: equal weights in a row
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


@test("attn heatmap: keys > 4096 (300 x 9000, ties), levels and top-k equal numpy")
def _wide():
    w = softmax_rows((300, 9000), ties=True)
    harness.write("wide.npy", w)
    expect(["heatmap", "wide.npy", "-o", "wide.html", "--view-top-k", "8"], name="wide")
    meta, blocks, _ = page_parts("wide.html")
    check("wide: levels as the contract says",
          meta["long"]["levels"][0] == [300, 4096] and meta["long"]["levels"][-1] == [64, 64]
          and meta["long"]["topK"] == 8, meta["long"])
    none = np.zeros(w.shape, dtype=bool)
    check_levels("wide", meta, blocks, 0, w, none)
    check_top("wide", meta, blocks, 0, w, none)


@test("attn heatmap: queries > 4096 (2 heads of 4500 x 700), levels and top-k equal numpy")
def _tall():
    w = softmax_rows((2, 4500, 700))
    harness.write("tall.npy", w)
    expect(["heatmap", "tall.npy", "-o", "tall.html"], name="tall")
    meta, blocks, _ = page_parts("tall.html")
    none = np.zeros(w.shape[1:], dtype=bool)
    for h in range(2):
        check_levels(f"tall head {h}", meta, blocks, h, w[h], none)
        check_top(f"tall head {h}", meta, blocks, h, w[h], none)
    # The page is the same bytes on 1 thread as on all cores (the top-k blocks packed in
    # parallel, levels from row blocks in any order); 1, 2, 3 and all threads of the writer
    # itself: the unit test HtmlView.TheLongViewTheSameBytesForAnyThreadCount.
    for t in ("1",):
        expect(["heatmap", "tall.npy", "-o", f"tall{t}.html", "--threads", t],
               name=f"tall, --threads {t}")
        with open(path("tall.html"), "rb") as a, open(path(f"tall{t}.html"), "rb") as b:
            check(f"tall: --threads {t} writes the same bytes", a.read() == b.read(), "")


def qkv(H, L, D, prefix):
    for n in "qkv":
        harness.write(f"{prefix}{n}.npy", RNG.standard_normal((H, L, D)).astype(np.float32))
    return ["-q", f"{prefix}q.npy", "-k", f"{prefix}k.npy", "-v", f"{prefix}v.npy"]


@test("compute --heatmap: causal 4200 x 4200, built from the kernel's row blocks")
def _compute():
    args = ["compute"] + qkv(1, 4200, 16, "c") + ["--causal"]
    expect(args + ["--output", "o.npy", "--heatmap", "c.html", "--weights", "cw.npy"],
           name="compute + weights")
    expect(args + ["--output", "o2.npy", "--heatmap", "c2.html", "--threads", "1"],
           name="compute alone")
    # The page alone is fed by the streaming kernel (the weights are never made): the output
    # is the --no-weights run's, bit for bit, and the materialized kernel's within float32
    # tolerance.
    expect(args + ["--output", "o4.npy", "--no-weights", "--threads", "1"], name="no weights")
    check("compute: the output with the page alone equals the one without weights",
          np.array_equal(np.load(path("o2.npy")), np.load(path("o4.npy"))), "")
    check("compute: ... and the one with --weights within float32 tolerance",
          np.allclose(np.load(path("o.npy")), np.load(path("o2.npy")), rtol=1e-4, atol=1e-5), "")
    w = np.load(path("cw.npy"))
    w = w.reshape(w.shape[-2:])
    blocked = np.triu(np.ones(w.shape, dtype=bool), 1)
    meta, blocks, _ = page_parts("c.html")
    check("compute: colour range [0, 1] (attention weights)", meta["vmin"] == 0 and
          meta["vmax"] == 1, (meta["vmin"], meta["vmax"]))
    check_levels("compute", meta, blocks, 0, w, blocked)
    check_top("compute", meta, blocks, 0, w, blocked)
    # The page alone comes from the streaming kernel's score tiles (no weights are made):
    # its float32 weights are not the materialized kernel's bits. Scores of D = 16 and sums
    # of up to 4200 terms in another order differ by a few 1e-6 relative (about D·ε and
    # √Lk·ε, ε = 6e-8): rtol 1e-4, a max within one bin of numpy's (a pooled weight that
    # close to a bin's edge may fall on its other side), the mean within one as before.
    meta2, blocks2, _ = page_parts("c2.html")
    check_levels("compute, page alone", meta2, blocks2, 0, w, blocked, max_off=1)
    check_top_within("compute, page alone", meta2, blocks2, 0, w, blocked, 1e-4)
    expect(args + ["--output", "o3.npy", "--heatmap", "c3.html", "--threads", "2"],
           name="compute alone, 2 threads")
    meta3, blocks3, _ = page_parts("c3.html")
    check("compute: the page alone has the same data on 1 thread as on 2",
          blocks3 == blocks2, sorted(k for k in blocks2 if blocks2[k] != blocks3.get(k))[:5])


@test("compute --heatmap: window and key padding (4200 x 4300), the page alone against --weights")
def _compute_window_padding():
    # The page alone pools the streaming kernel's tiles: each row's keys are its window's
    # range less the padding (counted from the padding's running sums), the padded keys
    # hatched. A run of padding longer than a key block (128) is passed over by the kernel.
    Lq, Lk = 4200, 4300
    pad = RNG.random(Lk) > 0.2
    pad[1000:1300] = False
    harness.write("wp_pad.npy", pad)
    for n, L in (("q", Lq), ("k", Lk), ("v", Lk)):
        harness.write(f"wp{n}.npy", RNG.standard_normal((1, L, 16)).astype(np.float32))
    args = ["compute", "-q", "wpq.npy", "-k", "wpk.npy", "-v", "wpv.npy", "--window", "600,5",
            "--key-padding", "wp_pad.npy"]
    expect(args + ["--output", "wo.npy", "--weights", "ww.npy"], name="weights")
    expect(args + ["--output", "wo2.npy", "--heatmap", "wp.html"], name="page alone")
    w = np.load(path("ww.npy")).reshape(Lq, Lk)
    i = np.arange(Lq)[:, None]
    j = np.arange(Lk)[None, :]
    blocked = (j < i - 600) | (j > i + 5) | ~pad[None, :]
    meta, blocks, _ = page_parts("wp.html")
    check_levels("window + padding, page alone", meta, blocks, 0, w, blocked, max_off=1)
    check_top_within("window + padding, page alone", meta, blocks, 0, w, blocked, 1e-4)


@test("attn heatmap --axes layers,heads of 2 x 2 x 4500 x 40: the long view as the model view")
def _model_view():
    w = softmax_rows((2, 2, 4500, 40))
    harness.write("lm.npy", w)
    expect(["heatmap", "lm.npy", "--axes", "layers,heads", "-o", "lm.html", "--view-top-k", "4"],
           name="long model view")
    meta, blocks, _ = page_parts("lm.html")
    check("long model view: a grid of 2 heads per layer, titled by layer and head",
          meta["gridCols"] == 2 and meta["panels"] == [
              f"layer {l} \u00b7 head {h}" for l in range(2) for h in range(2)], meta["panels"])
    th, tw = meta["thumbH"], meta["thumbW"]
    thumbs = np.frombuffer(blocks["thumbs"], dtype=np.uint8)
    check("long model view: a thumbnail per panel (max, mean, state planes)",
          thumbs.size == 3 * 4 * th * tw, thumbs.size)
    none = np.zeros(w.shape[2:], dtype=bool)
    for k in range(4):
        l, h = divmod(k, 2)
        check_levels(f"long model view panel {k}", meta, blocks, k, w[l, h], none)
        # The thumbnail: the max plane pools the finest level's max plane (80 x 40 pixels).
        mx = levels_of(meta, blocks, k)[0][0]
        ry = [y * mx.shape[0] // th for y in range(th)]
        want = np.maximum.reduceat(mx, ry, 0)
        got = thumbs[k * th * tw:(k + 1) * th * tw].reshape(th, tw)
        check(f"long model view panel {k}: thumbnail = max pooling of level 0",
              np.array_equal(got, want), "")


@test("compute --heatmap at 8192 causal: peak RSS far below Lq x Lk x 4 bytes")
def _memory():
    L = 8192
    code, peak, err = harness.peak_rss(["compute"] + qkv(1, L, 16, "m") +
                                       ["--causal", "--output", "mo.npy", "--heatmap", "m.html"])
    check("8192 causal: exit 0", code == 0, err[:300])
    # Under AddressSanitizer (CI's build: its ctest sets ASAN_OPTIONS) freed memory waits in
    # a 256 MiB quarantine and shadow memory comes on top: peak RSS says nothing about attn
    # there (as model_run_test.py); the dev and release builds check it.
    if "ASAN_OPTIONS" not in os.environ:
        check(f"8192 causal: peak RSS {peak >> 20} MiB < Lq x Lk x 4 / 4 = {L * L >> 20} MiB",
              peak < L * L, peak >> 20)
    meta, blocks, size = page_parts("m.html")
    check("8192 causal: the page holds every level and top-k block",
          len(blocks) == 1 + 1 + sum((h + 127) // 128 for h, _ in meta["long"]["levels"]) + 4,
          len(blocks))


if __name__ == "__main__":
    main()

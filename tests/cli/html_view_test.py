#!/usr/bin/python3
"""Browser tests for the HTML view (`attn heatmap W -o view.html`, `attn compute --heatmap
view.html`), in Debian's headless chromium driven over the DevTools pipe (tests/browser/cdp.py).

    /usr/bin/python3 tests/cli/html_view_test.py PATH/TO/attn     (from the repo root)

Checks: the page loads from file:// with no console error and no network request; the
screen pixel at the centre of cell (h, i, j) has the colour matplotlib's table gives that
weight (tables read from lib/src/render/colormaps.txt, normalised by the data's
min/max as the PNG is); hovering names the tokens and the exact weight; switching heads
(key and thumbnail) changes the large map; masked cells read `masked` and are hatched;
clicking a row lists its top keys; long maps are pooled and zoom to single cells; the head
view draws a line per (query, key, head) weight of at least 1/64, hovering a token keeps
only its lines, a head's checkbox removes its lines; the model view's thumbnail opens its
panel in the map and the head view; a 12-layer x 12-head model view at 1024 tokens opens;
at 1024 and 1280 px wide the side panel lies within the window, with no horizontal scrollbar.
Exits 77 (skipped) when chromium is absent. Ends with "N passed, M failed".
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ATTN = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "browser"))
import cdp  # noqa: E402
from leak_rule import leak_env  # noqa: E402

TMP = tempfile.mkdtemp(prefix="attn-html-")
PASSED = 0
FAILED = []
HATCH = {(242, 242, 242), (150, 150, 150)}
TOKENS = ["The", "cat", "sat", "on", "the", "mat"]
# Two heads of 6 x 6 weights (rows sum to 1), hand-written so that heads differ per cell.
HEAD0 = [[0.50, 0.10, 0.05, 0.05, 0.10, 0.20], [0.02, 0.60, 0.08, 0.10, 0.10, 0.10],
         [0.10, 0.10, 0.30, 0.25, 0.05, 0.20], [0.01, 0.01, 0.01, 0.95, 0.01, 0.01],
         [0.20, 0.20, 0.20, 0.20, 0.10, 0.10], [0.05, 0.15, 0.25, 0.05, 0.15, 0.35]]
HEAD1 = [[0.05, 0.05, 0.10, 0.70, 0.05, 0.05], [0.30, 0.05, 0.30, 0.05, 0.25, 0.05],
         [0.90, 0.02, 0.02, 0.02, 0.02, 0.02], [0.15, 0.15, 0.40, 0.10, 0.10, 0.10],
         [0.03, 0.03, 0.03, 0.03, 0.03, 0.85], [0.25, 0.25, 0.10, 0.10, 0.15, 0.15]]


def check(name, cond, detail=""):
    global PASSED
    if cond:
        PASSED += 1
    else:
        FAILED.append(name)
        print(f"FAIL {name}: {detail}")


def run(args):
    p = subprocess.run([ATTN] + args, capture_output=True, cwd=TMP, timeout=300,
                       env=leak_env(args, TMP))
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def path(name):
    return os.path.join(TMP, name)


def write(name, text):
    with open(path(name), "w") as f:
        f.write(text)
    return path(name)


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def viridis():
    """matplotlib's viridis as checked in (generated from matplotlib, not by this code)."""
    lines = open(os.path.join(ROOT, "lib", "src", "render", "colormaps.txt")).read().split("\n")
    start = lines.index("viridis:") + 1
    hexes = " ".join(lines[start:start + 32]).split()
    table = [tuple(int(h[i:i + 2], 16) for i in (0, 2, 4)) for h in hexes]
    assert len(table) == 256
    return table


def expected_colour(table, v, lo, hi):
    """matplotlib's rule: index floor(t * 256) of t = (v - lo) / (hi - lo), clamped."""
    t = (f32(v) - lo) / (hi - lo)
    return table[0 if t <= 0 else 255 if t * 256 >= 255 else int(t * 256)]


def js_number(v):
    """How the page prints a float32: 7 significant digits, shortest form."""
    return repr(float(f"{f32(v):.7g}"))


def has_weight(text, v):
    """The hover's last line is exactly `weight V` (not a longer number starting with V)."""
    return re.search(r"(^|\n)weight " + re.escape(js_number(v)) + r"$", text) is not None


def load(browser, html):
    page = browser.open("file://" + html)
    try:
        page.wait_for("document.body && document.body.dataset.ready === '1'", timeout=90)
    except cdp.BrowserError as e:
        return page, str(e) + " " + str(page.eval("document.getElementById('status') && "
                                                  "document.getElementById('status').textContent"))
    return page, ""


def hover(page, i, j):
    c = page.eval(f"attnView.cellCenter({i}, {j})")
    page.mouse("mouseMoved", c["x"], c["y"])
    return page.eval("document.getElementById('hover').textContent")


def pixel(page, i, j):
    c = page.eval(f"attnView.cellCenter({i}, {j})")
    return page.pixel(c["x"], c["y"])


FAINTEST = 1 / 64  # head_view.js draws no fainter line


def lines_of(heads, rows=None, cols=None):
    """Lines the head view draws: (query, key, head) weights >= 1/64, on rows/cols."""
    return sum(1 for h in heads for i, row in enumerate(h) for j, v in enumerate(row)
               if f32(v) >= FAINTEST and (rows is None or i in rows)
               and (cols is None or j in cols))


def head_view_drawn(page, before, also="true"):
    """Lines the head view drew once it has drawn again (and `also` holds), or -1."""
    try:
        page.wait_for(f"attnView.headView.state.drawn > {before} && ({also})", timeout=30)
    except cdp.BrowserError as e:
        print(f"head view: not drawn again: {e}")
        return -1
    return page.eval("attnView.headView.state.lines")


def head_view_checks(page):
    """The head view of the two 6-token heads: lines, hover filtering, head toggles."""
    drawn = page.eval("attnView.headView.state.drawn")
    tab = page.eval("(() => { const r = document.querySelector('#tabs button[data-tab=head]')"
                    ".getBoundingClientRect(); return {x: r.x + 5, y: r.y + 5}; })()")
    page.click(tab["x"], tab["y"])
    n = head_view_drawn(page, drawn)
    check("head view: one line per weight >= 1/64 of both heads",
          n == lines_of([HEAD0, HEAD1]), (n, lines_of([HEAD0, HEAD1])))
    # Query 0 -> key 3 (head 1: 0.70) a quarter of the way: no line from query 3 passes there.
    p = page.eval("attnView.headView.linePoint(0, 3, 0.25)")
    check("head view: a strong line is drawn", page.pixel(p["x"], p["y"]) != (255, 255, 255),
          page.pixel(p["x"], p["y"]))
    drawn = page.eval("attnView.headView.state.drawn")
    c = page.eval("attnView.headView.tokenCenter('q', 3)")
    page.mouse("mouseMoved", c["x"], c["y"])
    n = head_view_drawn(page, drawn)
    check("head view: hovering query 3 keeps only its lines",
          n == lines_of([HEAD0, HEAD1], rows={3}), (n, lines_of([HEAD0, HEAD1], rows={3})))
    check("head view: the other queries' lines are gone",
          page.pixel(p["x"], p["y"]) == (255, 255, 255), page.pixel(p["x"], p["y"]))
    drawn = page.eval("attnView.headView.state.drawn")
    c = page.eval("attnView.headView.tokenCenter('k', 0)")
    page.mouse("mouseMoved", c["x"], c["y"])
    n = head_view_drawn(page, drawn)
    check("head view: hovering key 0 keeps the lines into it",
          n == lines_of([HEAD0, HEAD1], cols={0}), (n, lines_of([HEAD0, HEAD1], cols={0})))
    drawn = page.eval("attnView.headView.state.drawn")
    page.mouse("mouseMoved", 5, 5)
    box = page.eval("(() => { const r = document.querySelector('#hvheads input[data-head=\"1\"]')"
                    ".getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()")
    page.click(box["x"], box["y"])
    n = head_view_drawn(page, drawn, "!attnView.headView.state.on[1]")
    check("head view: head 1 switched off leaves head 0's lines", n == lines_of([HEAD0]),
          (n, lines_of([HEAD0])))
    check("head view: no console error", page.errors() == [], page.errors())


def model_view_checks(browser, table):
    """A 2-layer x 3-head model view: thumbnails in a grid, a click opens the panel."""
    import numpy as np
    rng = np.random.default_rng(7)
    s = rng.normal(size=(2, 1, 3, 8, 8)) * 2
    w = np.exp(s - s.max(-1, keepdims=True))
    w = (w / w.sum(-1, keepdims=True)).astype(np.float32)
    np.save(path("model.npy"), w)
    html = path("model.html")
    rc, _, err = run(["heatmap", path("model.npy"), "-o", html])
    check("model view: written", rc == 0, err)
    page, why = load(browser, html)
    thumbs = page.eval("document.querySelectorAll('.thumb').length")
    check("model view: 6 thumbnails, 3 per row", not why and thumbs == 6 and
          page.eval("getComputedStyle(document.getElementById('heads'))"
                    ".gridTemplateColumns.split(' ').length") == 3, (why, thumbs))
    t = page.eval("(() => { const r = document.querySelectorAll('.thumb')[5]"
                  ".getBoundingClientRect(); return {x: r.x + 20, y: r.y + 20}; })()")
    page.click(t["x"], t["y"])
    try:
        page.wait_for("attnView.view.panel === 5", timeout=10)
    except cdp.BrowserError as e:
        print(f"model view: panel 5 not shown: {e}")
    lo, hi = float(w.min()), float(w.max())
    bad = [(i, j) for i, j in [(0, 0), (3, 5), (7, 2)]
           if pixel(page, i, j) != expected_colour(table, float(w[1, 0, 2, i, j]), lo, hi)]
    check("model view: thumbnail click opens layer 1 head 2 large", not bad, bad)
    drawn = page.eval("attnView.headView.state.drawn")
    page.eval("attnView.setTab('head')")
    n = head_view_drawn(page, drawn)
    want = lines_of([w[1, 0, h].tolist() for h in range(3)])
    check("model view: the head view shows the clicked panel's layer",
          page.eval("document.getElementById('hvlayer').value") == "1" and n == want, (n, want))
    check("model view: no console error, no request",
          page.errors() == [] and page.requests() == [], (page.errors(), page.requests()))


def big_model_view_checks(browser):
    """12 layers x 12 heads at 1024 tokens (151 M cells) in one page: it opens, a panel and
    the head view draw, within generous bounds (an ASan build is slow)."""
    import numpy as np
    L, n = 1024, 12
    out = np.lib.format.open_memmap(path("big.npy"), mode="w+", dtype=np.float32,
                                    shape=(n, 1, n, L, L))
    rng = np.random.default_rng(1)
    for layer in range(n):
        s = rng.standard_normal((n, L, L), dtype=np.float32) * 3
        s -= s.max(-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(-1, keepdims=True)
        out[layer, 0] = s
    del out
    html = path("big.html")
    t0 = time.time()
    rc, _, err = run(["heatmap", path("big.npy"), "-o", html])
    written = time.time() - t0
    check("12 x 12 x 1024: written", rc == 0, err)
    os.unlink(path("big.npy"))
    if rc != 0:
        return
    mb = os.path.getsize(html) / 1e6
    t0 = time.time()
    page, why = load(browser, html)
    opened = time.time() - t0
    check("12 x 12 x 1024: opens with 144 thumbnails", not why and
          page.eval("document.querySelectorAll('.thumb').length") == 144, why)
    page.eval("attnView.setPanel(143)")
    t = hover(page, 1000, 3)
    check("12 x 12 x 1024: the last panel opens and hovers",
          "layer 11" in t and "head 11" in t, t)
    drawn = page.eval("attnView.headView.state.drawn")
    t1 = time.time()
    page.eval("attnView.setTab('head')")
    lines = head_view_drawn(page, drawn)
    hv = time.time() - t1
    check("12 x 12 x 1024: the head view draws pooled lines", lines > 0, lines)
    check("12 x 12 x 1024: no console error", page.errors() == [], page.errors())
    print(f"12 x 12 x 1024 model view: {mb:.0f} MB written in {written:.1f} s, "
          f"ready in {opened:.1f} s, head view of 12 heads in {hv:.1f} s ({lines} lines)")


def census_checks(browser, table):
    """`attn census --html`: the grid's cells have the colormap colour of the chosen
    statistic's pooled mean (0..1 for probabilities), the statistic switches from its menu,
    a click on a cell opens that head's panel on its best text in the frame, and a click on
    a column header sorts the table by it."""
    model = os.path.join(ROOT, "samples", "tiny-gpt2")
    html = path("census.html")
    p = subprocess.run([ATTN, "census", model, "-", "--probe", "induction:4:2", "--html", html,
                        "--output", path("census.json")], input=b"the cat sat on the mat\n"
                       b"a dog and a cat and a dog\n", capture_output=True, timeout=300)
    check("census --html: exit 0", p.returncode == 0, p.stderr.decode())
    if p.returncode != 0:
        return
    page, why = load(browser, html)
    check("census page becomes ready", not why, why)
    if why:
        return
    meta = page.eval("attnCensus.meta")
    cells = meta["layers"] * meta["heads"]

    def colours():
        return page.eval("[...document.querySelectorAll('#grid .cell')].map(d => "
                         "getComputedStyle(d).backgroundColor)")

    def want(stat):
        out = []
        for v in meta["means"][stat]:
            idx = 0 if v is None else min(255, max(0, int(v * 256)))
            out.append(None if v is None else "rgb(%d, %d, %d)" % table[idx])
        return out

    stat = meta["stats"].index("induction")
    check("census: opens on induction with a probe", meta["defaultStat"] == "induction",
          meta["defaultStat"])
    got = colours()
    check("census: a cell per layer and head", len(got) == cells, len(got))
    bad = [(x, g, w) for x, (g, w) in enumerate(zip(got, want(stat))) if w and g != w]
    check("census: induction colours the grid", not bad, bad[:3])
    prev = meta["stats"].index("previous_token")
    page.eval("(() => { const s = document.getElementById('stat'); s.value = '%d'; "
              "s.dispatchEvent(new Event('change')); })()" % prev)
    got = colours()
    bad = [(x, g, w) for x, (g, w) in enumerate(zip(got, want(prev))) if w and g != w]
    check("census: the menu switches the grid to previous_token", not bad, bad[:3])
    x = cells - 1
    r = page.eval("(() => { const b = document.querySelector('#grid .cell[data-cell=\"%d\"]')"
                  ".getBoundingClientRect(); return {x: b.left + b.width / 2, y: b.top + "
                  "b.height / 2}; })()" % x)
    page.click(r["x"], r["y"])
    ref = meta["best"][prev][x]
    try:
        page.wait_for("attnCensus.state.shown", timeout=30)
        shown = page.eval("attnCensus.state.shown")
    except cdp.BrowserError as e:
        shown = str(e)
    check("census: a click opens the head's panel on its best text",
          isinstance(shown, dict) and [shown["page"], shown["panel"]] == ref[:2] and
          shown["title"] == meta["pageTitles"][ref[0]], (shown, ref))
    page.eval("document.querySelector('#table th[data-col=\"%d\"]').click()" % (prev + 2))
    order = page.eval("[...document.querySelectorAll('#table tbody tr')].map(r => "
                      "Number(r.dataset.cell))")
    vals = [meta["means"][prev][c] for c in order if meta["means"][prev][c] is not None]
    check("census: a header click sorts by it, highest first",
          len(order) == cells and vals == sorted(vals, reverse=True), vals[:5])
    check("census: no console error", page.errors() == [], page.errors())
    net = [u for u in page.requests() if not u.startswith("blob:")]
    check("census: no network request (the view is a blob)", net == [], net)


LONG_L = 8192  # the long view's browser check: one causal head (about 6 s of CI on 2 cores)


def long_view_checks(browser, table):
    """A causal head of LONG_L tokens from `compute --heatmap` (levels and top-k lists,
    render/long_view.hpp): the page loads without error, the whole map is drawn from the
    level the screen needs (the coarsest whose pixels are no larger than a screen pixel),
    full zoom shows a row's strongest key at its exact weight (hover and pixel colour),
    other cells say they are bounds, and "jump to token" moves to a row."""
    import numpy as np
    rng = np.random.default_rng(34)
    L, D = LONG_L, 16
    q, k, v = (rng.standard_normal((1, L, D)).astype(np.float32) for _ in range(3))
    for name, a in (("lq", q), ("lk", k), ("lv", v)):
        np.save(path(name + ".npy"), a)
    html = path("long_causal.html")
    t0 = time.monotonic()
    rc, _, err = run(["compute", "-q", path("lq.npy"), "-k", path("lk.npy"), "-v",
                      path("lv.npy"), "--causal", "--output", path("lo.npy"), "--heatmap", html])
    check(f"compute --heatmap at {L} causal: exit 0 ({time.monotonic() - t0:.1f} s)", rc == 0, err)
    page, why = load(browser, html)
    check(f"{L} causal: page ready", not why, why)
    check(f"{L} causal: no console error", page.errors() == [], page.errors())
    levels = page.eval("attnView.meta.long.levels")
    # The whole map: 640 px for L cells -> f = ceil(L / 640) cells per screen pixel.
    f = -(-L // 640)
    per_px = L / -(-L // f)
    want = max(li for li, (h, w) in enumerate(levels) if L / h <= max(1, per_px))
    page.wait_for("attnView.long.level() >= 0", timeout=20)
    check("whole map: drawn from the coarsest level no coarser than the screen",
          page.eval("attnView.long.level()") == want, (page.eval("attnView.long.level()"), want))
    # Full zoom on row i around its strongest key (numpy, float64: softmax over j <= i).
    i = L - 1000
    s = (k[0, :i + 1].astype(np.float64) @ q[0, i].astype(np.float64)) / np.sqrt(D)
    wrow = np.exp(s - s.max())
    wrow /= wrow.sum()
    j = int(np.argmax(wrow))
    r0, c0 = max(0, i - 20), max(0, j - 20)
    before = page.eval("attnView.long.drawn()")
    page.eval(f"attnView.show({r0}, {c0}, 40, 40)")
    page.wait_for(f"document.getElementById('map').dataset.drawn > {before}", timeout=20)
    check("full zoom: level 0", page.eval("attnView.long.level()") == 0)
    c = page.eval(f"attnView.cellCenter({i}, {j})")
    page.mouse("mouseMoved", c["x"], c["y"])
    page.wait_for("document.getElementById('hover').textContent.includes('query %d ')" % i,
                  timeout=20)
    t = page.eval("document.getElementById('hover').textContent")
    m = re.search(r"weight ([0-9.e-]+) \(exact", t)
    w16 = float(np.float16(wrow[j]))
    check("full zoom: the row's strongest key shows its exact weight (float16)",
          m is not None and abs(float(m.group(1)) - w16) <= 1e-3 * w16, (t, w16))
    check("full zoom: the strongest key's pixel has its weight's colour",
          page.pixel(c["x"], c["y"]) == expected_colour(table, w16, 0.0, 1.0),
          (page.pixel(c["x"], c["y"]), expected_colour(table, w16, 0.0, 1.0)))
    weak = int(np.argsort(wrow)[len(wrow) // 2])  # far from the top 32
    page.eval(f"attnView.show({i - 20}, {max(0, weak - 20)}, 40, 40)")
    c = page.eval(f"attnView.cellCenter({i}, {weak})")
    page.mouse("mouseMoved", c["x"], c["y"])
    page.wait_for("document.getElementById('hover').textContent.includes('key %d ')" % weak,
                  timeout=20)
    t = page.eval("document.getElementById('hover').textContent")
    check("full zoom: a key outside the top-k reads as a bound", "weight \u2264" in t
          and "not among" in t, t)
    page.eval("(() => { const b = document.getElementById('jump'); b.focus(); b.value = '6000'; })()")
    page.key("Enter")
    check("jump to token 6000: the row is selected", page.eval("attnView.view.row") == 6000)
    check(f"{L} causal: still no console error, no request", page.errors() == [] and
          page.requests() == [], (page.errors(), page.requests()))


def main():
    if not cdp.find_chromium():
        print("SKIP: chromium not found (Debian: apt-get install chromium; scripts/setup.sh "
              "installs it); the HTML view was not tested in a browser")
        return 77
    table = viridis()
    doc = {"weights": [HEAD0, HEAD1], "query_tokens": TOKENS, "key_tokens": TOKENS}
    w = write("w.json", json.dumps(doc))
    html = path("view.html")
    rc, _, err = run(["heatmap", w, "-o", html])
    check("heatmap -o view.html: exit 0", rc == 0 and os.path.exists(html), err)
    text = open(html, encoding="utf-8").read()
    check("one file, no URL to fetch", "http://" not in text and "https://" not in text
          and not re.search(r"\b(src|href)\s*=", text), "found a URL or src/href")
    values = [f32(v) for head in (HEAD0, HEAD1) for row in head for v in row]
    lo, hi = min(values), max(values)

    with cdp.Browser() as browser:
        page, why = load(browser, html)
        check("page becomes ready", not why, why)
        check("no console error or exception", page.errors() == [], page.errors())
        check("no network request", page.requests() == [], page.requests())

        # Pixels: the centre of cell (h, i, j) has the colormap colour of that weight.
        cells = [(0, 3), (1, 1), (2, 0), (5, 5), (4, 2)]
        bad = [(i, j, pixel(page, i, j), expected_colour(table, HEAD0[i][j], lo, hi))
               for i, j in cells]
        bad = [b for b in bad if b[2] != b[3]]
        check("head 0: cell centres have the colormap colour of their weight", not bad, bad)

        # Hover: tokens, indices and the exact weight.
        t = hover(page, 2, 3)
        check("hover names query and key tokens and the weight",
              'query 2 "sat"' in t and 'key 3 "on"' in t
              and has_weight(t, HEAD0[2][3]), t)

        # Switching heads changes the large map: by key, then by thumbnail.
        page.key("ArrowRight")
        page.wait_for("attnView.view.panel === 1", timeout=10)
        bad = [(i, j) for i, j in cells
               if pixel(page, i, j) != expected_colour(table, HEAD1[i][j], lo, hi)]
        check("ArrowRight: the large map shows head 1", not bad and
              page.eval("attnView.view.panel") == 1, bad)
        t = hover(page, 2, 0)
        check("hover on head 1", "head 1" in t and has_weight(t, HEAD1[2][0]), t)
        thumb = page.eval("(() => { const r = document.querySelectorAll('.thumb')[0]"
                          ".getBoundingClientRect(); return {x: r.x + 20, y: r.y + 20}; })()")
        page.click(thumb["x"], thumb["y"])
        page.wait_for("attnView.view.panel === 0", timeout=10)
        check("thumbnail click: back to head 0",
              pixel(page, 2, 0) == expected_colour(table, HEAD0[2][0], lo, hi)
              and page.eval("attnView.view.panel") == 0)

        # Click a query row: bars, top keys, the head view.
        c = page.eval("attnView.cellCenter(3, 1)")
        page.click(c["x"], c["y"])
        top = page.eval("[...document.querySelectorAll('#topk li')].map(li => li.textContent)")
        check("row click: top-k lists the keys by weight",
              len(top) == 6 and top[0].startswith('key 3 "on"')
              and top[0].endswith("  " + js_number(HEAD0[3][3])), top)
        check("still no console error", page.errors() == [], page.errors())
        head_view_checks(page)

    # Masked cells: hatched and read `masked`, from --mask and from a causal compute problem.
    mask = write("mask.json", json.dumps([[1 if j <= i else 0 for j in range(6)]
                                          for i in range(6)]))
    mhtml = path("masked.html")
    rc, _, err = run(["heatmap", w, "-o", mhtml, "--mask", mask, "--head", "1"])
    check("heatmap --mask -o masked.html", rc == 0, err)
    prob = write("p.json", json.dumps({
        "variant": "self", "causal": True, "tokens": ["a", "b", "c", "d"],
        "input": [[1, 0, 0.5, 0.2], [0.1, -0.8, 0.6, 1], [0.7, 0.2, 0.2, -0.5], [0, 1, 0, 1]],
        "init": {"seed": 3}}))
    chtml = path("compute.html")
    rc, out, err = run(["compute", prob, "--heatmap", chtml])
    check("compute --heatmap compute.html: exit 0, result on stdout",
          rc == 0 and out.startswith(b"{") and os.path.exists(chtml), err)
    with cdp.Browser() as browser:
        page, why = load(browser, mhtml)
        t = hover(page, 1, 4)
        check("--mask: a blocked cell reads masked and is hatched",
              not why and "masked" in t and "weight" not in t and pixel(page, 1, 4) in HATCH,
              (why, t))
        t = hover(page, 4, 1)
        check("--mask: a kept cell shows its weight", has_weight(t, HEAD1[4][1]), t)
        page2, why = load(browser, chtml)
        t = hover(page2, 0, 3)
        check("compute --heatmap: a causally blocked cell reads masked",
              not why and 'key 3 "d"' in t and "masked" in t, (why, t))
        check("masked pages: no error, no request", page.errors() == [] and
              page2.errors() == [] and page.requests() == [] and page2.requests() == [],
              (page.errors(), page2.errors(), page.requests(), page2.requests()))

    # A long map: a pooled overview, zoom to single cells; bin values above the exact limit
    # are not tested here (that limit is 4 Mi cells), only the pooled hover.
    import numpy as np
    rng = np.random.default_rng(5)
    n = 1500
    s = rng.normal(size=(n, n)).astype(np.float32)
    wl = np.exp(s - s.max(-1, keepdims=True))
    wl = (wl / wl.sum(-1, keepdims=True)).astype(np.float32)
    np.save(path("long.npy"), wl)
    lhtml = path("long.html")
    rc, _, err = run(["heatmap", path("long.npy"), "-o", lhtml])
    check("1500 x 1500: written", rc == 0, err)
    with cdp.Browser() as browser:
        page, why = load(browser, lhtml)
        t = hover(page, 700, 700)
        check("long map: overview is pooled, hover names the block", not why and
              "cells, zoom in for one" in t and "max weight" in t, (why, t))
        for _ in range(3):
            page.key("+", "Equal")
        view = page.eval("attnView.view")
        t = hover(page, view["r0"] + 5, view["c0"] + 7)
        i, j = view["r0"] + 5, view["c0"] + 7
        check("zoomed in: one cell, exact weight", view["nr"] < 200 and
              f"query {i}" in t and f"key {j}" in t
              and has_weight(t, float(wl[i, j])), (view, t))
        check("long map: no error, no request", page.errors() == [] and page.requests() == [],
              (page.errors(), page.requests()))

    # The side panel (colorbar, the clicked row's bars, the help text) lies within the
    # window at 1024 and 1280 px, its text wrapped there, with no horizontal scrollbar.
    box_js = ("(() => { const e = document.documentElement, r = (id) => "
              "document.getElementById(id).getBoundingClientRect(); return {left: r('side').left,"
              " right: r('side').right, text: r('rowtitle').right, bars: r('bars').right, "
              "width: e.clientWidth, scroll: e.scrollWidth}; })()")
    for width in (1024, 1280):
        with cdp.Browser(width=width, height=900) as browser:
            page, why = load(browser, html)
            box = page.eval(box_js)
            check(f"{width} px: the side panel lies within the window", not why and
                  0 <= box["left"] and max(box["right"], box["text"], box["bars"]) <=
                  box["width"], (why, box))
            check(f"{width} px: no horizontal scrollbar", not why and
                  box["scroll"] <= box["width"], (why, box))

    with cdp.Browser() as browser:
        long_view_checks(browser, table)
    with cdp.Browser() as browser:
        model_view_checks(browser, table)
        census_checks(browser, table)
    if os.environ.get("ATTN_HTML_BIG", "1") != "0":
        with cdp.Browser() as browser:
            big_model_view_checks(browser)

    # Errors: bad extensions still name .html; --format html works for any name.
    rc, _, err = run(["heatmap", w, "-o", path("x.jpg")])
    check("-o x.jpg: exit 2 naming .html", rc == 2 and ".html" in err and err.count("\n") == 1,
          err)
    rc, _, err = run(["heatmap", w, "-o", path("x.page"), "--format", "html"])
    check("--format html", rc == 0 and open(path("x.page"), "rb").read(15) == b"<!DOCTYPE html>",
          err)
    rc, out, _ = run(["heatmap", "--help"])
    check("--help mentions .html", b".html" in out)

    shutil.rmtree(TMP, ignore_errors=True)
    print(f"{PASSED} passed, {len(FAILED)} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())

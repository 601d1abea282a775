#!/usr/bin/python3
"""Regenerates the README's pictures of the HTML view, each taken in headless chromium
(tests/browser/cdp.py) from a page attn wrote:

- docs/html_view.png: a 4-head causal self-attention problem over a 12-token sentence
  (`attn compute --heatmap OUT.html`), head 2 shown, the query "dog" clicked, a cell hovered;
- docs/head_view.png: the same page's head view (BertViz's: a line per query, key and
  head), the query "dog" hovered;
- docs/model_view.png: the model view of the tiny sample checkpoint (samples/layers, 4
  layers x 4 heads, causal), the thumbnail of layer 2 head 1 clicked open.

    /usr/bin/python3 scripts/html_screenshot.py build/dev/app/attn
"""
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "browser"))
import cdp  # noqa: E402

TOKENS = ["The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "and",
          "runs", "away"]


def open_page(browser, html):
    page = browser.open("file://" + html)
    page.wait_for("document.body && document.body.dataset.ready === '1'")
    return page


def save(page, name, clip=None):
    png = page.screenshot(clip)
    assert page.errors() == [] and page.requests() == [], (page.errors(), page.requests())
    out = os.path.join(ROOT, "docs", name)
    with open(out, "wb") as f:
        f.write(png)
    print(f"wrote {out} ({len(png)} bytes)")


def sentence(attn, tmp, browser):
    rng = random.Random(14)
    problem = {"variant": "multihead", "num_heads": 4, "causal": True, "tokens": TOKENS,
               "input": [[round(rng.gauss(0, 1), 3) for _ in range(32)] for _ in TOKENS],
               "init": {"seed": 14, "bias": True}}
    p, html = os.path.join(tmp, "sentence.json"), os.path.join(tmp, "view.html")
    with open(p, "w") as f:
        json.dump(problem, f)
    subprocess.run([attn, "compute", p, "--heatmap", html, "-o", os.path.join(tmp, "r.json")],
                   check=True)
    page = open_page(browser, html)
    page.key("2")
    page.wait_for("attnView.view.panel === 1")
    c = page.eval("attnView.cellCenter(8, 3)")
    page.click(c["x"], c["y"])
    c = page.eval("attnView.cellCenter(8, 5)")
    page.mouse("mouseMoved", c["x"], c["y"])
    save(page, "html_view.png")
    drawn = page.eval("attnView.headView.state.drawn")
    page.eval("attnView.setTab('head')")
    page.wait_for(f"attnView.headView.state.drawn > {drawn}")
    drawn = page.eval("attnView.headView.state.drawn")
    c = page.eval("attnView.headView.tokenCenter('q', 8)")
    page.mouse("mouseMoved", c["x"], c["y"])
    page.wait_for(f"attnView.headView.state.drawn > {drawn}")
    save(page, "head_view.png")


def model(attn, tmp, browser):
    html = os.path.join(tmp, "model.html")
    layers = os.path.join(ROOT, "samples", "layers")
    subprocess.run([attn, "compute", "--hidden-states", os.path.join(layers, "hidden_states.npy"),
                    "--params", os.path.join(layers, "model.safetensors"), "--heads", "4",
                    "--causal", "--heatmap", html, "-o", os.path.join(tmp, "m.json")],
                   check=True)
    page = open_page(browser, html)
    t = page.eval("(() => { const r = document.querySelectorAll('.thumb')[9]"
                  ".getBoundingClientRect(); return {x: r.x + 20, y: r.y + 20}; })()")
    page.click(t["x"], t["y"])
    page.wait_for("attnView.view.panel === 9")
    c = page.eval("attnView.cellCenter(6, 2)")
    page.click(c["x"], c["y"])
    save(page, "model_view.png")


def main():
    attn = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp, cdp.Browser(width=1500, height=960) as b:
        sentence(attn, tmp, b)
        model(attn, tmp, b)


if __name__ == "__main__":
    main()

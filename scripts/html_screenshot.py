#!/usr/bin/python3
"""Regenerates docs/html_view.png, the README's picture of the HTML view: a 4-head causal
self-attention problem over a 12-token sentence, written with `attn compute --heatmap
OUT.html`, opened in headless chromium (tests/browser/cdp.py), one query row clicked and a
cell hovered, then screenshotted.

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


def main():
    attn = os.path.abspath(sys.argv[1])
    out = os.path.join(ROOT, "docs", "html_view.png")
    rng = random.Random(14)
    problem = {"variant": "multihead", "num_heads": 4, "causal": True, "tokens": TOKENS,
               "input": [[round(rng.gauss(0, 1), 3) for _ in range(32)] for _ in TOKENS],
               "init": {"seed": 14, "bias": True}}
    with tempfile.TemporaryDirectory() as tmp:
        p, html = os.path.join(tmp, "sentence.json"), os.path.join(tmp, "view.html")
        with open(p, "w") as f:
            json.dump(problem, f)
        subprocess.run([attn, "compute", p, "--heatmap", html, "-o", os.path.join(tmp, "r.json")],
                       check=True)
        with cdp.Browser(width=1500, height=960) as b:
            page = b.open("file://" + html)
            page.wait_for("document.body && document.body.dataset.ready === '1'")
            page.key("2")
            c = page.eval("attnView.cellCenter(8, 3)")
            page.click(c["x"], c["y"])
            c = page.eval("attnView.cellCenter(8, 5)")
            page.mouse("mouseMoved", c["x"], c["y"])
            png = page.screenshot()
            assert page.errors() == [] and page.requests() == [], (page.errors(), page.requests())
    with open(out, "wb") as f:
        f.write(png)
    print(f"wrote {out} ({len(png)} bytes)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Heatmap labels are never dropped silently (--tokens, --font-size, --cols, labels from
files, a font for scripts DejaVu lacks) and --term follows terminal conventions
(--color auto|always|never, NO_COLOR, the terminal's size). One case per check.

/usr/bin/python3 tests/cli/labels_test.py PATH/TO/attn [--case NAME] | --list
"""
import fcntl
import json
import os
import re
import struct
import subprocess
import termios
import xml.etree.ElementTree as ET

import harness
from harness import check, main, path, run, test, write

SVG = "{http://www.w3.org/2000/svg}"
ESC = re.compile(rb"\x1b\[[0-9;]*m")
TOKENS20 = [f"tok{i}" for i in range(20)]


def weights(b, h, lq, lk):
    """Row-normalised weights [b, h, lq, lk] as a nested list (a JSON array file)."""
    rows = []
    for bi in range(b):
        heads = []
        for hi in range(h):
            heads.append([[((i * 7 + j * 3 + hi + bi) % 11 + 1) / 10.0 for j in range(lk)]
                          for i in range(lq)])
        rows.append(heads)
    return rows


def svg_texts(name):
    root = ET.parse(path(name)).getroot()
    return [t.text or "" for t in root.iter(SVG + "text")]


def plain(out):
    return ESC.sub(b"", out).decode("utf-8", "replace")


def run_pty(args, cols, rows, env=None):
    """Runs attn with stdout on a pseudo-terminal of cols x rows; returns (rc, stdout)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    p = subprocess.Popen([harness.ATTN] + args, stdout=slave, stderr=subprocess.PIPE,
                         cwd=harness.TMP, env=harness.with_env(env))
    os.close(slave)
    got = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        got += data
    os.close(master)
    p.wait(timeout=120)
    return p.returncode, got.replace(b"\r\n", b"\n")


W12 = write("w12.json", weights(1, 12, 20, 20)[0])  # [12, 20, 20]: 12 heads
TOK20 = write("tok20.txt", "\n".join(TOKENS20) + "\n")


# --- every label drawn --------------------------------------------------------------------

@test("12-head grid of 20 tokens: every token drawn, no warning")
def _():
    rc, _, err = run(["heatmap", W12, "-o", path("g12.svg"), "--tokens", TOK20])
    check("exit 0", rc == 0, err)
    texts = svg_texts("g12.svg") if rc == 0 else []
    # Every token on the x axis of each bottom panel (4) and the y axis of each row (3).
    for t in ("tok1", "tok7", "tok19"):
        check(f"{t} drawn on every labelled axis", texts.count(t) >= 4 + 3,
              f"{t}: {texts.count(t)}")
    check("no warning", err == "", err)
    check("no thinning note", not any("thinned" in t for t in texts), str(texts[:5]))


@test("too many tokens: thinning stated in the figure and on stderr")
def _():
    n = 400
    write("w400.json", weights(1, 1, n, n)[0][0])
    write("tok400.txt", "\n".join(f"t{i}" for i in range(n)))
    rc, _, err = run(["heatmap", path("w400.json"), "-o", path("w400.svg"), "--tokens",
                      path("tok400.txt")])
    check("exit 0", rc == 0, err)
    check("stderr names the thinning",
          re.search(r"attn: warning: key labels thinned: every \d+\w\w of 400 drawn", err)
          is not None, err)
    texts = svg_texts("w400.svg") if rc == 0 else []
    check("the figure says so", any("labels thinned" in t for t in texts), str(texts[:3]))
    rc, _, err = run(["heatmap", path("w400.json"), "-o", path("w400q.svg"), "--tokens",
                      path("tok400.txt"), "--quiet"])
    check("--quiet silences the warning", rc == 0 and err == "", err)


@test("--font-size grows the text, --cols sets the grid")
def _():
    sizes = {}
    for fs in ("10", "16"):
        rc, _, err = run(["heatmap", W12, "-o", path(f"fs{fs}.svg"), "--tokens", TOK20,
                          "--font-size", fs, "--cols", "6"])
        check(f"--font-size {fs}: exit 0", rc == 0, err)
        if rc != 0:
            return
        root = ET.parse(path(f"fs{fs}.svg")).getroot()
        sizes[fs] = [float(re.sub(r"[^0-9.]", "", t.get("font-size", "0")))
                     for t in root.iter(SVG + "text") if t.text == "tok3"]
        if fs == "10":
            xs = sorted({round(float(r.get("x"))) for g in root.iter(SVG + "g")
                         if (g.get("id") or "").startswith("panel-")
                         for r in list(g.iter(SVG + "rect"))[:1]})
            check("--cols 6: six panel columns", len(xs) == 6, str(xs))
    check("--font-size 16 draws larger labels",
          sizes["10"] and sizes["16"] and min(sizes["16"]) > max(sizes["10"]) * 1.5, str(sizes))
    rc, _, err = run(["heatmap", W12, "-o", path("bad.svg"), "--font-size", "200"])
    check("--font-size 200: exit 2, one line", rc == 2 and harness.one_error_line(err)
          and "--font-size" in err, err)
    rc, _, err = run(["heatmap", W12, "-o", path("bad.svg"), "--cols", "0"])
    check("--cols 0: exit 2", rc == 2 and harness.one_error_line(err), err)


# --- token sources ------------------------------------------------------------------------

@test("--tokens from a file: one per line, so ',' is a token; CR LF; JSON list")
def _():
    write("w3.json", [[0.7, 0.2, 0.1], [0.25, 0.5, 0.25], [0.05, 0.15, 0.8]])
    with open(path("comma.txt"), "wb") as f:
        f.write(b"Hello\r\n,\r\nworld\r\n")
    rc, _, err = run(["heatmap", path("w3.json"), "-o", path("c.svg"), "--tokens",
                      path("comma.txt")])
    texts = svg_texts("c.svg") if rc == 0 else []
    check("a ',' token is drawn", rc == 0 and "," in texts and "Hello" in texts
          and "world" in texts, err + str(texts))
    write("toks.json", ["the", "c,a,t", "\u732b"])
    rc, _, err = run(["heatmap", path("w3.json"), "-o", path("j.svg"), "--xlabels",
                      path("toks.json")])
    texts = svg_texts("j.svg") if rc == 0 else []
    check("--xlabels FILE.json: a JSON list", rc == 0 and "c,a,t" in texts
          and "\u732b" in texts, err + str(texts))
    rc, _, err = run(["heatmap", path("w3.json"), "-o", path("x.svg"), "--tokens", "a,b"])
    check("wrong count: exit 2 naming --tokens", rc == 2 and harness.one_error_line(err)
          and "--tokens: expected 3" in err, err)
    rc, _, err = run(["heatmap", path("w3.json"), "-o", path("x.svg"), "--tokens",
                      "missing.txt"])
    check("missing file: exit 2, 'no such file'", rc == 2 and harness.one_error_line(err)
          and "no such file" in err, err)


@test("compute --tokens: labels in --heatmap and in the result")
def _():
    problem = write("p.json", {"variant": "dot", "query": [[1, 0], [0, 1], [1, 1]],
                               "key": [[1, 0], [0, 1], [1, 1]],
                               "value": [[1, 0], [0, 1], [1, 1]]})
    write("ctok.txt", "alpha\n,\ngamma\n")
    rc, out, err = run(["compute", problem, "--tokens", path("ctok.txt"), "--heatmap",
                        path("cm.svg"), "--font-size", "12", "--cols", "1"])
    check("exit 0", rc == 0, err)
    doc = json.loads(out) if rc == 0 else {}
    check("result echoes the tokens", doc.get("query_tokens") == ["alpha", ",", "gamma"],
          str(doc)[:200])
    texts = svg_texts("cm.svg") if rc == 0 else []
    check("heatmap draws them", "alpha" in texts and "," in texts and "gamma" in texts,
          str(texts))
    rc, out, err = run(["compute", problem, "--tokens", "x,y,z"])
    check("comma list", rc == 0 and json.loads(out).get("key_tokens") == ["x", "y", "z"], err)


# --- fonts --------------------------------------------------------------------------------

@test("a glyph no font has: one warning")
def _():
    write("w2.json", [[0.5, 0.5], [0.5, 0.5]])
    # Egyptian hieroglyphs: neither DejaVu Sans nor the CJK fallback has them.
    rc, _, err = run(["heatmap", path("w2.json"), "-o", path("h.png"), "--tokens",
                      "\U00013000\U00013001,a"])
    lines = [l for l in err.splitlines() if "glyph" in l]
    check("exit 0", rc == 0, err)
    check("one warning naming the code point", len(lines) == 1 and "U+13000" in lines[0]
          and "1 more" in lines[0], err)
    rc, _, err = run(["heatmap", path("w2.json"), "-o", path("h2.png"), "--tokens",
                      "\u732b,a"])
    check("a CJK token has a glyph: no warning", rc == 0 and err == "", err)


# --- terminal conventions -----------------------------------------------------------------

def term_args(name):
    return ["heatmap", name, "--term", "--no-annotate"]


@test("--color: auto is none in a pipe; always and never")
def _():
    w = write("t3.json", [[0.7, 0.2, 0.1], [0.25, 0.5, 0.25], [0.05, 0.15, 0.8]])
    env = {"NO_COLOR": None, "COLORTERM": "truecolor"}
    rc, out, err = run(term_args(w), env=env)
    check("auto in a pipe: no escape codes", rc == 0 and b"\x1b" not in out, err)
    rc, out, err = run(term_args(w) + ["--color", "always"], env=env)
    check("always in a pipe: colour", rc == 0 and b"\x1b[48;2;" in out, err)
    rc, out, err = run(term_args(w) + ["--color", "always"], env=dict(env, NO_COLOR="1"))
    check("always beats NO_COLOR", rc == 0 and b"\x1b[" in out, err)
    rc, out, err = run(term_args(w) + ["--color=never"], env=env)
    check("never: no escape codes", rc == 0 and b"\x1b" not in out, err)
    rc, _, err = run(term_args(w) + ["--color", "sometimes"], env=env)
    check("bad value: exit 2", rc == 2 and harness.one_error_line(err), err)


@test("--color auto on a terminal: colour unless NO_COLOR")
def _():
    w = write("t3b.json", [[0.7, 0.2, 0.1], [0.25, 0.5, 0.25], [0.05, 0.15, 0.8]])
    try:
        rc, out = run_pty(term_args(w), 80, 24, {"NO_COLOR": None, "COLORTERM": "truecolor"})
    except OSError as e:
        harness.skip(f"no pseudo-terminal here ({e})")
        return
    check("auto on a terminal: colour", rc == 0 and b"\x1b[48;2;" in out, repr(out[:200]))
    rc, out = run_pty(term_args(w), 80, 24, {"NO_COLOR": "1", "COLORTERM": "truecolor"})
    check("auto on a terminal with NO_COLOR: none", rc == 0 and b"\x1b" not in out,
          repr(out[:200]))


@test("--term fits the terminal: 20x20 uses the width, no panel taller than it")
def _():
    w = write("w20.json", weights(1, 1, 20, 20)[0][0])
    try:
        rc, out = run_pty(["heatmap", w, "--term"], 120, 40, {"NO_COLOR": None, "COLUMNS": None,
                                                    "LINES": None})
    except OSError as e:
        harness.skip(f"no pseudo-terminal here ({e})")
        return
    lines = plain(out).splitlines()
    widest = max(len(l) for l in lines) if lines else 0
    check("20x20 in 120 columns: wider than 60", rc == 0 and 60 < widest <= 120,
          f"widest {widest}")
    check("fits 40 lines", len(lines) <= 40, str(len(lines)))
    # COLUMNS/LINES when stdout is not a terminal.
    w200 = write("w200.json", weights(1, 1, 200, 200)[0][0])
    rc, out, err = run(term_args(w200), env={"COLUMNS": "100", "LINES": "30"})
    lines = plain(out).splitlines()
    check("COLUMNS=100 LINES=30: within 100 columns", rc == 0
          and max(len(l) for l in lines) <= 100, err)
    body = [l for l in lines if "\u2591" in l or "\u2592" in l or "\u2593" in l
            or "\u2588" in l]
    check("a panel no taller than LINES", 0 < len(body) <= 30 - 3, str(len(body)))
    rc, out, err = run(term_args(w200), env={"COLUMNS": None, "LINES": None})
    lines = plain(out).splitlines()
    check("default 80x24", rc == 0 and max(len(l) for l in lines) <= 80
          and len([l for l in lines if "\u2588" in l or "\u2593" in l]) <= 21, err)


@test("--term states the tokens it cannot show")
def _():
    w = write("w60.json", weights(1, 1, 60, 60)[0][0])
    toks = write("tok60.txt", "\n".join(f"key{i}" for i in range(60)))
    rc, out, err = run(["heatmap", w, "--term", "--tokens", toks],
                       env={"COLUMNS": "80", "LINES": "24"})
    text = plain(out)
    check("a line says 1 in N tokens shown", rc == 0
          and re.search(r"labels: 1 in \d+ key tokens and 1 in \d+ query tokens shown", text)
          is not None, err + text[:300])


main()

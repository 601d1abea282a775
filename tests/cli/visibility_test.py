#!/usr/bin/python3
"""CLI tests of the one visibility rule: `attn explain`'s grid and the hatching of
`attn compute --heatmap` agree cell by cell, and both match hand-derived patterns
(python3 stdlib only).

    /usr/bin/python3 tests/cli/visibility_test.py PATH/TO/attn [--case NAME]   (from the repo root)
    /usr/bin/python3 tests/cli/visibility_test.py --list

Each case is a small problem (Lq, Lk <= 8, so explain shows the whole grid) with one of:
causal top-left / bottom-right with Lq != Lk, a sliding window with both alignments, a
keep-mask, a key-padding mask, a -inf bias, and combinations. The expected pattern is
written out from the contract's definitions (README "Masks"), not computed by attn.
"""
import json
import os
import xml.etree.ElementTree as ET

from harness import ROOT, check, main, path, test
import harness

SVG = "{http://www.w3.org/2000/svg}"


def run(args):
    rc, out, err = harness.run(args)
    return rc, out.decode("utf-8", "replace"), err


def write_problem(name, doc):
    with open(path(name), "w") as f:
        json.dump(doc, f)
    return path(name)


def explain_grid(args):
    """explain's visibility grid as rows of '#' (sees) / '.' (blocked), or None."""
    rc, out, err = run(["explain", *args])
    if rc != 0:
        return None, err
    lines = out.splitlines()
    start = next((k for k, l in enumerate(lines) if l.startswith("visibility")), None)
    if start is None:
        return None, out
    grid = []
    for line in lines[start + 2:]:  # skip the header and the ruler
        fields = line.split()
        if len(fields) < 2 or not fields[0].isdigit() or set(fields[-1]) - set("#."):
            break
        grid.append(fields[-1])
    return grid, out


def heatmap_hatched(args):
    """The hatched cells of `compute --heatmap x.svg` (panel 0) as rows of '.'/'#', or None."""
    svg = path("x.svg")
    if os.path.exists(svg):
        os.remove(svg)
    rc, _, err = run(["compute", *args, "--heatmap", svg, "--quiet"])
    if rc != 0:
        return None, err
    panel = next(g for g in ET.parse(svg).getroot().iter(SVG + "g") if g.get("id") == "panel-0")
    rows, cols = int(panel.get("data-rows")), int(panel.get("data-cols"))
    cells = [r for r in panel.iter(SVG + "rect") if r.get("class") == "cell"]
    if len(cells) != rows * cols:
        return None, f"{len(cells)} cells for {rows} x {cols}"
    cells.sort(key=lambda r: (float(r.get("y")), float(r.get("x"))))
    marks = ["." if "hatch" in c.get("fill") else "#" for c in cells]
    return ["".join(marks[i * cols:(i + 1) * cols]) for i in range(rows)], ""


def pattern(lq, lk, sees):
    return ["".join("#" if sees(i, j) else "." for j in range(lk)) for i in range(lq)]


def blocked(grid):
    return sum(row.count(".") for row in grid)


# A [Lq, D] / [Lk, D] problem with direct Q, K, V (one head, D = 2).
def qkv(lq, lk):
    return {"query": [[0.1 * i, 1.0 - 0.2 * i] for i in range(lq)],
            "key": [[0.3 * j - 0.5, 0.1 * j] for j in range(lk)],
            "value": [[float(j), 1.0] for j in range(lk)]}


def case(name, lq, lk, fields, flags, sees):
    """Explain and the heatmap both show `sees` (query i, key j) -> bool for this problem."""
    @test(name)
    def _():
        doc = dict(qkv(lq, lk), **fields)
        file = write_problem(name.replace(" ", "_").replace(",", "") + ".json", doc)
        want = pattern(lq, lk, sees)
        grid, detail = explain_grid([file, *flags])
        check(f"{name}: explain's grid", grid == want, f"{grid} != {want}\n{detail}")
        hatched, detail = heatmap_hatched([file, *flags])
        check(f"{name}: heatmap hatching", hatched == want, f"{hatched} != {want} {detail}")
        check(f"{name}: explain's count = the heatmap's",
              grid is not None and hatched is not None and blocked(grid) == blocked(hatched),
              f"{grid} vs {hatched}")


# --- --window 0,0 on a 4 x 4 problem blocks 12 of 16 cells ---------------------------------
@test("compute --window 0,0 --heatmap: 12 of 16 cells hatched")
def _():
    hatched, _ = heatmap_hatched([os.path.join(ROOT, "samples", "self.json"), "--window", "0,0"])
    check("compute --window 0,0 --heatmap: 12 of 16 cells hatched",
          hatched is not None and blocked(hatched) == 12, str(hatched))


@test("explain --window 0,0: 12 of 16 blocked")
def _():
    grid, _ = explain_grid([os.path.join(ROOT, "samples", "self.json"), "--window", "0,0"])
    check("explain --window 0,0: 12 of 16 blocked", grid is not None and blocked(grid) == 12,
          str(grid))


# --- causal, Lq != Lk ----------------------------------------------------------------------
case("causal top-left 3x5", 3, 5, {"causal": "top-left"}, [], lambda i, j: j <= i)
case("causal bottom-right 3x5", 3, 5, {"causal": "bottom-right"}, [], lambda i, j: j <= i + 2)
case("causal bottom-right 5x3", 5, 3, {"causal": "bottom-right"}, [], lambda i, j: j <= i - 2)

# --- sliding window, both alignments (flags and fields) ------------------------------------
case("window 1,0 top-left 3x5", 3, 5, {}, ["--window", "1,0"], lambda i, j: i - 1 <= j <= i)
case("window 1,0 bottom-right 3x5", 3, 5, {"window": [1, 0], "window_align": "bottom-right"},
     [], lambda i, j: i + 2 - 1 <= j <= i + 2)
case("window -1,1 bottom-right 5x3", 5, 3, {}, ["--window", "-1,1", "--window-align",
                                                "bottom-right"], lambda i, j: j <= i - 2 + 1)
case("window 0,2 top-left 4x6", 4, 6, {"window": [0, 2]}, [], lambda i, j: i <= j <= i + 2)
# causal bottom-right forces the window's alignment to bottom-right
case("causal top-left + window 1,1 bottom-right 3x5", 3, 5,
     {"causal": True, "window": [1, 1], "window_align": "bottom-right"}, [],
     lambda i, j: j <= i and i + 1 <= j <= i + 3)
case("causal bottom-right + window 1,-1 3x5", 3, 5,
     {"causal": "bottom-right", "window": [1, -1]}, [],
     lambda i, j: j <= i + 2 and j >= i + 1)

# --- masks, padding, bias -------------------------------------------------------------------
KEEP = [[1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [1, 1, 0, 1, 1]]
case("keep-mask 3x5", 3, 5, {"mask": KEEP}, [], lambda i, j: KEEP[i][j] == 1)
PAD = [True, True, False, True, False]
case("key padding 3x5", 3, 5, {"key_padding_mask": PAD}, [], lambda i, j: PAD[j])
BIAS = [[0.0, "-inf", 0.5, 0.0], [1.0, 0.0, "-inf", "-inf"], [0.0, 0.0, 0.0, 0.0]]
case("-inf bias 3x4", 3, 4, {"bias": BIAS}, [], lambda i, j: BIAS[i][j] != "-inf")
case("window + padding + mask 3x5", 3, 5, {"mask": KEEP, "key_padding_mask": PAD},
     ["--window", "1,1"], lambda i, j: KEEP[i][j] == 1 and PAD[j] and i - 1 <= j <= i + 1)

main()

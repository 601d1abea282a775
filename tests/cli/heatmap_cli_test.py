#!/usr/bin/python3
"""CLI tests for `attn heatmap` and `attn compute --heatmap` (python3 stdlib only).

    /usr/bin/python3 tests/cli/heatmap_cli_test.py PATH/TO/attn     (from the repo root)

Decodes the PNGs with a small decoder of its own (zlib + PNG filters) and checks sizes
and cell colours, parses the SVGs with xml.etree, compares `--term` with
tests/golden/term_3x3.txt, and checks inputs (.npy, .json, result documents, stdin),
panel selection, masks, outputs (-o -, atomic writes) and errors (exit 2, one line).
Ends with "N passed, M failed"; exits 1 if any failed.
"""
import json
import os
import re
import struct
import xml.etree.ElementTree as ET
import zlib

from harness import ROOT, check, main, path, test
import harness

# viridis entries as matplotlib writes them (Colormap(bytes=True)): the ones W3 needs.
VIRIDIS = {12: (71, 18, 101), 128: (32, 144, 140), 179: (68, 190, 112),
           204: (121, 209, 81), 255: (253, 231, 36)}
HATCH_BG = (242, 242, 242)

W3 = [[0.7, 0.2, 0.1], [0.25, 0.5, 0.25], [0.05, 0.15, 0.8]]


def run(args, stdin=None, env=None, cwd=None):
    e = {k: None for k in ("NO_COLOR", "COLORTERM", "COLUMNS")}
    e.update(env or {})
    return harness.run(args, stdin, cwd, e, timeout=120)


def write(name, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path(name), mode) as f:
        f.write(data)
    return path(name)


def write_npy(name, shape, values):
    """A float32 C-order .npy v1.0 file."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join(f"{d}, " for d in shape) if len(shape) != 1 else f"{shape[0]},")
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    data = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()
    return write(name, data + struct.pack(f"<{len(values)}f", *values))


def decode_png(data):
    """(width, height, rows of (r, g, b) tuples) for 8-bit RGB/RGBA non-interlaced PNGs."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"bad CRC in {kind!r}"
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, "unsupported PNG"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def colours(rows):
    return {c for row in rows for c in row}


def count(rows, colour):
    return sum(row.count(colour) for row in rows)


def png_file(name):
    with open(path(name), "rb") as f:
        return decode_png(f.read())


def error_case(name, args, pattern, stdin=None):
    rc, _, err = run(args, stdin)
    lines = err.strip().splitlines()
    check(name, rc == 2 and len(lines) == 1 and lines[0].startswith("attn: error: ")
          and re.search(pattern, lines[0]) is not None, f"exit {rc}, stderr {err.strip()!r}")


w3 = write("w3.json", json.dumps(W3))
vals = [0.0] * (2 * 3 * 4 * 4)
for i in range(len(vals)):
    vals[i] = ((i * 37) % 11) / 10.0
npy = write_npy("w4.npy", (2, 3, 4, 4), vals)


@test("PNG and SVG of a JSON array: size, and cells against the viridis table")
def _():
    rng = ["--vmin", "0", "--vmax", "1"]
    rc, _, err = run(["heatmap", w3, "-o", path("w3.png")] + rng)
    check("png: exit 0", rc == 0, err)
    png_w, png_h, png_rows = png_file("w3.png")
    check("png: bounded size", 200 < png_w < 800 and 150 < png_h < 800, f"{png_w}x{png_h}")
    rc, _, err = run(["heatmap", w3, "-o", path("w3.svg")] + rng)
    check("svg: exit 0", rc == 0, err)
    try:
        root = ET.parse(path("w3.svg")).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        panel = [g for g in root.iter(ns + "g") if g.get("id") == "panel-0"][0]
        cells = [r for r in panel.iter(ns + "rect") if r.get("class") == "cell"]
        check("svg: 9 cells", len(cells) == 9, str(len(cells)))
        fills = [r.get("fill") for r in cells]
        flat = [v for row in W3 for v in row]
        want = ["#%02x%02x%02x" % VIRIDIS[min(255, int(flat[i] * 256))] for i in (0, 4, 6, 8)]
        check("svg: cells have the colormap's colours (index floor(v * 256))",
              [fills[i] for i in (0, 4, 6, 8)] == want, f"{fills} vs {want}")
        check("svg: same canvas as the PNG",
              (root.get("width"), root.get("height")) == (str(png_w), str(png_h)))
        same = all(
            "#%02x%02x%02x" % png_rows[int(float(r.get("y"))) + 1][int(float(r.get("x"))) + 1]
            == r.get("fill") for r in cells)
        check("png: pixels of every cell equal the SVG's fills", same)
        texts = [t.text for t in root.iter(ns + "text")]
        check("svg: labels and title are text", "Keys" in texts and "Queries" in texts
              and "w3.json" in texts and "0.80" in texts, str(texts[:8]))
    except (ET.ParseError, IndexError, OSError) as e:
        check("svg: parses", False, repr(e))


@test("Terminal: the golden 3x3, colour modes, NO_COLOR")
def _():
    with open(os.path.join(ROOT, "tests", "golden", "term_3x3.txt"), "rb") as f:
        golden = f.read()
    args = ["heatmap", w3, "--term", "--title", "3x3", "--xlabels", "the,cat,sat",
            "--ylabels", "the,cat,sat"]
    # stdout is a pipe here: colour needs --color always (auto gives none in a pipe).
    rc, out, err = run(args + ["--color", "always"],
                       env={"COLORTERM": "truecolor", "COLUMNS": "80"})
    check("term: truecolor equals tests/golden/term_3x3.txt", rc == 0 and out == golden,
          f"exit {rc} {err}\n{out.decode('utf-8', 'replace')}")
    rc, out, _ = run(args + ["--color", "always"], env={"COLUMNS": "80"})
    check("term: 256 colours without COLORTERM", b"\x1b[48;5;" in out and b";2;" not in out)
    rc, out, _ = run(args, env={"COLORTERM": "truecolor", "NO_COLOR": "1"})
    check("term: NO_COLOR means no escape codes", rc == 0 and b"\x1b" not in out
          and b"0.70" in out)


@test("Inputs: a compute result document (tokens), .npy, stdin")
def _():
    rc, doc, err = run(["compute", os.path.join(ROOT, "samples", "seed_dot.json")])
    check("compute: result document", rc == 0, err)
    write("result.json", doc)
    rc, out, err = run(["heatmap", path("result.json"), "--term", "--no-annotate"],
                       env={"NO_COLOR": "1"})
    text = out.decode("utf-8", "replace")
    check("result document: tokens become labels", rc == 0 and "k2" in text and "q1" in text,
          err + text)
    rc, out, err = run(["heatmap", "-", "-o", "-"], stdin=doc)
    check("stdin in, PNG on stdout", rc == 0 and out[:8] == b"\x89PNG\r\n\x1a\n", err)
    rc, _, err = run(["heatmap", npy, "-o", path("w4.png")])
    check("npy [B, H, Lq, Lk]: 6 panels", rc == 0, err)
    rc, _, err = run(["heatmap", npy, "-o", path("w4.svg"), "--batch", "1"])
    try:
        root = ET.parse(path("w4.svg")).getroot()
        ids = [g.get("id") for g in root.iter("{http://www.w3.org/2000/svg}g")]
        texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
        check("--batch 1: one panel per head", rc == 0 and "panel-2" in ids
              and "panel-3" not in ids and "head 2" in texts, str(ids))
    except (ET.ParseError, OSError) as e:
        check("--batch 1: parses", False, repr(e))
    rc, _, err = run(["heatmap", npy, "-o", path("w4h.svg"), "--batch", "1", "--head", "2"])
    root = ET.parse(path("w4h.svg")).getroot() if rc == 0 else None
    ids = [g.get("id") for g in root.iter("{http://www.w3.org/2000/svg}g")] if root else []
    check("--batch 1 --head 2: one panel", rc == 0 and "panel-0" in ids and "panel-1" not in ids,
          err)


@test("Masks: --masked-zero, --mask FILE, and compute --heatmap with a causal problem")
def _():
    causal = [[1.0, 0.0, 0.0], [0.4, 0.6, 0.0], [0.2, 0.3, 0.5]]
    wc = write("causal.json", json.dumps(causal))
    rc, _, _ = run(["heatmap", wc, "-o", path("plain.png")])
    rc2, _, _ = run(["heatmap", wc, "-o", path("mz.png"), "--masked-zero"])
    check("--masked-zero hatches zeros", rc == 0 and rc2 == 0
          and count(png_file("mz.png")[2], HATCH_BG) > 2000
          and count(png_file("plain.png")[2], HATCH_BG) < 100)
    mask = write("mask.json", json.dumps([[1, 0, 0], [1, 1, 0], [1, 1, 1]]))
    rc, _, err = run(["heatmap", wc, "-o", path("mf.png"), "--mask", mask])
    check("--mask FILE hatches blocked cells", rc == 0 and count(png_file("mf.png")[2], HATCH_BG) > 2000,
          err)
    rc, out, err = run(["compute", os.path.join(ROOT, "samples", "multihead.json"),
                        "--heatmap", path("mh.png")])
    check("compute --heatmap: PNG with hatched causal cells and the result on stdout",
          rc == 0 and out.startswith(b"{") and count(png_file("mh.png")[2], HATCH_BG) > 2000, err)
    rc, _, err = run(["compute", os.path.join(ROOT, "samples", "multihead.json"),
                      "--heatmap", path("mh.svg")])
    check("compute --heatmap OUT.svg", rc == 0 and b"<svg" in open(path("mh.svg"), "rb").read(),
          err)


@test("Options")
def _():
    for extra in (["--cmap", "magma"], ["--cmap", "Blues_r"], ["--scale", "log"],
                  ["--clip", "0.9"], ["--pool", "mean"], ["--annotate", "--decimals", "3"],
                  ["--dpi", "200"], ["--title", ""], ["--format", "svg"]):
        rc, _, err = run(["heatmap", w3, "-o", path("opt.png")] + extra)
        check("option " + " ".join(extra), rc == 0, err)
    run(["heatmap", w3, "-o", path("dpi1.png")])
    run(["heatmap", w3, "-o", path("dpi.png"), "--dpi", "200"])
    h1 = png_file("dpi1.png")[1]
    check("--dpi 200 doubles the size", abs(png_file("dpi.png")[1] - 2 * h1) < 8)


@test("A long sequence is pooled into a bounded image")
def _():
    n = 1500
    big = [0.0] * (n * n)
    big[777 * n + 1234] = 1.0
    write_npy("big.npy", (n, n), big)
    rc, _, err = run(["heatmap", path("big.npy"), "-o", path("big.png")])
    w, h, rows = png_file("big.png") if rc == 0 else (0, 0, [])
    check("1500x1500: bounded image", rc == 0 and w < 800 and h < 800, f"{w}x{h} {err}")
    panel = [c for row in rows[60:-60] for c in row[80:-120]]  # inside the map, not the colorbar
    check("1500x1500: max pooling keeps the single peak", VIRIDIS[255] in panel)


@test("Errors: exit 2, one line naming the culprit, nothing written")
def _():
    error_case("missing file", ["heatmap", path("nope.npy"), "-o", path("x.png")], r"nope\.npy")
    error_case("no output", ["heatmap", w3], r"-o OUT\.png")
    error_case("bad extension", ["heatmap", w3, "-o", path("x.jpg")], r"x\.jpg.*\.png or \.svg")
    error_case("--head out of range", ["heatmap", npy, "-o", path("x.png"), "--head", "5"],
               r"--head 5")
    error_case("--batch out of range", ["heatmap", w3, "-o", path("x.png"), "--batch", "1"],
               r"--batch 1")
    error_case("unknown colormap", ["heatmap", w3, "-o", path("x.png"), "--cmap", "jet"],
               r"--cmap: unknown colormap 'jet'")
    error_case("--clip range", ["heatmap", w3, "-o", path("x.png"), "--clip", "2"], r"--clip")
    error_case("vmin >= vmax", ["heatmap", w3, "-o", path("x.png"), "--vmin", "1", "--vmax", "0"],
               r"--vmin/--vmax")
    error_case("log with vmin 0", ["heatmap", w3, "-o", path("x.png"), "--scale", "log",
                                   "--vmin", "0"], r"--vmin: must be > 0")
    error_case("label count", ["heatmap", w3, "-o", path("x.png"), "--xlabels", "a,b"],
               r"--xlabels: expected 3")
    error_case("rank 1", ["heatmap", write("r1.json", "[1, 2]"), "-o", path("x.png")],
               r"expected shape")
    error_case("object without weights", ["heatmap", write("o.json", '{"output": [1]}'),
                                          "-o", path("x.png")], r"without \"weights\"")
    error_case("mask shape", ["heatmap", w3, "-o", path("x.png"), "--mask",
                              write("m2.json", "[[1, 0], [1, 1]]")], r"--mask")
    check("failed runs leave no file", not os.path.exists(path("x.png"))
          and not os.path.exists(path("x.jpg")))


@test("Atomic writes: an unwritable destination exits 1 and keeps the old file")
def _():
    write("keep.png", b"old")
    os.makedirs(path("ro"), exist_ok=True)
    write("ro/keep.png", b"old")
    os.chmod(path("ro"), 0o500)
    rc, _, err = run(["heatmap", w3, "-o", path("ro/keep.png")])
    os.chmod(path("ro"), 0o700)
    if os.geteuid() != 0:  # root can write anywhere
        check("unwritable: exit 1, old file kept", rc == 1
              and open(path("ro/keep.png"), "rb").read() == b"old", err)
    rc, _, err = run(["heatmap", w3, "-o", path("no/such/dir/x.png")])
    check("missing directory: exit 1", rc == 1 and err.startswith("attn: error: "), err)


main()

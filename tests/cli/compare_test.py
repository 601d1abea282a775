#!/usr/bin/env python3
"""`attn compare A B` (#35): js, tv, max_abs, top1 and topk per layer and head against a
numpy float64 implementation written here from the contract's formulas, on two tiny models
of two architectures (forward_oracle.py's numpy forwards give their maps), two seeds of one
on batched ids, F32 against F16 of one model (the metrics of both runs' own maps), two
weights .npy files (ties to the lowest key, top_k > Lk), a padded batch
of texts (padding query rows left out); identical inputs give 0 and 1 exactly; .json, .csv
and .npz agree; the --html page; bad input: one line, exit 2, nothing written.

/usr/bin/python3 tests/cli/compare_test.py PATH/TO/attn [--case NAME] | --list
"""
import base64
import csv
import html.parser
import io
import json
import os
import re
import shutil
import sys
import zlib

import numpy as np

from forward_oracle import ARCHS, IDS, Model, write_model
from harness import ROOT, SAMPLES, check, expect, main, path, run, test, write

NAMES = ["js", "tv", "max_abs", "top1", "topk"]
TINY = os.path.join(SAMPLES, "tiny-gpt2")


def top_keys(p, k):
    """The k keys of the largest values, ties to the lowest index (lexsort: last key
    first: by -p, then by index)."""
    order = np.lexsort((np.arange(len(p)), -p))
    return set(order[:k].tolist())


def row_metrics(p, q, top_k):
    """One query row's five values, float64, from the contract's definitions."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    m = (p + q) / 2
    kl = lambda x: sum(x[j] * np.log(x[j] / m[j]) for j in range(len(x)) if x[j] > 0)  # noqa
    k = min(top_k, len(p))
    first_max = lambda x: min(j for j in range(len(x)) if x[j] == x.max())  # noqa: E731
    return {"js": 0.5 * kl(p) + 0.5 * kl(q),
            "tv": 0.5 * np.abs(p - q).sum(),
            "max_abs": np.abs(p - q).max(),
            "top1": float(first_max(p) == first_max(q)),
            "topk": len(top_keys(p, k) & top_keys(q, k)) / k}


def cell_metrics(pairs, top_k):
    """A cell's values over its rows: means, and max_abs the maximum."""
    rows = [row_metrics(p, q, top_k) for p, q in pairs]
    out = {n: np.mean([r[n] for r in rows]) for n in NAMES}
    out["max_abs"] = max(r["max_abs"] for r in rows)
    return out


def reference(a, b, top_k=5, keep=None):
    """a, b: [cells..., B, Lq, Lk] with the batch pooled (B = 1 without one); keep[b][i]:
    query row i of batch row b is compared. Returns each metric of the grid's shape."""
    grid = a.shape[:-3]
    want = {n: np.zeros(grid) for n in NAMES}
    for cell in np.ndindex(*grid):
        pairs = [(a[cell][bb][i], b[cell][bb][i]) for bb in range(a.shape[-3])
                 for i in range(a.shape[-2]) if keep is None or keep[bb][i]]
        got = cell_metrics(pairs, top_k)
        for n in NAMES:
            want[n][cell] = got[n]
    return want


def compare_json(args):
    code, out, err = run(["compare"] + args + ["--quiet"])
    check("compare %s: exit 0" % " ".join(os.path.basename(x) for x in args), code == 0, err)
    return json.loads(out) if code == 0 else None


def check_close(what, doc, want, atol=1e-12):
    for n in NAMES:
        got = np.array(doc[n], dtype=np.float64)
        # top1 and topk are counts of rows: equal up to the order of the mean's sum.
        counts = n in ("top1", "topk")
        ok = got.shape == want[n].shape and np.allclose(
            got, want[n], rtol=0 if counts else 1e-6, atol=1e-12 if counts else atol)
        check("%s: %s" % (what, n), ok, "got %s want %s" % (got.tolist(), want[n].tolist()))


def model(name, arch, seed, ids=None):
    """TMP/name: forward_oracle's tiny model; returns (folder, maps [NL, H, L, L])."""
    m = Model(seed)
    cfg, ws, _ = ARCHS[arch](m, ids=ids) if ids is not None else ARCHS[arch](m)
    write_model(path(name), cfg, m.t)
    return path(name), np.array(ws)


def maps_files():
    """Two [H=3, Lq=4, Lk=6] maps with zeros and exact ties in them."""
    rng = np.random.default_rng(3)
    a = rng.dirichlet(np.ones(6), size=(3, 4)).astype(np.float32)
    b = rng.dirichlet(np.ones(6), size=(3, 4)).astype(np.float32)
    a[0, 0] = [0.25, 0.25, 0.25, 0.25, 0, 0]  # ties and zeros
    b[0, 0] = [0.25, 0.25, 0, 0, 0.25, 0.25]
    a[1, 2] = b[1, 2]  # one identical row
    return write("a.npy", a), write("b.npy", b), a, b


@test("two models of two architectures (GPT-2, Llama) on the same ids: the float64 reference")
def _two_archs():
    fa, wa = model("cmp-gpt2", "gpt2", 7)
    fb, wb = model("cmp-llama", "llama", 11)
    ids = write("ids.json", IDS)
    doc = compare_json([fa, fb, "--token-ids", ids])
    if doc:
        want = reference(wa[:, :, None], wb[:, :, None])
        check_close("gpt2 vs llama", doc, want, atol=2e-6)
        check("rows per cell = L", doc["rows"] == len(IDS) and doc["top_k"] == 5, str(doc["rows"]))
    doc = compare_json([fa, fb, "--token-ids", ids, "--top-k", "2"])
    if doc:
        check_close("--top-k 2", doc, reference(wa[:, :, None], wb[:, :, None], 2), atol=2e-6)
    one = run(["compare", fa, fb, "--token-ids", ids, "--threads", "1", "--quiet"])[1]
    two = run(["compare", fa, fb, "--token-ids", ids, "--threads", "2", "--quiet"])[1]
    check("the same bytes for --threads 1 and 2", one == two and len(one) > 0, "")


@test("two seeds of OPT on batched ids: the batch rows pooled per layer and head")
def _batched():
    rows = [IDS, [4, 9, 9, 30, 2, 11, 6]]
    a, b = [], []
    for ids in rows:
        fa, wa = model("cmp-opt-7", "opt", 7, ids=ids)
        fb, wb = model("cmp-opt-8", "opt", 8, ids=ids)
        a.append(wa)
        b.append(wb)
    doc = compare_json([fa, fb, "--token-ids", write("ids2.json", rows)])
    if doc:
        # [B, NL, H, L, L] -> [NL, H, B, L, L]
        want = reference(np.array(a).transpose(1, 2, 0, 3, 4), np.array(b).transpose(1, 2, 0, 3, 4))
        check_close("batched", doc, want, atol=2e-6)
        check("rows = B * L", doc["rows"] == 2 * len(IDS), str(doc["rows"]))


@test("F32 against F16 of one model: small, nonzero, and the metrics of both runs' maps")
def _f16():
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    import reference_files
    m = Model(7)
    cfg, _, _ = ARCHS["gpt2"](m)
    write_model(path("cmp-f32"), cfg, m.t)
    os.makedirs(path("cmp-f16"), exist_ok=True)
    shutil.copy(os.path.join(path("cmp-f32"), "config.json"), path("cmp-f16"))
    reference_files.write_safetensors(os.path.join(path("cmp-f16"), "model.safetensors"),
                                      [(k, "F16", m.t[k]) for k in sorted(m.t)])
    ids = write("ids.json", IDS)
    maps = []
    for name in ("cmp-f32", "cmp-f16"):
        expect(["compute", "--params", path(name), "--token-ids", ids, "--weights",
                path(name + ".npy"), "--output", path(name + "-out.npy")], name="compute " + name)
        maps.append(np.load(path(name + ".npy")).astype(np.float64))  # [NL, H, L, L]
    doc = compare_json([path("cmp-f32"), path("cmp-f16"), "--token-ids", ids])
    if doc:
        check_close("f32 vs f16", doc, reference(maps[0][:, :, None], maps[1][:, :, None]))
        js = np.array(doc["js"])
        check("f16 rounding: 0 < js < 1e-3", (js > 0).all() and (js < 1e-3).all(), str(js))


@test("identical inputs: js = tv = max_abs = 0, top1 = topk = 1, exactly")
def _identical():
    fa, _ = model("cmp-gpt2", "gpt2", 7)
    a, _, _, _ = maps_files()
    for args in ([fa, fa, "--token-ids", write("ids.json", IDS)], [a, a]):
        doc = compare_json(args)
        if doc:
            for n, v in (("js", 0), ("tv", 0), ("max_abs", 0), ("top1", 1), ("topk", 1)):
                check("identical %s: %s = %s" % (os.path.basename(args[0]), n, v),
                      (np.array(doc[n]) == v).all(), str(doc[n]))


@test("two weights files: every metric, ties to the lowest key, top_k > Lk")
def _files():
    fa, fb, a, b = maps_files()
    for k in ("5", "1", "2", "9"):  # 9 > Lk = 6: k = 6, every key
        doc = compare_json([fa, fb, "--top-k", k])
        if doc:
            check_close("files --top-k " + k, doc, reference(a[:, None], b[:, None], int(k)))
            check("grid [H] of a bare [H, L, L]", np.array(doc["js"]).shape == (3,),
                  str(doc["js"]))
    ties_a = np.array([[[0.4, 0.4, 0.2], [0.3, 0.3, 0.3]]], np.float32)
    ties_b = np.array([[[0.5, 0.3, 0.2], [0.5, 0.3, 0.2]]], np.float32)
    doc = compare_json([write("ta.npy", ties_a), write("tb.npy", ties_b), "--top-k", "2"])
    if doc:
        # Row 0: argmax 0 and 0 (lowest of the tie); top-2 {0,1} and {0,1}. Row 1: argmax 0
        # and 0; top-2 {0,1} and {0,1}. The highest-index rule would give 0 and 1/2.
        check("ties to the lowest key: top1", doc["top1"] == [1.0], str(doc["top1"]))
        check("ties to the lowest key: topk", doc["topk"] == [1.0], str(doc["topk"]))
        check("ties: the reference agrees", reference(ties_a[:, None], ties_b[:, None], 2)
              ["topk"].tolist() == [1.0], "")
    doc = compare_json([write("t5.npy", ties_a), write("t5b.npy", ties_b), "--top-k", "5"])
    if doc:
        check("top_k 5 > Lk 3: every key, topk 1", doc["topk"] == [1.0], str(doc["topk"]))


@test("a padded batch of texts: padding query rows are not compared")
def _padding():
    b = path("tiny-gpt2-unscaled")
    shutil.copytree(TINY, b, dirs_exist_ok=True)
    with open(os.path.join(b, "config.json")) as f:
        cfg = json.load(f)
    cfg["scale_attn_weights"] = False  # another attention on the same tokenizer
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(cfg, f)
    texts = ["the cat sat on the mat", "a cat"]
    text_args = sum((["--text", t] for t in texts), [])
    maps = []
    for folder, name in ((TINY, "pa"), (b, "pb")):
        expect(["compute", "--params", folder, "--weights", path(name + ".npy")] + text_args,
               name="compute " + name)
        maps.append(np.load(path(name + ".npy")).astype(np.float64))  # [NL, B, H, L, L]
    lengths = [len(json.loads(expect(["tokenize", TINY, "--text", t], name="tokenize " + t))
                   ["token_ids"]) for t in texts]
    length = maps[0].shape[-1]
    keep = [[i < n for i in range(length)] for n in lengths]
    check("the short text is padded", min(lengths) < length, str(lengths))
    doc = compare_json([TINY, b] + text_args)
    if doc:
        want = reference(maps[0].transpose(0, 2, 1, 3, 4), maps[1].transpose(0, 2, 1, 3, 4),
                         keep=keep)
        check_close("padded texts", doc, want)
        check("rows = real tokens", doc["rows"] == sum(lengths), str(doc["rows"]))


@test(".json, .csv and .npz agree; stdout is the .json; one summary line on stderr")
def _files_agree():
    fa, fb, _, _ = maps_files()
    three = np.stack([np.load(fa)] * 2)  # [layers=2, H, L, L]: grid [2, 3]
    ga, gb = write("ga.npy", three), write("gb.npy", np.stack([np.load(fb), np.load(fa)]))
    for ext in ("json", "csv", "npz"):
        expect(["compare", ga, gb, "-o", path("c." + ext), "--quiet"])
    code, out, err = run(["compare", ga, gb])
    check("stderr: one summary line", code == 0 and len(err.strip().splitlines()) == 1 and
          re.search(r"most different: layer [01] head [0-2] \(js ", err) and "mean js" in err, err)
    doc = json.load(open(path("c.json")))
    check("stdout = the .json file", json.loads(out) == doc, "")
    rows = list(csv.DictReader(io.StringIO(open(path("c.csv")).read())))
    check("csv header", list(rows[0].keys()) == ["layer", "head"] + NAMES, str(rows[0].keys()))
    npz = np.load(path("c.npz"))
    for n in NAMES:
        j = np.array(doc[n], np.float64)
        c = np.array([float(r[n]) for r in rows]).reshape(j.shape)
        check(n + ": [layers][H] = [2, 3]", j.shape == (2, 3), str(j.shape))
        check(n + ": csv = json = npz", np.array_equal(c, j) and np.array_equal(npz[n], j), "")


class _Parser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


@test("--html: one self-contained page with the js grid and A, B, A-B (signed, rdbu) per head")
def _html():
    fa, _ = model("cmp-gpt2", "gpt2", 7)
    fb, _ = model("cmp-llama", "llama", 11)
    ids = write("ids.json", IDS)
    a, b, _, _ = maps_files()
    for args, name in (([fa, fb, "--token-ids", ids], "models.html"), ([a, b], "files.html")):
        expect(["compare"] + args + ["--html", path(name), "--quiet"], name="--html " + name)
        text = open(path(name), encoding="utf-8").read() if os.path.exists(path(name)) else ""
        p = _Parser()
        p.feed(text)
        check(name + ": parses, with the grid table and the view's canvas",
              "table" in p.tags and "canvas" in p.tags and "script" in p.tags, str(p.tags[:20]))
        check(name + ": nothing to fetch", "://" not in text, "")
        check(name + ": A, B and A-B panels", " A-B" in text, "")
        _check_signed_panels(name, text)


def _view_parts(text):
    """The view's meta and each panel's (colour indices, exact float32 values)."""
    meta = json.loads(re.search(r'<script type="application/json" id="meta">(.*?)</script>',
                                text, re.S).group(1))
    n = meta["rows"] * meta["cols"]
    panels = []
    for k in range(len(meta["panels"])):
        data = zlib.decompress(base64.b64decode(
            re.search(r'id="p%d">(.*?)</script>' % k, text, re.S).group(1)))
        skip = n * (2 if meta["hasState"] else 1)
        panels.append((np.frombuffer(data[:n], dtype=np.uint8),
                       np.frombuffer(data[skip:skip + 4 * n], dtype="<f4")))
    return meta, panels


def _check_signed_panels(name, text):
    """Every third panel is A - B of the two before it, on rdbu over [-m, m] (m the largest
    |A - B| shown), coloured by matplotlib's index rule; A and B keep the page's scale."""
    meta, panels = _view_parts(text)
    scales = meta.get("panelScales") or []
    diffs = [k for k in range(len(panels)) if k % 3 == 2]
    check(name + ": only the A-B panels have their own scale",
          len(scales) == len(panels) and all((scales[k] is not None) == (k in diffs)
                                             for k in range(len(panels))), str(scales)[:200])
    if not diffs or len(scales) != len(panels):
        return
    m = max(float(np.abs(panels[k - 2][1] - panels[k - 1][1]).max()) for k in diffs)
    for k in diffs:
        a, b = panels[k - 2][1], panels[k - 1][1]
        sc = scales[k]
        check(name + ": panel %d is A - B, exactly" % k, np.array_equal(panels[k][1], a - b), "")
        check(name + ": rdbu over [-m, m], m = the largest |A - B| shown",
              sc["cmap"] == "rdbu" and not sc["reversed"] and
              np.isclose(sc["vmax"], m, rtol=1e-6) and sc["vmin"] == -sc["vmax"], str(sc))
        t = (panels[k][1].astype(np.float64) + sc["vmax"]) / (2 * sc["vmax"])
        want = np.where(t > 0, np.minimum(np.floor(t * 256), 255), 0).astype(np.uint8)
        check(name + ": panel %d's colours: matplotlib's index of (d + m) / 2m" % k,
              np.array_equal(panels[k][0], want), "")


@test("bad input: one line, exit 2, nothing written")
def _bad():
    fa, fb, a, _ = maps_files()
    gpt2, _ = model("cmp-gpt2", "gpt2", 7)
    ids = write("ids.json", IDS)
    other = path("tiny-gpt2-vocab")
    shutil.copytree(TINY, other, dirs_exist_ok=True)
    tok = json.load(open(os.path.join(other, "tokenizer.json")))
    first = json.loads(expect(["tokenize", TINY, "--text", "the cat"]))["token_ids"][1]
    vocab = tok["model"]["vocab"]
    inv = {v: k for k, v in vocab.items()}
    second = first + 1 if first + 1 in inv else first - 1
    vocab[inv[first]], vocab[inv[second]] = second, first
    json.dump(tok, open(os.path.join(other, "tokenizer.json"), "w"))
    nan = a.copy()
    nan[1, 1, 1] = np.nan
    out = path("never.json")
    for args, err in (
            ([fa, write("small.npy", a[:2])], r"B|shape"),
            ([fa, write("nan.npy", nan)], r"finite"),
            ([fa, write("doc.json", {"output": [[1.0, 2.0]]})], r"weights"),
            ([gpt2, TINY, "--token-ids", ids], r"B: expected a model of 2 layers"),
            ([TINY, other, "--text", "the cat"], r"B: its tokenizer gives other token ids"),
            ([fa, fb, "--top-k", "0"], r"top-k"),
            ([gpt2, TINY], r"--text or --token-ids"),
            ([fa, fb, "-o", path("x.txt")], r"\.json, \.csv or \.npz")):
        expect(["compare"] + args + ["-o", out] if "-o" not in args else ["compare"] + args,
               code=2, err=err, name="exit 2: " + err)
        check("nothing written: " + err, not os.path.exists(out), "")


if __name__ == "__main__":
    main()

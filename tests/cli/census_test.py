#!/usr/bin/env python3
"""`attn census` and `attn census merge`: the pooled statistics (Σ values / Σ rows) of a
JSON Lines corpus against the numpy float64 reference (head_stats_oracle.py) on
forward_oracle.py's numpy forward of a tiny OPT; a merge of a split = one run, exactly;
.json, .csv and .npz agree; seeded induction probes; plain-text corpora through the
sample's tokenizer; bad lines, files and merges: one line, exit 2, nothing written.

/usr/bin/python3 tests/cli/census_test.py PATH/TO/attn [--case NAME] | --list
"""
import base64
import csv
import io
import json
import os
import re
import zlib

import numpy as np

from forward_oracle import ARCHS, H, NL, Model, build, write_model
from head_stats_oracle import NAMES, row_values
from harness import ROOT, check, expect, main, path, run, test, write

TEXTS = [[3, 17, 5, 3, 17, 5, 9], [8, 8, 4, 8, 4, 1, 1], [2, 9, 11, 2, 9, 11, 2]]


def corpus(name, texts):
    return write(name, "\n".join(json.dumps({"token_ids": t}) for t in texts) + "\n")


def reference(texts):
    """Pooled sums and rows [layers, H] of each statistic, from the numpy forward."""
    s = {k: np.zeros((NL, H)) for k in NAMES}
    n = {k: np.zeros((NL, H), int) for k in NAMES}
    for ids in texts:
        ws = np.array(ARCHS["opt"](Model(7), ids=ids)[1])
        for layer in range(NL):
            v = row_values(ws[layer], ids)
            for k in NAMES:
                for h in range(H):
                    s[k][layer, h] += sum(v[k][h])
                    n[k][layer, h] += len(v[k][h])
    return s, n


@test("pooled statistics of a JSON Lines corpus match the float64 reference")
def _pooled():
    folder, *_ = build("opt")
    code, out, err = run(["census", folder, corpus("c.jsonl", TEXTS)])
    check("exit 0", code == 0, err)
    if code != 0:
        return
    doc = json.loads(out)
    s, n = reference(TEXTS)
    for k in NAMES:
        got_n = np.array(doc[k + "_rows"])
        check(k + "_rows", (got_n == n[k]).all(), "got %s want %s" % (got_n, n[k]))
        got = np.array(doc[k], dtype=np.float64)
        want = np.where(n[k] > 0, s[k] / np.maximum(n[k], 1), np.nan)
        check(k + " pooled [layers][H]", np.allclose(got, want, atol=2e-6, equal_nan=True),
              "got %s want %s" % (got, want))
        check(k + "_sum", np.allclose(np.array(doc[k + "_sum"], dtype=np.float64), s[k],
                                      atol=1e-5), "")
    sink = np.array(doc["sink"])
    check("sink = first_token >= 0.3", (sink == (np.array(doc["first_token"]) >= 0.3)).all(),
          str(sink))


@test("merge of a split corpus = one run; .json, .csv and .npz agree")
def _merge():
    folder, *_ = build("opt")
    whole, a, b = path("all.npz"), path("a.npz"), path("b.npz")
    for texts, out in ((TEXTS, whole), (TEXTS[:2], a), (TEXTS[2:], b)):
        expect(["census", folder, corpus("part.jsonl", texts), "--output", out])
    expect(["census", "merge", a, b, "-o", path("merged.npz")])
    one, merged = np.load(whole), np.load(path("merged.npz"))
    check("same members", sorted(one.files) == sorted(merged.files), str(merged.files))
    for m in one.files:
        check("merged %s = one run's, exactly" % m,
              np.array_equal(one[m], merged[m], equal_nan=True), m)
    expect(["census", folder, corpus("c.jsonl", TEXTS), "--output", path("c.json")])
    expect(["census", folder, corpus("c.jsonl", TEXTS), "--output", path("c.csv")])
    doc = json.load(open(path("c.json")))
    rows = list(csv.DictReader(io.StringIO(open(path("c.csv")).read())))
    check("csv header", list(rows[0].keys()) == ["layer", "head"] + NAMES + ["sink"] +
          [k + "_rows" for k in NAMES], str(list(rows[0].keys())))
    check("csv: one row per layer and head", len(rows) == NL * H, str(len(rows)))
    for k in NAMES:
        from_csv = np.array([float(r[k]) for r in rows]).reshape(NL, H)
        from_json = np.array(doc[k], dtype=np.float64)
        check(k + ": csv = json = npz", np.allclose(from_csv, from_json, equal_nan=True) and
              np.allclose(one[k], from_json, equal_nan=True), "")
        check(k + "_rows: npz int64 = json", one[k + "_rows"].dtype == np.int64 and
              (one[k + "_rows"] == np.array(doc[k + "_rows"])).all(), "")


@test("--jobs 2 gives the census of --jobs 1, bit for bit; a bad line is still the first")
def _jobs():
    folder, *_ = build("opt")
    texts = TEXTS * 4  # 12 texts: more than one chunk of 2 jobs
    for jobs in ("1", "2"):
        expect(["census", folder, corpus("j.jsonl", texts), "--probe", "induction:4:2",
                "--probes", "3", "--jobs", jobs, "--output", path("j%s.npz" % jobs)])
    one, two = np.load(path("j1.npz")), np.load(path("j2.npz"))
    check("every member equal", all(np.array_equal(one[m], two[m], equal_nan=True)
                                    for m in one.files), "")
    bad = texts[:5] + [[3, 99]] + texts[5:9] + [[99]]
    expect(["census", folder, corpus("jbad.jsonl", bad), "--jobs", "2"], code=2,
           err=r"jbad\.jsonl: line 6: .*outside the vocabulary")


@test("induction probes: seeded, repeated, counted")
def _probes():
    folder, *_ = build("opt")
    runs = []
    for seed in ("1", "1", "2"):
        code, out, err = run(["census", folder, "--probe", "induction:5:3", "--probes", "2",
                              "--seed", seed])
        check("exit 0", code == 0, err)
        if code != 0:
            return
        runs.append(json.loads(out))
    check("the same seed gives the same census", runs[0] == runs[1], "")
    check("another seed another", runs[0]["induction_sum"] != runs[2]["induction_sum"], "")
    rows = np.array(runs[0]["induction_rows"])
    # Two probes of 5 ids repeated 3 times: at least the 10 rows of the repeats per probe.
    check("induction rows >= 2 x 5 x 2 per head", (rows >= 20).all(), str(rows))


def planted_gpt2(folder, vocab=64, positions=24):
    """A 2-layer, 2-head GPT-2 built by hand (Olsson et al. 2022's circuit): layer 0 head 0
    attends to the previous token and writes its id into a subspace of its own; layer 1 head
    0 matches the query's id against it, so it attends to the token after the previous
    occurrence: an induction head. Head 1 of each layer is all zeros (uniform causal
    attention), the MLPs are zero. Each unit is a (+1, -1) pair of features, so LayerNorm's
    mean is 0 and it only scales."""
    units = 2 * vocab + positions  # token ids, positions, the previous token's id
    e, d = 2 * units, units  # two heads of d features
    tok = lambda t: t  # noqa: E731
    pos = lambda p: vocab + p  # noqa: E731
    prev = lambda t: vocab + positions + t  # noqa: E731

    def put(w, unit, col, value):  # a unit's pair of input features into column col
        w[2 * unit, col] += value
        w[2 * unit + 1, col] -= value

    t = {"transformer.wte.weight": np.zeros((vocab, e)),
         "transformer.wpe.weight": np.zeros((positions, e))}
    for i in range(vocab):
        t["transformer.wte.weight"][i, 2 * tok(i):2 * tok(i) + 2] = [1, -1]
    for i in range(positions):
        t["transformer.wpe.weight"][i, 2 * pos(i):2 * pos(i) + 2] = [1, -1]
    for layer in range(2):
        pre = "transformer.h.%d." % layer
        ca, cp = np.zeros((e, 3 * e)), np.zeros((e, e))
        if layer == 0:  # q at position i: i - 1; k at j: j; v: the id; out: the prev unit
            for i in range(1, positions):
                put(ca, pos(i), i - 1, 2.0)
            for j in range(positions):
                put(ca, pos(j), e + j, 2.0)
            for i in range(vocab):
                put(ca, tok(i), 2 * e + i, 1.0)
                cp[i, 2 * prev(i)], cp[i, 2 * prev(i) + 1] = 0.11, -0.11
        else:  # q: the id; k: the previous token's id (key 0 has none: it copied its own)
            for i in range(vocab):
                put(ca, tok(i), i, 2.0)
                put(ca, prev(i), e + i, 2.0)
            put(ca, pos(0), e + vocab, -2.0)
        cb = np.zeros(3 * e)
        cb[vocab] = 6.0 if layer == 1 else 0.0  # with key 0's -2: key 0 kept out
        t.update({pre + "ln_1.weight": np.ones(e), pre + "ln_1.bias": np.zeros(e),
                  pre + "ln_2.weight": np.ones(e), pre + "ln_2.bias": np.zeros(e),
                  pre + "attn.c_attn.weight": ca, pre + "attn.c_attn.bias": cb,
                  pre + "attn.c_proj.weight": cp, pre + "attn.c_proj.bias": np.zeros(e),
                  pre + "mlp.c_fc.weight": np.zeros((e, 4)), pre + "mlp.c_fc.bias": np.zeros(4),
                  pre + "mlp.c_proj.weight": np.zeros((4, e)),
                  pre + "mlp.c_proj.bias": np.zeros(e)})
    t["transformer.ln_f.weight"], t["transformer.ln_f.bias"] = np.ones(e), np.zeros(e)
    cfg = {"model_type": "gpt2", "n_embd": e, "n_head": 2, "n_layer": 2, "n_positions": positions,
           "vocab_size": vocab, "n_inner": 4, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu_new"}
    write_model(folder, cfg, t)
    return folder


@test("planted heads: the induction probe ranks the induction head first, and the "
      "previous-token head")
def _planted():
    folder = planted_gpt2(path("planted-gpt2"))
    code, out, err = run(["census", folder, "--probe", "induction:6:3", "--probes", "4",
                          "--seed", "5"])
    check("exit 0", code == 0, err)
    if code != 0:
        return
    doc = json.loads(out)
    ind, prev = np.array(doc["induction"], float), np.array(doc["previous_token"], float)
    check("layer 1 head 0: induction near 1", ind[1, 0] > 0.95, str(ind))
    check("and ranked first", np.nanargmax(ind) == 2 and np.nanmax(np.delete(ind, 2)) < 0.6,
          str(ind))
    check("layer 0 head 0: previous_token near 1", prev[0, 0] > 0.95, str(prev))
    check("and ranked first", np.nanargmax(prev) == 0 and np.nanmax(prev.ravel()[1:]) < 0.6,
          str(prev))
    check("the uniform heads: entropy above the planted ones'",
          np.array(doc["entropy"], float)[:, 1].min() > np.array(doc["entropy"], float)[:, 0].max(),
          str(doc["entropy"]))


@test("plain text lines through the model's tokenizer, from stdin")
def _plain():
    model = os.path.join(ROOT, "samples", "tiny-gpt2")
    code, out, err = run(["census", model, "-"], stdin=b"the cat sat on the mat\n\nthe cat\n")
    check("exit 0", code == 0, err)
    if code == 0:
        doc = json.loads(out)
        check("[layers][H] grids", np.array(doc["entropy"]).ndim == 2, "")
        check("rows: every real token of both texts", doc["entropy_rows"][0][0] > 0,
              str(doc["entropy_rows"][0][0]))


def page_parts(html):
    """The census page's meta and its view pages (html text each)."""
    meta = json.loads(re.search(r'<script type="application/json" id="meta">(.*?)</script>',
                                html, re.S).group(1))
    pages = {int(k): base64.b64decode(v).decode("utf-8") for k, v in
             re.findall(r'<script type="application/octet-stream" id="page(\d+)">(.*?)</script>',
                        html, re.S)}
    return meta, [pages[k] for k in sorted(pages)]


def view_panel(page, k):
    """A view page's title, panel titles and panel k's exact float32 weights [rows, cols]."""
    meta = json.loads(re.search(r'<script type="application/json" id="meta">(.*?)</script>',
                                page, re.S).group(1))
    data = zlib.decompress(base64.b64decode(
        re.search(r'id="p%d">(.*?)</script>' % k, page, re.S).group(1)))
    n = meta["rows"] * meta["cols"]
    skip = n * (2 if meta["hasState"] else 1)
    assert meta["exact"], "the view holds exact weights at this size"
    w = np.frombuffer(data[skip:skip + 4 * n], dtype="<f4").reshape(meta["rows"], meta["cols"])
    return meta, w


@test("--html: the grid is the census; each head's view is its best text's weights")
def _html():
    folder, *_ = build("opt")
    texts = TEXTS + [[5, 5, 5, 5, 6, 7, 5]]
    page = path("census.html")
    expect(["census", folder, corpus("h.jsonl", texts), "--output", path("h.json"),
            "--html", page])
    doc = json.load(open(path("h.json")))
    meta, pages = page_parts(open(page, encoding="utf-8").read())
    check("layers x heads", (meta["layers"], meta["heads"]) == (NL, H), str(meta["layers"]))
    check("statistics in census order", meta["stats"] == list(NAMES), str(meta["stats"]))
    check("opens on previous_token without probes", meta["defaultStat"] == "previous_token", "")
    for s, k in enumerate(NAMES):
        got = np.array([np.nan if v is None else v for v in meta["means"][s]])
        check("grid %s = the census's" % k,
              np.allclose(got, np.array(doc[k], dtype=float).ravel(), equal_nan=True), "")
    check("sink flags", meta["sink"] == [int(v) for v in np.ravel(doc["sink"])], "")
    # Each text's per-head means from the float64 forward: the best text is the argmax.
    per_text = []
    for ids in texts:
        ws = np.array(ARCHS["opt"](Model(7), ids=ids)[1])
        per_text.append((ws, [row_values(ws[layer], ids) for layer in range(NL)]))
    for s, k in enumerate(NAMES):
        for x, ref in enumerate(meta["best"][s]):
            layer, h = divmod(x, H)
            means = [np.mean(v[layer][k][h]) if v[layer][k][h] else np.nan for _, v in per_text]
            if all(np.isnan(means)):
                check("%s L%d H%d: no view without rows" % (k, layer, h), ref is None, str(ref))
                continue
            if ref is None:
                check("%s L%d H%d has a view" % (k, layer, h), False, "none")
                continue
            p, panel, value = ref
            line = int(meta["pageTitles"][p].rsplit("line ", 1)[1])
            check("%s L%d H%d: the best text (line %d)" % (k, layer, h, line),
                  abs(means[line - 1] - np.nanmax(means)) < 1e-5 and
                  abs(value - means[line - 1]) < 1e-5, "%s %s" % (means, value))
            vmeta, w = view_panel(pages[p], panel)
            check("%s L%d H%d: panel title" % (k, layer, h),
                  vmeta["panels"][panel] == "layer %d · head %d" % (layer, h),
                  vmeta["panels"][panel])
            want = per_text[line - 1][0][layer][h]
            check("%s L%d H%d: the panel's weights = the forward's" % (k, layer, h),
                  w.shape == want.shape and np.allclose(w, want, atol=2e-6),
                  str(np.abs(w - want).max() if w.shape == want.shape else w.shape))
    expect(["census", folder, corpus("h.jsonl", texts), "--html", path("c.htm")], code=2,
           err=r"--html .*c\.htm: expected an \.html file")


@test("bad lines, files and merges: one line, exit 2, nothing written")
def _bad():
    folder, *_ = build("opt")
    out = path("never.npz")
    expect(["census", folder, write("bad1.jsonl", '{"text": "a"}\n{"tokens": [1]}\n'),
            "--output", out], code=2,
           err=r"bad1\.jsonl: line 2: expected \{\"text\": STRING\} or \{\"token_ids\"")
    expect(["census", folder, write("bad2.jsonl", '{"token_ids": [1, 2]}\n\n'
                                                  '{"token_ids": [3, 99]}\n'),
            "--output", out], code=2, err=r"bad2\.jsonl: line 3: .*outside the vocabulary")
    expect(["census", folder, corpus("ok.jsonl", TEXTS), "--output", path("c.txt")], code=2,
           err=r"--output .*c\.txt: expected a \.json, \.csv or \.npz file")
    expect(["census", folder, "--probe", "induction:5"], code=2,
           err=r"--probe: expected induction:N:R")
    check("nothing written", not os.path.exists(out), "")
    # A census of another shape: the same file cut to its first layer.
    expect(["census", folder, corpus("ok.jsonl", TEXTS), "--output", path("p.npz")])
    z = dict(np.load(path("p.npz")))
    np.savez(path("q.npz"), **{k: (v[:1] if v.ndim == 2 else v) for k, v in z.items()})
    expect(["census", "merge", path("p.npz"), path("q.npz"), "-o", out], code=2,
           err=r"q\.npz: expected a census of 2 layers and 4 heads, got 1 layers and 4 heads")
    check("nothing written by the merge", not os.path.exists(out), "")


main()

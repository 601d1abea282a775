#!/usr/bin/env python3
"""Whole-model runs beyond the forward's numbers: the memory estimate refuses a run that
cannot fit before anything is read; --no-weights with lse/entropy/top_k holds no L×L matrix
(peak RSS measured); `attn batch` lines naming a model folder run as `attn compute` does.

/usr/bin/python3 tests/cli/model_run_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import re
import subprocess

import numpy as np

from forward_oracle import H, IDS, NL, V, build
from harness import ATTN, ROOT, SANITIZED, TMP, check, expect, main, path, run, test


def peak_rss_kib(args):
    """Runs attn ARGS; returns (exit code, stderr, peak RSS in KiB from wait4's rusage)."""
    p = subprocess.Popen([ATTN] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         cwd=TMP)
    err = p.stderr.read().decode()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, err, usage.ru_maxrss


def long_ids(n):
    ids = np.random.default_rng(5).integers(0, V, n).tolist()
    name = path("ids%d.json" % n)
    with open(name, "w") as f:
        json.dump(ids, f)
    return name


@test("--progress: one line per layer on stderr off a terminal, none without it or with -q")
def _progress():
    folder, *_ = build("llama")
    ids = long_ids(16)
    base = ["compute", "--params", folder, "--token-ids", ids, "--no-weights",
            "--output", path("p.npz")]
    _, _, err = run(base + ["--progress"])
    lines = [l for l in err.splitlines() if l.startswith("attn: layer ")]
    check("one line per layer, in order",
          [l.split(",")[0] for l in lines] == ["attn: layer %d of %d" % (i + 1, NL)
                                               for i in range(NL)], err)
    check("tokens counted", all(", 16 tokens" in l for l in lines), err)
    for extra in ([], ["--progress", "--quiet"]):
        _, _, err = run(base + extra)
        check("nothing with %s" % (extra or "stderr off a terminal"), "layer" not in err, err)


@test("--weights-dtype f16: every layer's weights as numpy rounds the float32 ones")
def _f16_stack():
    folder, *_ = build("llama")
    ids = long_ids(40)
    base = ["compute", "--params", folder, "--token-ids", ids, "--output", path("o.npy")]
    expect(base + ["--weights", path("w32.npy")])
    expect(base + ["--weights", path("w16.npy"), "--weights-dtype", "f16"])
    a, b = np.load(path("w32.npy")), np.load(path("w16.npy"))
    check("float16 [layers, H, L, L]", b.dtype == np.float16 and b.shape == a.shape,
          "%s %s" % (b.dtype, b.shape))
    check("bit-exact astype(float16)",
          np.array_equal(a.astype(np.float16).view(np.uint16), b.view(np.uint16)), "")
    check("half the bytes",
          os.path.getsize(path("w16.npy")) - 128 == (os.path.getsize(path("w32.npy")) - 128) // 2,
          "")


@test("weights_dtype: the problem document's field writes what --weights-dtype writes")
def _f16_field():
    folder, *_ = build("llama")
    ids_file = long_ids(24)
    with open(ids_file) as f:
        ids = json.load(f)
    doc = path("f16.json")
    with open(doc, "w") as f:
        json.dump({"params": folder, "token_ids": ids, "weights_dtype": "f16"}, f)
    expect(["compute", doc, "--output", path("o.npy"), "--weights", path("field16.npy")])
    expect(["compute", "--params", folder, "--token-ids", ids_file, "--output",
            path("o.npy"), "--weights", path("flag32.npy")])
    a, b = np.load(path("flag32.npy")), np.load(path("field16.npy"))
    check("the field gives float16, bit-exact astype(float16)",
          b.dtype == np.float16 and
          np.array_equal(a.astype(np.float16).view(np.uint16), b.view(np.uint16)), str(b.dtype))
    # The flag writes the field: it wins over the document's.
    expect(["compute", doc, "--weights-dtype", "f32", "--output", path("o.npy"), "--weights",
            path("flag_wins.npy")])
    check("--weights-dtype f32 over the field's f16", np.load(path("flag_wins.npy")).dtype ==
          np.float32, "")
    expect(["compute", doc], code=2,
           err=r"--weights-dtype f16: the weights are written as float16 .* as JSON text")
    with open(doc, "w") as f:
        json.dump({"params": folder, "token_ids": ids, "weights_dtype": "bf16"}, f)
    expect(["compute", doc, "--output", path("never.npz")], code=2,
           err=r'--weights-dtype: expected "f32" or "f16", got "bf16"')
    line = json.dumps({"id": 7, "params": folder, "token_ids": ids, "weights_dtype": "f16"})
    out = expect(["batch"], stdin=(line + "\n").encode(), code=1)
    got = json.loads(out.decode().splitlines()[0])
    check("a batch line asking for f16 weights is an error line, not float32 text",
          got.get("id") == 7 and re.search(r"weights[-_]dtype f16", got.get("error", "")),
          str(got)[:300])


@test("max-memory refuses a model run before reading it, naming what fits")
def _refused():
    folder, *_ = build("llama")
    ids = long_ids(1024)
    # Weights: 2 layers x 4 heads x 1024 x 1024 values, far more than 8 MiB.
    expect(["compute", "--params", folder, "--token-ids", ids, "--max-memory", "8M",
            "--output", path("never.npz")],
           code=2, err=r"--max-memory: this model run needs about .* results of 2 layers .*"
                       r"more than the limit of 8\.0 MiB")
    check("nothing written", not os.path.exists(path("never.npz")), "")
    expect(["compute", "--params", folder, "--token-ids", ids, "--max-memory", "24M",
            "--output", path("never.npz")],
           code=2, err=r"without weights \(--no-weights\) it needs .*, which fits")


@test("no-weights with lse, entropy and top_k holds no L x L matrix")
def _streaming():
    folder, *_ = build("llama")
    n = 2048
    one_layer = H * n * n * 4  # bytes of one layer's float32 weights: 64 MiB
    args = ["compute", "--params", folder, "--token-ids", long_ids(n), "--no-weights",
            "--return", "lse,entropy,top_k", "--top-k", "3", "--output", path("diag.npz")]
    # A limit that one layer's L x L weights alone exceed.
    code, err, rss = peak_rss_kib(args + ["--max-memory", "32M"])
    check("runs under a limit below one L x L matrix", code == 0, err)
    if code != 0:
        return
    z = np.load(path("diag.npz"))
    check("members", sorted(z.files) == ["entropy", "layers", "lse", "output", "token_ids",
                                         "top_k_indices", "top_k_values"], str(z.files))
    check("lse [layers, H, L]", z["lse"].shape == (NL, H, n), str(z["lse"].shape))
    check("top_k [layers, H, L, 3]", z["top_k_indices"].shape == (NL, H, n, 3),
          str(z["top_k_indices"].shape))
    if SANITIZED:
        print("skip: peak RSS bound (ASan build)")
        return
    _, _, base = peak_rss_kib(args[:4] + [long_ids(64)] + args[5:])
    check("peak RSS grows by less than half an L x L matrix over L = 64",
          (rss - base) * 1024 < one_layer // 2, "peak %d KiB, at L = 64 %d KiB" % (rss, base))


@test("batch lines naming a model folder run the forward pass")
def _batch():
    folder, ws, hs, _, _ = build("gpt2")
    lines = [
        {"id": "a", "params": folder, "token_ids": IDS, "precision": "f64",
         "return": ["hidden_states"]},
        {"id": "b", "params": folder, "token_ids": path("ids.json"), "layers": [1],
         "precision": "f64"},
        {"id": "c", "params": folder, "token_ids": [[3, 99]]},
        {"id": "d", "params": os.path.join(ROOT, "samples", "tiny-gpt2"), "text": "the cat",
         "layers": [3]},
    ]
    code, out, err = run(["batch"], stdin="\n".join(json.dumps(x) for x in lines).encode())
    check("exit 1 (one bad line)", code == 1, err)
    got = [json.loads(x) for x in out.decode().splitlines()]
    check("four lines in order", [g.get("id") for g in got] == ["a", "b", "c", "d"], out[:300])
    if len(got) != 4:
        return
    a, b, c, d = got
    check("line a: every layer's weights", np.allclose(np.array(a["weights"], float), ws,
                                                        atol=1e-10), "")
    check("line a: hidden_states", np.allclose(np.array(a["hidden_states"], float), hs,
                                               atol=1e-10), "")
    check("line a: layers echoed", a.get("layers") == list(range(NL)), str(a.get("layers")))
    check("line b: layer 1 only", np.allclose(np.array(b["weights"], float), ws[1:],
                                              atol=1e-10) and b.get("layers") == [1], "")
    check("line c: the bad id is its error", "outside the vocabulary" in c.get("error", ""),
          str(c))
    check("line d: text tokenized by the folder's tokenizer",
          d.get("tokens") == ["the", "Ġcat"] and np.array(d["weights"]).shape == (1, 4, 2, 2),
          str({k: v for k, v in d.items() if k != "output"})[:300])


def page_panels(name):
    """A short page's meta and each panel's (colour index, state, float32) planes."""
    import base64
    import zlib
    text = open(path(name), encoding="utf-8").read()
    meta = json.loads(re.search(r'<script type="application/json" id="meta">(.*?)</script>',
                                text, re.S).group(1))
    n = meta["rows"] * meta["cols"]
    panels = []
    for p in range(len(meta["panels"])):
        data = re.search(r'<script type="application/octet-stream" id="p%d">([^<]*)</script>' % p,
                         text).group(1)
        raw = zlib.decompress(base64.b64decode(data))
        at = 2 * n if meta["hasState"] else n
        panels.append((raw[:n], raw[n:at] if meta["hasState"] else None,
                       np.frombuffer(raw[at:at + 4 * n], dtype="<f4")))
    return meta, panels


@test("model view from a file: [layers, H, L, L] .npy (--axes) and the run's .npz, same page")
def _model_view_file():
    folder, *_ = build("gpt2")
    run_args = ["compute", "--params", folder, "--token-ids", path("ids.json")]
    expect(run_args + ["--heatmap", path("run.html"), "--weights", path("w4.npy"),
                       "--output", path("o.npy")])
    expect(run_args + ["--output", path("run.npz")])
    w = np.load(path("w4.npy"))
    check("the run's weights are [layers, H, L, L]", w.shape == (NL, H, len(IDS), len(IDS)),
          w.shape)
    z = np.load(path("run.npz"))
    check("the run's .npz says its layers (int64)", "layers" in z.files and
          z["layers"].dtype == np.int64 and z["layers"].tolist() == list(range(NL)), z.files)
    # A file says nothing of a mask: --masked-zero hatches the zeros the decoder's mask left.
    expect(["heatmap", path("w4.npy"), "--axes", "layers,heads", "-o", path("file.html"),
            "--masked-zero"])
    expect(["heatmap", path("run.npz"), "-o", path("npz.html"), "--masked-zero"])
    ref_meta, ref = page_panels("run.html")
    want = ["layer %d \u00b7 head %d" % (l, h) for l in range(NL) for h in range(H)]
    check("the run's page: the model view", ref_meta["panels"] == want and
          ref_meta["gridCols"] == H, (ref_meta["panels"], ref_meta["gridCols"]))
    # GPT-2 is a decoder: the run's own page hatches the keys after each query (state 1),
    # as a single causal compute's page does.
    n = len(IDS)
    causal = np.triu(np.ones((n, n), np.uint8), 1).tobytes()
    check("the run's page hatches the decoder's masked cells", ref_meta["hasState"] and
          all(r[1] == causal for r in ref), ref_meta["hasState"])
    for name in ("file.html", "npz.html"):
        meta, got = page_panels(name)
        check(name + ": same panels, grid and size as the run's",
              [meta[k] for k in ("panels", "gridCols", "rows", "cols", "vmin", "vmax")] ==
              [ref_meta[k] for k in ("panels", "gridCols", "rows", "cols", "vmin", "vmax")],
              {k: meta[k] for k in ("panels", "gridCols", "vmin", "vmax")})
        check(name + ": title counts layers and heads",
              meta["title"].endswith("model view: %d layers \u00d7 %d heads" % (NL, H)),
              meta["title"])
        same = len(got) == len(ref) and all(
            g[0] == r[0] and g[1] == r[1] and np.array_equal(g[2], r[2])
            for g, r in zip(got, ref))
        check(name + ": every panel's colours, states and exact values are the run's", same,
              "")
        check(name + ": the values are the weights file's", all(
            np.array_equal(g[2], w[k // H, k % H].ravel()) for k, g in enumerate(got)), "")


@test("model view from a file: bad axes and shapes, one line, exit 2")
def _model_view_refused():
    np.save(path("w12.npy"), np.full((12, 12, 3, 3), 1 / 3, dtype=np.float32))
    expect(["heatmap", path("w12.npy"), "-o", path("x.html")], code=2,
           err=r"144 panels \(12 batches x 12 heads\) .*--axes layers,heads")
    expect(["heatmap", path("w12.npy"), "--axes", "layers,heads", "-o", path("w12.html")])
    for axes, err in (("layers", r"--axes: .*has shape \[12, 12, 3, 3\] \(rank 4\), the axes "
                                 r"named give rank 3"),
                      ("heads,layers", r"--axes heads,layers: \"layers\" repeated or out of order"),
                      ("layers,layers,heads", r"repeated or out of order"),
                      ("layers,head", r"--axes layers,head: unknown axis \"head\""),
                      ("batch,", r"--axes batch,: unknown axis \"\""),
                      ("layers,batch,heads", r"rank 5")):
        expect(["heatmap", path("w12.npy"), "--axes", axes, "-o", path("x.html")], code=2,
               err=err, name="--axes %r refused" % axes)
    np.savez(path("bad.npz"), weights=np.full((2, 3, 3), 1 / 3, dtype=np.float32),
             layers=np.array([0.5, 1.0]))
    expect(["heatmap", path("bad.npz"), "-o", path("x.html")], code=2,
           err=r"bad\.npz:layers: expected a list of layer numbers \(integers")
    np.savez(path("short.npz"), weights=np.full((2, 3, 3), 1 / 3, dtype=np.float32),
             layers=np.array([4]))
    expect(["heatmap", path("short.npz"), "-o", path("x.html")], code=2,
           err=r"1 layer numbers for 2 layers")
    np.savez(path("ok.npz"), weights=np.full((2, 3, 3), 1 / 3, dtype=np.float32),
             layers=np.array([4, 7]))
    expect(["heatmap", path("ok.npz"), "--axes", "heads", "-o", path("x.html")], code=2,
           err=r"--axes: .*ok\.npz says its first axis holds layers")
    expect(["heatmap", path("ok.npz"), "-o", path("ok.svg")])
    svg = open(path("ok.svg"), encoding="utf-8").read()
    check("an .npz's layers number the panels", ">layer 4<" in svg and ">layer 7<" in svg, "")
    x = not os.path.exists(path("x.html"))
    check("nothing written by a refused run", x, "")


main()

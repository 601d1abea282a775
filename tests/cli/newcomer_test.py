#!/usr/bin/env python3
"""A newcomer's first hour (#26): the wrong things a new user hit, one case each.

/usr/bin/python3 tests/cli/newcomer_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import re
import subprocess
import sys

import numpy as np

import harness
from harness import ROOT, check, expect, main, path, run, test, write

RNG = np.random.default_rng(26)
E, L = 8, 6
X = RNG.standard_normal((2, L, E)).astype(np.float32)
write("x.npy", X)


def warnings_of(stderr):
    return [ln for ln in stderr.splitlines() if ln.startswith("attn: warning: ")]


# --- 1. --params: PyTorch files refused with the hint; a .npz state dict accepted ---------

PICKLE_HINT = r"unknown params format \(expected \.json, \.npz or \.safetensors\); PyTorch " \
              r"files are pickles"


@test("params: a .pt or pytorch_model.bin is refused with the pickle hint")
def _():
    for name in ("model.pt", "pytorch_model.bin", "weights.pth"):
        write(name, "PK\x03\x04 a torch zip")
        expect(["compute", "-x", "x.npy", "--params", name], code=2,
               err=re.escape(name) + ": " + PICKLE_HINT, name="--params " + name)


def mha_state_dict():
    return {"in_proj_weight": (RNG.standard_normal((3 * E, E)) * 0.3).astype(np.float32),
            "in_proj_bias": (RNG.standard_normal(3 * E) * 0.1).astype(np.float32),
            "out_proj.weight": (RNG.standard_normal((E, E)) * 0.3).astype(np.float32),
            "out_proj.bias": (RNG.standard_normal(E) * 0.1).astype(np.float32)}


@test("params: an nn.MultiheadAttention state dict saved with np.savez")
def _():
    sd = mha_state_dict()
    np.savez(path("mha.npz"), **sd)
    write("mha.json", {k: v.tolist() for k, v in sd.items()})
    args = ["compute", "-x", "x.npy", "--heads", "2", "--output", "{}.npy"]
    rc, _, err = run(args[:-1] + ["json.npy", "--params", "mha.json"])
    rc2, _, err2 = run(args[:-1] + ["npz.npy", "--params", "mha.npz"])
    check("npz state dict: exit 0", rc == rc2 == 0, err + err2)
    if rc == rc2 == 0:
        a, b = np.load(path("json.npy")), np.load(path("npz.npy"))
        check("npz state dict: the output of the same weights in JSON", np.array_equal(a, b),
              f"max diff {np.abs(a - b).max()}")


@test("params: a Llama attention layer's state dict saved with np.savez")
def _():
    sd = {f"{p}_proj.weight": (RNG.standard_normal((E, E)) * 0.3).astype(np.float32)
          for p in "qkvo"}
    np.savez(path("llama.npz"), **sd)
    write("llama.safetensors", {"model.layers.0.self_attn." + k: v for k, v in sd.items()})
    args = ["compute", "-x", "x.npy", "--heads", "2", "--output"]
    rc, _, err = run(args + ["st.npy", "--params", "llama.safetensors", "--prefix",
                             "model.layers.0.self_attn."])
    rc2, _, err2 = run(args + ["npz.npy", "--params", "llama.npz"])
    check("llama npz: exit 0", rc == rc2 == 0, err + err2)
    if rc == rc2 == 0:
        a, b = np.load(path("st.npy")), np.load(path("npz.npy"))
        check("llama npz: the output of the same layer as .safetensors", np.array_equal(a, b),
              f"max diff {np.abs(a - b).max()}")
    np.savez(path("other.npz"), foo=np.zeros((E, E), np.float32))
    expect(["compute", "-x", "x.npy", "--params", "other.npz"], code=2,
           err=r"params: .*other\.npz: no attention weights among its arrays",
           name="npz of unknown names: refused")


# --- 2. the key_padding_mask polarity warning fires on inverted padding masks only --------

def polarity_warnings(mask):
    write("kpm.npy", mask)
    rc, _, err = run(["compute", "-x", "x.npy", "--key-padding", "kpm.npy"])
    check("kpm: exit 0", rc == 0, err)
    return [w for w in warnings_of(err) if "key_padding_mask" in w]


@test("polarity: random masks, even mostly blocked, are not warned about")
def _():
    rng = np.random.default_rng(3)
    for trial in range(20):
        mask = rng.random((2, L)) < rng.choice([0.2, 0.35, 0.5])
        mask[:, rng.integers(0, L)] = True  # every row keeps a key
        inverted = all(not r[0] and r[np.argmax(r):].all() for r in mask)
        if inverted:
            continue  # a random draw that happens to be an inverted padding mask
        got = polarity_warnings(mask)
        check(f"random mask {trial} {mask.astype(int).tolist()}: silent", got == [], got)
    # The hard ones: a long blocked prefix, then keys kept and blocked again (no padding).
    for rows in ([[0, 0, 0, 0, 1, 0], [0, 0, 0, 1, 0, 1]], [[0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 1, 0]]):
        got = polarity_warnings(np.array(rows, dtype=bool))
        check(f"mask {rows}: silent", got == [], got)


@test("polarity: right-padded keep masks with more padding than tokens are not warned")
def _():
    mask = np.zeros((2, L), dtype=bool)
    mask[0, :1] = True
    mask[1, :2] = True
    got = polarity_warnings(mask)
    check("right padding: silent", got == [], got)


@test("polarity: inverted padding masks are warned about")
def _():
    for real in ([5, 4], [4, 6], [6, 5]):
        torch_mask = np.arange(L)[None, :] >= np.array(real)[:, None]  # true = padding
        got = polarity_warnings(torch_mask)
        check(f"inverted padding of lengths {real}: one warning", len(got) == 1, got)


@test("README's batch example prints no warnings")
def _():
    gen = subprocess.run([sys.executable, os.path.join(ROOT, "bench/batch/make_problems.py"), "1000",
                          "/dev/stdout"], capture_output=True, check=True)
    rc, out, err = run(["batch", "--jobs", "2", "--no-weights"], stdin=gen.stdout,
                       timeout=300)
    check("batch example: exit 0", rc == 0, err[:300])
    check("batch example: stderr empty", err == "", err[:600])
    check("batch example: 1000 result lines", len(out.splitlines()) == 1000,
          str(len(out.splitlines())))



# --- 3. per-row diagnostics of rank-4 inputs keep H, as the weights do ---------------------

@test("rank-4 inputs with H = 1: lse, entropy, argmax and top_k keep H like the weights")
def _():
    for h in (1, 2):
        q = RNG.standard_normal((2, h, 3, 4)).astype(np.float32)
        write("q4.npy", q)
        out = expect(["compute", "-q", "q4.npy", "-k", "q4.npy", "-v", "q4.npy", "--return",
                      "lse,entropy,argmax", "--top-k", "2"], name=f"rank-4 H={h}")
        doc = json.loads(out)
        want = (2, h, 3)
        shapes = {k: np.array(doc[k]).shape for k in ("lse", "entropy", "argmax")}
        shapes["top_k.indices"] = np.array(doc["top_k"]["indices"]).shape
        shapes["weights"] = np.array(doc["weights"]).shape
        check(f"H={h}: weights {shapes['weights']}", shapes["weights"] == want + (3,), shapes)
        for k in ("lse", "entropy", "argmax"):
            check(f"H={h}: {k} shape", shapes[k] == want, shapes)
        check(f"H={h}: top_k shape", shapes["top_k.indices"] == want + (2,), shapes)



# --- 4. the terminal heatmap: every query labelled when each has its own line; blocked
# cells marked -----------------------------------------------------------------------------

TERM_ENV = {"COLUMNS": "80", "LINES": "24", "NO_COLOR": None, "COLORTERM": "truecolor"}


def causal_result(lq):
    x = RNG.standard_normal((lq, E)).astype(np.float32)
    write("xc.npy", x)
    out = expect(["compute", "-q", "xc.npy", "-k", "xc.npy", "-v", "xc.npy", "--causal"],
                 name=f"causal {lq}x{lq}")
    write("rc.json", out.decode())


@test("term heatmap --color never: every query labelled when each has its own line")
def _():
    causal_result(18)
    out = expect(["heatmap", "rc.json", "--term", "--color", "never"], env=TERM_ENV,
                 name="--color never").decode()
    lines = out.splitlines()
    check("no 'labels: 1 in N query tokens' note", "query tokens" not in out, out)
    labels = [ln.split()[0] for ln in lines if re.match(r"^ *\d+ ", ln)]
    check("query labels 0..17, one a line", labels[:18] == [str(i) for i in range(18)],
          "\n" + out)


@test("term heatmap: blocked cells are hatched, in colour too")
def _():
    causal_result(6)
    for color in ("never", "always"):
        out = expect(["heatmap", "rc.json", "--term", "--color", color], env=TERM_ENV,
                     name="--color " + color).decode()
        body = [ln for ln in out.splitlines() if "masked" not in ln]
        hatched = sum(ln.count("\u2571") for ln in body)
        # 6x6 causal: 15 blocked cells, each drawn at least once with the hatch
        check(f"--color {color}: blocked cells hatched ({hatched})", hatched >= 15, "\n" + out)


# --- 5. titles: the model view counts batches; compute heatmaps carry the problem's name -

def svg_texts(name):
    import xml.etree.ElementTree as ET
    root = ET.parse(path(name)).getroot()
    return [t.text or "" for t in root.iter() if t.tag.endswith("text")]


@test("compute --heatmap: titled by the problem's file name, else its id")
def _():
    x = RNG.standard_normal((3, E)).astype(np.float32)
    write("named_problem.json", {"query": x.tolist(), "key": x.tolist(), "value": x.tolist()})
    expect(["compute", "named_problem.json", "--heatmap", "named.svg", "--output", "o.npy"])
    check("title is the file name", "named_problem.json" in svg_texts("named.svg"),
          svg_texts("named.svg"))
    write("id_problem.json", {"id": "my layer", "query": x.tolist(), "key": x.tolist(),
                              "value": x.tolist()})
    expect(["compute", "id_problem.json", "--heatmap", "id.svg", "--output", "o.npy"])
    check("title is the id", "my layer" in svg_texts("id.svg"), svg_texts("id.svg"))


@test("model view title counts layers, batches and heads")
def _():
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    import reference
    n_layers, b, h = 3, 2, 2
    tensors = []
    for l in range(n_layers):
        for k in ("w_q", "w_k", "w_v", "w_o"):
            tensors.append((f"layers.{l}.attn.{k}", "F32",
                            (RNG.standard_normal((E, E)) / np.sqrt(E)).astype(np.float32)))
    reference.write_safetensors(path("mv.safetensors"), tensors)
    write("hs.npy", RNG.standard_normal((n_layers + 1, b, L, E)).astype(np.float32))
    expect(["compute", "--hidden-states", "hs.npy", "--params", "mv.safetensors", "--heads",
            str(h), "--heatmap", "mv.svg", "--output", "o.npy"])
    titles = [t for t in svg_texts("mv.svg") if "model view" in t]
    check("model view: 3 layers x 2 batches x 2 heads",
          titles == ["model view: 3 layers \u00d7 2 batches \u00d7 2 heads"], titles)


# --- 6. an array file where a problem is expected ------------------------------------------

@test("compute q.npy: an array where a problem is expected says so")
def _():
    write("q.npy", X[0])
    expect(["compute", "q.npy"], code=2,
           err=r"q\.npy: this is an array \(NPY\), not a problem; did you mean -q q\.npy")
    expect(["compute", "-"], stdin=open(path("q.npy"), "rb").read(), code=2,
           err=r"<stdin>: this is an array \(NPY\), not a problem; did you mean -q")
    np.savez(path("qkv.npz"), query=X[0])
    expect(["compute", "qkv.npz"], code=2, err=r"qkv\.npz: this is a zip archive")



# --- 7. documented commands that write --weights to a file also write --output -----------

def documented_commands():
    """Every `attn ...` command of the fenced blocks of README.md and docs/*.md (lines
    continued with a backslash joined), with the file it is in."""
    docs = [os.path.join(ROOT, "README.md")]
    folder = os.path.join(ROOT, "docs")
    docs += sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".md"))
    for doc in docs:
        text = open(doc, encoding="utf-8").read()
        for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"^\$ ", "", line.strip())
                if line.startswith("attn "):
                    yield os.path.relpath(doc, ROOT), line


@test("documented commands with --weights FILE also give --output")
def _():
    seen = 0
    for doc, cmd in documented_commands():
        m = re.search(r"--weights[ =](\S+)", cmd)
        if cmd.startswith("attn compute") and m and m.group(1) != "-":
            seen += 1
            check(f"{doc}: {cmd}", "--output" in cmd or " -o " in cmd,
                  "prints the whole output array on the terminal")
    check("the Hugging Face examples were found", seen >= 4, str(seen))



# --- 8. the HTML view: colorbar ticks as matplotlib places them; the query pane's hint ----

@test("HTML view: readable colorbar ticks and a hint before the first click")
def _():
    rng = np.random.default_rng(8)
    w = rng.random((6, 9)) ** 3
    w /= w.sum(axis=1, keepdims=True)
    w[0, 0] = 1.0
    write("w.npy", w.astype(np.float32))
    expect(["heatmap", "w.npy", "-o", "w.html"])
    page = open(path("w.html"), encoding="utf-8").read()
    meta = json.loads(re.search(r'<script type="application/json" id="meta">(.*?)</script>',
                                page, re.S).group(1))
    ticks = meta.get("ticks", [])
    labels = [label for _, label in ticks]
    check("ticks 0.2 .. 1.0 as matplotlib's", labels[-5:] == ["0.2", "0.4", "0.6", "0.8", "1.0"],
          labels)
    check("tick positions from the bottom, in order",
          all(0 <= t <= 1 for t, _ in ticks) and [t for t, _ in ticks] == sorted(t for t, _ in ticks),
          ticks)
    check("the query pane says what to do", "Click a query row" in page, "")


main()

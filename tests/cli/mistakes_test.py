#!/usr/bin/env python3
"""The likely mistakes of PyTorch / Hugging Face users: warned about (one stderr line,
--quiet silences it, the result never changes) or refused with the name of what is wrong.
Each warning fires on the mistake and stays silent on the correct call.

/usr/bin/python3 tests/cli/mistakes_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import re

import numpy as np

from harness import check, expect, main, run, test, write

RNG = np.random.default_rng(7)
E, L = 8, 6
X = RNG.standard_normal((2, L, E)).astype(np.float32)
write("x.npy", X)
MHA = {"in_proj_weight": (RNG.standard_normal((3 * E, E)) * 0.3).tolist(),
       "out_proj.weight": (RNG.standard_normal((E, E)) * 0.3).tolist()}
write("mha.json", MHA)


def warnings_of(stderr):
    return [ln for ln in stderr.splitlines() if ln.startswith("attn: warning: ")]


def both_ways(label, args, fires, pattern):
    """Runs args with and without --quiet: the warning (one line matching pattern) iff
    `fires`, nothing with --quiet, and the same stdout either way."""
    rc, out, err = run(args)
    check(f"{label}: exit 0", rc == 0, err)
    got = [w for w in warnings_of(err) if re.search(pattern, w)]
    check(f"{label}: warning {'fires' if fires else 'silent'}", len(got) == (1 if fires else 0),
          err)
    rc_q, out_q, err_q = run(args + ["--quiet"])
    check(f"{label} --quiet: no warning", rc_q == 0 and err_q.strip() == "", err_q)
    check(f"{label}: --quiet changes no result", out == out_q)


HEADS = r"num_heads: not given, so 1 head .* nn\.MultiheadAttention state dict, which does " \
        r"not carry the head count: give num_heads \(--heads H\)"


@test("heads left at 1 with an nn.MultiheadAttention state dict: warned")
def _():
    both_ways("mha, no --heads", ["compute", "--input", "x.npy", "--params", "mha.json"],
              True, HEADS)


@test("heads given with a state dict: silent")
def _():
    both_ways("mha --heads 2",
              ["compute", "--input", "x.npy", "--params", "mha.json", "--heads", "2"],
              False, "num_heads")
    both_ways("mha --heads 1 (said so)",
              ["compute", "--input", "x.npy", "--params", "mha.json", "--heads", "1"],
              False, "num_heads")


@test("heads at 1 with our own w_q names: silent")
def _():
    w = np.eye(E, dtype=np.float32).tolist()
    write("own.json", {"w_q": w, "w_k": w, "w_v": w})
    both_ways("own names", ["compute", "--input", "x.npy", "--params", "own.json"], False,
              "num_heads")


def llama(missing=None):
    t = {f"model.layers.0.self_attn.{p}_proj.weight": RNG.standard_normal((E, E)) * 0.3
         for p in "qkvo"}
    if missing:
        del t[f"model.layers.0.self_attn.{missing}_proj.weight"]
    return t


@test("heads left at 1 with a checkpoint layer: warned; --heads: silent")
def _():
    write("llama.safetensors", llama())
    args = ["compute", "--input", "x.npy", "--params", "llama.safetensors", "--prefix",
            "model.layers.0.self_attn."]
    both_ways("checkpoint, no --heads", args, True, r"num_heads: .* a checkpoint, which does")
    both_ways("checkpoint --heads 2", args + ["--heads", "2"], False, "num_heads")


KPM_TORCH = np.zeros((2, L), dtype=bool)  # torch polarity: True = padding
KPM_TORCH[0, 4:] = True
KPM_TORCH[1, 5:] = True
POLARITY = r"keeps only the last keys \(or none\) in 2 of 2 rows, like an inverted padding " \
           r"mask; true/1 means keep here; " \
           r"PyTorch's nn\.MultiheadAttention uses true = ignore: add --mask-convention " \
           r"torch-mha"


@test("torch-polarity key padding mask given as keep: warned")
def _():
    write("kpm_torch.npy", KPM_TORCH)
    both_ways("inverted --key-padding",
              ["compute", "--input", "x.npy", "--key-padding", "kpm_torch.npy"], True,
              "key_padding_mask: " + POLARITY)


@test("the same mask with --mask-convention torch-mha, or in keep polarity: silent")
def _():
    write("kpm_torch.npy", KPM_TORCH)
    write("kpm_keep.npy", ~KPM_TORCH)
    args = ["compute", "--input", "x.npy", "--key-padding"]
    both_ways("torch-mha", args + ["kpm_torch.npy", "--mask-convention", "torch-mha"], False,
              "keeps")
    both_ways("keep polarity", args + ["kpm_keep.npy"], False, "keeps")
    both_ways("keep, said so", args + ["kpm_torch.npy", "--mask-convention", "keep"], False,
              "keeps")
    rc, a, _ = run(args + ["kpm_torch.npy", "--mask-convention", "torch-mha"])
    rc2, b, _ = run(args + ["kpm_keep.npy"])
    check("torch-mha reads the inverted mask as the keep mask", rc == rc2 == 0 and a == b)


@test("padding-shaped --mask [B, 1, 1, Lk] inverted: warned; a causal-like pattern: silent")
def _():
    write("m4.npy", KPM_TORCH[:, None, None, :])
    both_ways("inverted [B,1,1,Lk] mask",
              ["compute", "--input", "x.npy", "--mask", "m4.npy"], True, "mask: " + POLARITY)
    # A local window written as an [Lq, Lk] mask blocks most keys on purpose.
    band = np.abs(np.arange(L)[:, None] - np.arange(L)[None, :]) <= 1
    write("band.npy", band)
    both_ways("band [Lq, Lk] mask", ["compute", "--input", "x.npy", "--mask", "band.npy"],
              False, "keeps")


W = (RNG.standard_normal((E, E)) * 0.3).astype(np.float32)


@test("params with w_q and w_v but no w_k: an error naming w_k")
def _():
    write("no_wk.json", {"w_q": W.tolist(), "w_v": W.tolist()})
    expect(["compute", "--input", "x.npy", "--params", "no_wk.json"], code=2,
           err=r"params\.w_k: missing \(params gives w_q, w_v; .*\"w_k\": null for the identity")
    write("no_q.json", {"k_proj_weight": W.tolist(), "v_proj_weight": W.tolist()})
    expect(["compute", "--input", "x.npy", "--params", "no_q.json"], code=2,
           err=r"params\.w_q: missing \(params gives w_k, w_v")


@test("\"w_k\": null is the identity")
def _():
    write("null_wk.json", {"w_q": W.tolist(), "w_k": None, "w_v": W.tolist()})
    write("eye_wk.json", {"w_q": W.tolist(), "w_k": np.eye(E).tolist(), "w_v": W.tolist()})
    rc, a, err = run(["compute", "--input", "x.npy", "--params", "null_wk.json"])
    rc2, b, err2 = run(["compute", "--input", "x.npy", "--params", "eye_wk.json"])
    check("both exit 0", rc == rc2 == 0, err + err2)
    if rc == rc2 == 0:
        ja, jb = json.loads(a), json.loads(b)
        check("same output as an identity w_k",
              np.allclose(ja["output"], jb["output"], rtol=1e-6, atol=1e-7))


@test("a checkpoint layer missing k_proj: an error naming the tensor")
def _():
    write("no_k.safetensors", llama(missing="k"))
    expect(["compute", "--input", "x.npy", "--params", "no_k.safetensors", "--prefix",
            "model.layers.0.self_attn.", "--heads", "2"], code=2,
           err=r"missing tensor .*model\.layers\.0\.self_attn\.k_proj\.weight")
    write("own_no_k.safetensors", {"w_q": W, "w_v": W})
    expect(["compute", "--input", "x.npy", "--params", "own_no_k.safetensors"], code=2,
           err=r"layout attn: missing tensor .*w_k")


@test("batch and explain show the warnings compute gives")
def _():
    bad = {"id": "a", "input": "x.npy", "params": "mha.json"}
    good = {"id": "b", "input": "x.npy", "params": "mha.json", "num_heads": 2}
    lines = "\n".join(json.dumps(d) for d in [good, bad, good, bad]) + "\n"
    rc, out, err = run(["batch", "-"], stdin=lines.encode())
    check("batch: exit 0", rc == 0, err)
    got = [w for w in warnings_of(err) if re.search(HEADS, w)]
    check("batch: one warning per line with the mistake, in line order, naming the line",
          [w.split(": ")[2] for w in got] == ["line 2", "line 4"], err)
    rc_q, out_q, err_q = run(["batch", "-", "--quiet"], stdin=lines.encode())
    check("batch --quiet: no warning, same results", rc_q == 0 and err_q.strip() == ""
          and out_q == out, err_q)
    many = "\n".join(json.dumps(dict(bad, id=i)) for i in range(25)) + "\n"
    rc, _, err = run(["batch", "-", "-j", "2"], stdin=many.encode())
    w = warnings_of(err)
    check("batch: at most 20 warnings, then how many more",
          rc == 0 and len([x for x in w if re.search(HEADS, x)]) == 20
          and any(re.search(r"5 more warning\(s\) not shown", x) for x in w), err)
    rc, out, err = run(["explain", "--input", "x.npy", "--params", "mha.json"])
    check("explain: the warning in its report", rc == 0 and re.search(
        r"^warnings +" + HEADS, out.decode(), re.M) is not None, out.decode())
    rc, out, err = run(["explain", "--input", "x.npy", "--params", "mha.json", "--heads", "2"])
    check("explain: no warnings row without the mistake", rc == 0 and b"warnings" not in out,
          out.decode())


@test("unknown problem fields get did-you-mean")
def _():
    doc = {"querry": [[1.0]], "key": [[1.0]], "value": [[1.0]]}
    expect(["compute", "-"], stdin=json.dumps(doc).encode(), code=2,
           err=r"problem: unknown field 'querry' \(did you mean 'query'\?\)")
    doc = {"query": [[1.0]], "key": [[1.0]], "value": [[1.0]], "key_padding_msk": [1]}
    expect(["compute", "-"], stdin=json.dumps(doc).encode(), code=2,
           err=r"unknown field 'key_padding_msk' \(did you mean 'key_padding_mask'\?\)")
    doc = {"input": "x.npy", "params": {"w_qq": W.tolist()}}
    expect(["compute", "-"], stdin=json.dumps(doc).encode(), code=2,
           err=r"params: unknown weight 'w_qq' \(did you mean 'w_q'\?\)")
    doc = {"input": "x.npy", "init": {"sead": 1}}
    expect(["compute", "-"], stdin=json.dumps(doc).encode(), code=2,
           err=r"init: unknown field 'sead' \(did you mean 'seed'\?\)")
    doc = {"query": [[1.0]], "key": [[1.0]], "value": [[1.0]], "zzzzzz": 1}
    expect(["compute", "-"], stdin=json.dumps(doc).encode(), code=2,
           err=r"problem: unknown field 'zzzzzz'$")


main()

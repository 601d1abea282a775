#!/usr/bin/env python3
"""A checkpoint given as its .safetensors file (#39), as many users type it: with a
config.json beside it, token ids and text run the whole model exactly as its folder does
(its tokenizer, --layers); without one, hub names of numbered layers (GPT-2's h.N.*, BERT's
bare embeddings.* / encoder.layer.N.*) put token ids through the first layer, as --prefix
at that layer does; what still cannot be decided names the folder form.

/usr/bin/python3 tests/cli/model_file_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import shutil
import struct

import numpy as np

from harness import SAMPLES, check, expect, main, path, test, write

TINY = os.path.join(SAMPLES, "tiny-gpt2")
RNG = np.random.default_rng(39)


def read_safetensors(file):
    """name -> float32 array of a little F32 safetensors file."""
    with open(file, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], "<f4").reshape(t["shape"])
    return out


def same_json(name, a, b):
    ja, jb = json.loads(a), json.loads(b)
    check(name, ja == jb, f"{str(ja)[:200]} != {str(jb)[:200]}")


@test("--params FILE.safetensors --text: the folder's model and tokenizer")
def _():
    file = os.path.join(TINY, "model.safetensors")
    for extra in ([], ["--layers", "1,3"], ["--return", "hidden_states"]):
        want = expect(["compute", "--params", TINY, "--text", "the cat", *extra],
                      name=f"folder {extra}")
        got = expect(["compute", "--params", file, "--text", "the cat", *extra],
                     name=f"file {extra}")
        same_json(f"file = folder {extra}", got, want)


@test("--params FILE.safetensors --token-ids --layers: the folder's run")
def _():
    write("ids.json", [[5, 17, 9, 200], [1, 2, 3, 4]])
    file = os.path.join(TINY, "model.safetensors")
    want = expect(["compute", "--params", TINY, "--token-ids", "ids.json", "--layers", "0"],
                  name="folder")
    got = expect(["compute", "--params", file, "--token-ids", "ids.json", "--layers", "0"],
                 name="file")
    same_json("file = folder", got, want)
    text = expect(["explain", "--params", file, "--token-ids", "ids.json"],
                  name="explain").decode()
    check("explain: the whole model", "every layer" in text, text[:400])


def hub_gpt2():
    """TMP/hub/gpt2.safetensors: tiny-gpt2 with the hub's names (no "transformer."), no
    config beside it."""
    os.makedirs(path("hub"), exist_ok=True)
    t = read_safetensors(os.path.join(TINY, "model.safetensors"))
    write("hub/gpt2.safetensors", {k.removeprefix("transformer."): v for k, v in t.items()})
    return "hub/gpt2.safetensors"


def weights(args, name):
    """The weights file of a run (None when it failed)."""
    if os.path.exists(path("w.npy")):
        os.unlink(path("w.npy"))
    expect(["compute", *args, "--weights", "w.npy", "-o", "o.npy"], name=name)
    return np.load(path("w.npy")) if os.path.exists(path("w.npy")) else None


@test("no config: GPT-2 hub names put token ids through the first layer")
def _():
    f = hub_gpt2()
    write("ids1.json", [5, 17, 9, 200, 3])
    auto = weights(["--params", f, "--token-ids", "ids1.json"], "gpt2 auto")
    given = weights(["--params", f, "--prefix", "h.0.attn.", "--token-ids", "ids1.json"],
                    "gpt2 --prefix h.0.attn.")
    check("same as --prefix h.0.attn.", auto is not None and np.array_equal(auto, given),
          f"{auto} {given}")


@test("no config: BERT's bare names put token ids through the first layer")
def _():
    e, v, p = 8, 20, 16
    t = {"embeddings.word_embeddings.weight": RNG.standard_normal((v, e)),
         "embeddings.position_embeddings.weight": RNG.standard_normal((p, e)),
         "embeddings.token_type_embeddings.weight": RNG.standard_normal((2, e)),
         "embeddings.LayerNorm.weight": 1 + RNG.standard_normal(e) / 10,
         "embeddings.LayerNorm.bias": RNG.standard_normal(e) / 10}
    for n in range(2):
        a = f"encoder.layer.{n}.attention."
        for w in ("self.query", "self.key", "self.value", "output.dense"):
            t[a + w + ".weight"] = RNG.standard_normal((e, e)) / 3
            t[a + w + ".bias"] = RNG.standard_normal(e) / 3
    write("bert.safetensors", {k: x.astype(np.float32) for k, x in t.items()})
    write("ids2.json", [1, 7, 3, 19])
    auto = weights(["--params", "bert.safetensors", "--token-ids", "ids2.json"], "bert auto")
    given = weights(["--params", "bert.safetensors", "--prefix", "encoder.layer.0.attention.",
                     "--token-ids", "ids2.json"], "bert --prefix")
    check("same as --prefix encoder.layer.0.attention.",
          auto is not None and np.array_equal(auto, given), f"{auto} {given}")


@test("no config: what cannot be decided names the folder form")
def _():
    f = hub_gpt2()
    write("ids3.json", [5, 17, 9])
    expect(["compute", "--params", f, "--token-ids", "ids3.json", "--layers", "0"], code=2,
           err=r"layers: selects layers of a whole model \(params: its folder, or a "
               r"\.safetensors file with config\.json beside it")
    write("hs.npy", RNG.standard_normal((3, 32)).astype(np.float32))
    expect(["compute", "--params", f, "-x", "hs.npy"], code=2,
           err=r"set \"prefix\" \(and \"layout\" if several fit\) for one layer, or give the "
               r"model's folder with its config\.json")


@test("a file with config.json beside it and --prefix stays one layer")
def _():
    d = path("tiny")
    shutil.copytree(TINY, d, dirs_exist_ok=True)
    write("ids4.json", [5, 17, 9])
    w = weights(["--params", "tiny/model.safetensors", "--prefix", "transformer.h.1.attn.",
                 "--token-ids", "ids4.json"], "one layer")
    check("one layer's weights [H, L, L]", w is not None and w.shape == (4, 3, 3),
          str(None if w is None else w.shape))


if __name__ == "__main__":
    main()

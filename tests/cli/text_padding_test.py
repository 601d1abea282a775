#!/usr/bin/env python3
"""A list of texts is padded as Hugging Face pads it (#39): `tokenizer(texts,
padding=True)` right-pads with the tokenizer's pad token, and a model without one (GPT-2) is
padded with EOS, as its users set `tokenizer.pad_token = tokenizer.eos_token`. attn takes
config.json's pad_token_id, else the tokenizer's pad token, else config.json's
eos_token_id, else 0; the padded rows' ids (and so their hidden states) are those.

/usr/bin/python3 tests/cli/text_padding_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import shutil

import numpy as np

from harness import ROOT, SAMPLES, check, expect, main, path, test

TINY = os.path.join(SAMPLES, "tiny-gpt2")
TEXTS = ["the cat sat on the mat", "a cat"]


def folder(name, config_edit=None, pad_token=None):
    """TMP/name: tiny-gpt2 with its config.json edited and, with pad_token, its one added
    token (id 272) renamed to it."""
    d = path(name)
    shutil.copytree(TINY, d, dirs_exist_ok=True)
    if config_edit:
        with open(os.path.join(d, "config.json")) as f:
            config = json.load(f)
        config_edit(config)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config, f)
    if pad_token:
        file = os.path.join(d, "tokenizer.json")
        with open(file, encoding="utf-8") as f:
            doc = json.load(f)
        doc["added_tokens"][0]["content"] = pad_token
        with open(file, "w", encoding="utf-8") as f:
            json.dump(doc, f)
    return d


def padded_ids(d, texts=TEXTS):
    """The token ids a two-text run pads (from its .npz), and attn tokenize's own ids."""
    out = path(os.path.basename(d) + ".npz")
    args = ["compute", "--params", d, "--return", "hidden_states", "-o", out]
    for t in texts:
        args += ["--text", t]
    expect(args, name=f"compute {d}")
    ids = np.load(out)["token_ids"]
    alone = [json.loads(expect(["tokenize", d, "--text", t], name=f"tokenize {t}"))["token_ids"]
             for t in texts]
    return ids, alone


def expect_pad(name, d, pad, texts=TEXTS):
    ids, alone = padded_ids(d, texts)
    length = max(len(a) for a in alone)
    want = [a + [pad] * (length - len(a)) for a in alone]
    check(f"{name}: rows padded with {pad}", ids.tolist() == want, f"{ids.tolist()} vs {want}")


@test("GPT-2 (no pad token): padded with EOS, config.json eos_token_id")
def _():
    expect_pad("gpt2", TINY, 272)


@test("config.json pad_token_id comes first")
def _():
    d = folder("pad-config", lambda c: c.update(pad_token_id=7))
    expect_pad("pad_token_id", d, 7)


@test("the tokenizer's pad token before EOS")
def _():
    d = folder("pad-token", lambda c: c.update(eos_token_id=9), pad_token="<pad>")
    expect_pad("<pad>", d, 272)


@test("neither pad nor EOS: 0")
def _():
    d = folder("pad-none", lambda c: c.pop("eos_token_id"), pad_token="<|x|>")
    expect_pad("none", d, 0)


@test("a GGUF: tokenizer.ggml.padding_token_id, else tokenizer.ggml.eos_token_id")
def _():
    # llama_vocab.gguf (gguf_vocab_fixtures.py): eos_token_id 2, no padding_token_id.
    gguf = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf", "vocab", "llama_vocab.gguf")
    expect_pad("GGUF EOS", gguf, 2, ["a b ab ba", "ba a"])


@test("a padded row's hidden states: those of its ids padded with EOS, under the padding")
def _():
    ids, alone = padded_ids(TINY)
    hs_text = np.load(path("tiny-gpt2.npz"))["hidden_states"]
    with open(path("ids.json"), "w") as f:
        json.dump(ids.tolist(), f)
    keep = (np.arange(ids.shape[1])[None, :] < np.array([len(a) for a in alone])[:, None])
    np.save(path("keep.npy"), keep)
    expect(["compute", "--params", TINY, "--token-ids", "ids.json", "--key-padding", "keep.npy",
            "--return", "hidden_states", "-o", path("ids.npz")], name="token ids")
    hs_ids = np.load(path("ids.npz"))["hidden_states"]
    check("same hidden states", np.array_equal(hs_text, hs_ids), "")


if __name__ == "__main__":
    main()

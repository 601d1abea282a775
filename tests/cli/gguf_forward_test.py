#!/usr/bin/env python3
"""Whole models from GGUF files (--params model.gguf --token-ids): the tiny llama, qwen2,
gemma, phi3 and gpt2 models and issue #36's twelve architectures that llama.cpp's own
converter wrote
(tests/unit/fixtures/gguf/models/, gguf_model_fixtures.py) run the same forward pass as
the Hugging Face folders they were converted from (written here from the same tensors and
the config.json the converter was given): every layer's attention weights and the hidden
states agree (float32 tensors, so to the last bits; Gemma's norms went through w + 1).

/usr/bin/python3 tests/cli/gguf_forward_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import sys

import numpy as np

from harness import ROOT, check, expect, main, path, run, test

sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import reference as ref  # noqa: E402

MODELS = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf", "models")
IDS = [3, 1, 7, 0, 5, 2]


def hf_folder(kind):
    folder = path("hf-" + kind)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(MODELS, kind + "_config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    tensors = np.load(os.path.join(MODELS, kind + "_hf.npz"))
    ref.write_safetensors(os.path.join(folder, "model.safetensors"),
                          [(k, "F32", tensors[k]) for k in sorted(tensors.files)])
    return folder


def forward(params, precision):
    with open(path("ids.json"), "w") as f:
        json.dump(IDS, f)
    code, out, err = run(["compute", "--params", params, "--token-ids", path("ids.json"),
                          "--return", "hidden_states", "--precision", precision])
    check(f"{params} exit 0", code == 0, err)
    if code != 0:
        return None, None
    doc = json.loads(out)
    return (np.array(doc["weights"], dtype=np.float64),
            np.array(doc["hidden_states"], dtype=np.float64))


def compare(kind):
    folder = hf_folder(kind)
    gguf = os.path.join(MODELS, kind + ".gguf")
    for precision in ("f32", "f64"):
        w_hf, h_hf = forward(folder, precision)
        w_gg, h_gg = forward(gguf, precision)
        if w_hf is None or w_gg is None:
            return
        name = f"{kind} {precision}"
        check(name + " shapes", w_hf.shape == w_gg.shape and h_hf.shape == h_gg.shape,
              f"{w_hf.shape} {w_gg.shape} {h_hf.shape} {h_gg.shape}")
        # Float32 tensors: the same numbers, except Gemma's norms ((w + 1) - 1) and Llama 3's
        # RoPE (the GGUF's per-frequency divisors were rounded to float32 by the converter;
        # attn finds llama3 parameters giving them to 1e-5: angles within ~1e-5 relative).
        tol = (dict(rtol=1e-5, atol=1e-6) if kind.startswith("gemma") else
               dict(rtol=1e-4, atol=1e-5) if kind == "llama3" else dict(rtol=0, atol=0))
        check(name + " weights", np.allclose(w_gg, w_hf, **tol),
              "max err %g" % np.abs(w_gg - w_hf).max())
        check(name + " hidden states", np.allclose(h_gg, h_hf, **tol),
              "max err %g" % np.abs(h_gg - h_hf).max())


# Issue #36's: experts read per slice of the stacked ffn_*_exps (Mixtral's Q/K un-permuted
# too), BLOOM's q|k|v regrouped per head and Falcon 40B's per kv group, Gemma 2/3's scores from llama.cpp's scale rule and
# their windows, Gemma 3's local RoPE base, OLMo 2's and Qwen 3's q/k norms, phi2's partial RoPE.
MODERN = ("qwen3", "gemma2", "gemma3_text", "olmo2", "mixtral", "qwen2_moe", "phi",
          "starcoder2", "stablelm", "gpt_bigcode", "falcon", "falcon_grouped", "bloom")

for _kind in ("llama", "qwen2", "gemma", "phi3", "gpt2", "llama3") + MODERN:
    test("gguf forward " + _kind)(lambda k=_kind: compare(k))


@test("gguf: an architecture attn does not map is named")
def _():
    expect(["compute", "--params", os.path.join(ROOT, "tests", "unit", "fixtures", "gguf",
                                               "quants.gguf"), "--token-ids", "[1, 2]"],
           code=2, err="architecture 'quants' is not supported")


main()

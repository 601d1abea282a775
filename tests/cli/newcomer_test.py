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



main()

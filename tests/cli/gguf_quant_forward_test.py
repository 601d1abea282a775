#!/usr/bin/python3
"""Quantized GGUF models end to end: a tiny llama and a tiny qwen2 (hidden 256, 2 layers)
whose weight matrices hold every type attn dequantizes (F32, F16, BF16, Q8_0, Q4_0, Q4_1,
Q5_0, Q5_1, Q2_K..Q6_K; tests/unit/gguf_quant_model_fixtures.py: llama.cpp's converter,
gguf-py's and ggml's own quantizers) run from token ids and from text to every layer's
attention, against the Hugging Face folder of the float32 weights they were quantized from
(drawn again here from the fixture's seed) with the equivalent tokenizer.json.

The tolerance comes from the quantization error the fixture script measured with gguf-py's
dequantizer (T_error.json, relative RMS error per tensor). Errors of different matrices add
in quadrature: eps(layer n) = the root of the summed squares over the tensors that reach
layer n's scores (the embedding, Q and K up to n, the other matrices before n). Scores
s = q.k/sqrt(d) here have an RMS of about 1 (weights N(0, 1/256) on RMS-normed inputs), a
relative error eps moves them by about eps * |s|, and a softmax weight moves by at most half
its row's spread of score changes: the attention weights must agree within 2 * eps(n).
The hidden states (every matrix, Q2_K's 0.30 included) must agree within a relative RMS of
eps(all). Measured: weights 0.04-0.07 at layer 0 (bound 0.15), 0.11-0.17 at layer 1
(bound 0.43); hidden states 0.11-0.17 (bound 0.37).
The float32 GGUF (no quantization) of tests/cli/gguf_forward_test.py agrees to the bit.

    /usr/bin/python3 tests/cli/gguf_quant_forward_test.py PATH/TO/attn [--case NAME] | --list
"""
import json
import os
import re
import sys

import numpy as np

from harness import ROOT, check, main, path, run, test

sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
import reference as ref  # noqa: E402
from gguf_quant_model_fixtures import weights  # noqa: E402
from gguf_vocab_fixtures import tiny_tokenizer_json  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf", "quant_models")
IDS = [[1, 6, 3, 7, 4, 5, 2, 6], [1, 7, 7, 4, 0, 3, 5, 6]]
TEXT = "a b ab ba bb a"
SLOPE = 2.0  # attention weight change per unit of relative score error


def hf_folder(arch, info, matrices="F32"):
    """The fixture's float32 weights as a Hugging Face folder: its matrices `matrices`
    (BF16: truncated as the reference writer does), norms float32."""
    folder = path(f"hf-{matrices}-{arch}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(info["config"], f)
    t = weights(arch)
    ref.write_safetensors(os.path.join(folder, "model.safetensors"),
                          [(k, matrices if t[k].ndim == 2 else "F32", t[k]) for k in sorted(t)])
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tiny_tokenizer_json(), f)
    return folder


def matrices_before(layers):
    """The matrices whose products reach the scores of `layers` layers: every layer's q and
    k, and the layers before the last one's v, o and MLP."""
    names = []
    for n in range(layers):
        names += [f"model.layers.{n}.self_attn.{m}_proj.weight" for m in ("q", "k")]
    for n in range(layers - 1):
        names += [f"model.layers.{n}.{m}.weight" for m in
                  ("self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
                   "mlp.down_proj")]
    return names


def eps_of(info, layers):
    """The quantization error reaching the scores of `layers` layers and beyond."""
    names = ["model.embed_tokens.weight"] + matrices_before(layers)
    return float(np.sqrt(sum(info["tensors"][n]["relative_rms_error"] ** 2 for n in names)))


def forward(params, args):
    rc, so, se = run(["compute", "--params", params, "--return", "hidden_states"] + args)
    check(f"{os.path.basename(params)} {args[0]} exit 0", rc == 0, se)
    return json.loads(so) if rc == 0 else None


def compare(arch, label, args, info):
    folder = hf_folder(arch, info)
    hf = forward(folder, args)
    gg = forward(os.path.join(FIXTURES, arch + ".gguf"), args)
    if hf is None or gg is None:
        return
    w_hf = np.array(hf["weights"], dtype=np.float64)
    w_gg = np.array(gg["weights"], dtype=np.float64)
    check(f"{arch} {label}: shapes", w_hf.shape == w_gg.shape, f"{w_hf.shape} {w_gg.shape}")
    layers = w_hf.shape[0]
    for n in range(layers):
        eps = eps_of(info, n + 1)
        err = float(np.abs(w_hf[n] - w_gg[n]).max())
        check(f"{arch} {label}: layer {n} weights within {SLOPE} * eps = "
              f"{SLOPE * eps:.3f} (max |diff| {err:.4f})", err <= SLOPE * eps)
        # Not the same numbers: the quantization is visible.
        check(f"{arch} {label}: layer {n} weights differ from float32's", err > 1e-6)
    h_hf = np.array(hf["hidden_states"], dtype=np.float64)
    h_gg = np.array(gg["hidden_states"], dtype=np.float64)
    eps = float(np.sqrt(sum(t["relative_rms_error"] ** 2 for t in info["tensors"].values())))
    rel = float(np.sqrt(np.mean((h_hf - h_gg) ** 2) / np.mean(h_hf ** 2)))
    check(f"{arch} {label}: hidden states within relative eps = {eps:.3f} "
          f"(relative RMS {rel:.4f})", rel <= eps)
    if "key_tokens" in hf:
        check(f"{arch} {label}: the same tokens", hf["key_tokens"] == gg["key_tokens"],
              f"{hf['key_tokens']} != {gg['key_tokens']}")


def run_arch(arch):
    with open(os.path.join(FIXTURES, arch + "_error.json")) as f:
        info = json.load(f)
    types = {t["type"] for t in info["tensors"].values()}
    check(f"{arch}: every type in the file", len(types) == 13, sorted(types))
    with open(path("ids.json"), "w") as f:
        json.dump(IDS, f)
    compare(arch, "token ids", ["--token-ids", path("ids.json")], info)
    compare(arch, "text", ["--text", TEXT], info)


# --activations q8_0 (docs/compute.md): each 32-block x of a Q8_0 or Q4_0 matrix's input moves
# by at most d (1/2 + 2^-15 + 127 * 2^-11) = 0.5621 amax / 127 per element (q's rounding, and
# d's to binary16), so ||dx||_2 <= sqrt(32) * 0.5621 / 127 * amax <= 0.0251 ||x||_2: a relative
# error of at most Q8_EPS per rounded matrix, added in quadrature as above. Only Q8_0 and Q4_0
# matrices change, so a layer whose scores no such matrix reaches keeps the same bits.
# --activations q8 also rounds the inputs of Q4_K, Q5_K and Q6_K matrices to Q8_K: per
# 256-block each element moves by at most |d| (1/2 + 2^-15), |d| = amax / 127 up to float32's
# rounding, so ||dx||_2 <= sqrt(256) * (1/2 + 2^-15) / 127 * amax: Q8K_EPS per such matrix.
Q8_EPS = float(np.sqrt(32) * (0.5 + 2.0 ** -15 + 127 * 2.0 ** -11) / 127)
Q8K_EPS = float(np.sqrt(256) * (0.5 + 2.0 ** -15) / 127 * (1 + 2.0 ** -22))
ROUNDED = {"q8_0": {"Q8_0": Q8_EPS, "Q4_0": Q8_EPS},
           "q8": {"Q8_0": Q8_EPS, "Q4_0": Q8_EPS, "Q4_K": Q8K_EPS, "Q5_K": Q8K_EPS,
                  "Q6_K": Q8K_EPS}}


def rounding_eps(info, names, choice):
    """The relative error the rounded matrices among `names` add, in quadrature."""
    eps = ROUNDED[choice]
    return float(np.sqrt(sum(eps.get(info["tensors"][n]["type"], 0.0) ** 2 for n in names)))


def run_activations(arch, choice):
    with open(os.path.join(FIXTURES, arch + "_error.json")) as f:
        info = json.load(f)
    with open(path("ids.json"), "w") as f:
        json.dump(IDS, f)
    gguf = os.path.join(FIXTURES, arch + ".gguf")
    f32 = forward(gguf, ["--token-ids", path("ids.json")])
    q8 = forward(gguf, ["--token-ids", path("ids.json"), "--activations", choice])
    if f32 is None or q8 is None:
        return
    w32, w8 = (np.array(r["weights"], dtype=np.float64) for r in (f32, q8))
    for n in range(w32.shape[0]):
        eps = rounding_eps(info, matrices_before(n + 1), choice)
        err = float(np.abs(w32[n] - w8[n]).max())
        if eps == 0:
            check(f"{arch} {choice}: layer {n} weights the same bits (no rounded matrix before)",
                  err == 0.0, f"max |diff| {err}")
            continue
        bound = SLOPE * eps
        check(f"{arch} {choice}: layer {n} weights within {SLOPE} * {eps:.4f} = "
              f"{bound:.3f} of f32's (max |diff| {err:.5f})", err <= bound)
        check(f"{arch} {choice}: layer {n} weights differ from f32's", err > 0.0)
    eps = rounding_eps(info, [n for n in info["tensors"] if n.startswith("model.layers.")],
                       choice)
    h32, h8 = (np.array(r["hidden_states"], dtype=np.float64) for r in (f32, q8))
    rel = float(np.sqrt(np.mean((h32 - h8) ** 2) / np.mean(h32 ** 2)))
    check(f"{arch} {choice}: hidden states within relative {eps:.4f} "
          f"(relative RMS {rel:.5f})", 0.0 < rel <= eps)
    return q8


def run_q8(arch):
    """q8 against f32 (above), and against q8_0: the same bits up to the first layer whose
    scores a K-quant matrix reaches, different from there on."""
    with open(os.path.join(FIXTURES, arch + "_error.json")) as f:
        info = json.load(f)
    k8 = run_activations(arch, "q8")
    q8_0 = forward(os.path.join(FIXTURES, arch + ".gguf"),
                   ["--token-ids", path("ids.json"), "--activations", "q8_0"])
    if k8 is None or q8_0 is None:
        return
    wk, w0 = (np.array(r["weights"], dtype=np.float64) for r in (k8, q8_0))
    for n in range(wk.shape[0]):
        kquants = [m for m in matrices_before(n + 1)
                   if info["tensors"][m]["type"] in ("Q4_K", "Q5_K", "Q6_K")]
        same = bool(np.array_equal(wk[n], w0[n]))
        check(f"{arch} q8: layer {n} the same bits as q8_0's iff no K-quant matrix reaches it "
              f"({len(kquants)} do)", same == (not kquants))


def products_row(text):
    """explain's products row: ({type: matrices}, its second line)."""
    m = re.search(r"^products +the layers' matrices, multiplied as stored: (.*)\n +(.*)$", text,
                  re.M)
    if not m:
        return None, ""
    return {t: int(n) for n, t in (x.split(" ") for x in m.group(1).split(", "))}, m.group(2)


@test("--activations: explain lists the layers' stored types and what each choice rounds")
def activations_explained():
    with open(path("ids.json"), "w") as f:
        json.dump(IDS, f)
    gguf = os.path.join(FIXTURES, "llama.gguf")
    with open(os.path.join(FIXTURES, "llama_error.json")) as f:
        info = json.load(f)
    want = {}
    for name, t in info["tensors"].items():  # the layers' matrices: all but their norms
        if name.startswith("model.layers.") and not name.endswith("norm.weight"):
            want[t["type"]] = want.get(t["type"], 0) + 1
    to = {"Q8_0": "Q8_0", "Q4_0": "Q8_0", "Q4_K": "Q8_K", "Q5_K": "Q8_K", "Q6_K": "Q8_K",
          "BF16": "BF16"}
    rounds = dict(ROUNDED, bf16={"BF16": BF16_EPS})
    for choice in ("f32", "q8_0", "q8", "bf16"):
        rc, so, se = run(["explain", "--params", gguf, "--token-ids", path("ids.json"),
                          "--activations", choice])
        types, how = products_row(so.decode())
        check(f"explain ({choice}): the layers' matrices by stored type, as the file holds them",
              rc == 0 and types == want, f"{types} != {want}; {se}")
        rounded = sorted(t for t in want if t in rounds.get(choice, {}))
        if choice == "f32":
            listed = re.search(r"q8 would round the inputs of the (.*) ones", how)
            check("explain (f32): exact float32 inputs, and the types q8 would round",
                  how.startswith("--activations f32: float32 inputs (exact)") and listed and
                  sorted(listed.group(1).split(", ")) == sorted(ROUNDED["q8"].keys() & want),
                  how)
        else:
            listed = re.search(r"as llama.cpp rounds them \((.*)\)", how)
            got = sorted(listed.group(1).split(", ")) if listed else None
            check(f"explain ({choice}): each rounded type and what its inputs round to",
                  how.startswith(f"--activations {choice}: ") and
                  got == sorted(f"{t}'s to {to[t]}" for t in rounded), how)
    rc, so, se = run(["explain", "--params", os.path.join(ROOT, "tests", "unit", "fixtures",
                                                          "gguf", "models", "llama.gguf"),
                      "--token-ids", path("ids.json")])
    check("explain of float32 layers: exact, nothing to round",
          products_row(so.decode())[1] == "--activations f32: float32 inputs (exact)",
          so.decode()[-800:])


# --activations bf16 (docs/compute.md): each element of a BF16 matrix's input moves by at most
# 2^-8 of itself (to nearest in 8 significant bits), so ||dx||_2 <= 2^-8 ||x||_2: a relative
# error of at most BF16_EPS per rounded matrix, added in quadrature as above; the products'
# own float32 sums (exact BF16 products, one FMA each) add far less.
BF16_EPS = 2.0 ** -8


def run_bf16(arch):
    """A BF16 folder (every matrix BF16) with --activations bf16 against its f32 products."""
    with open(os.path.join(FIXTURES, arch + "_error.json")) as f:
        info = json.load(f)
    with open(path("ids.json"), "w") as f:
        json.dump(IDS, f)
    folder = hf_folder(arch, info, "BF16")
    f32 = forward(folder, ["--token-ids", path("ids.json")])
    b16 = forward(folder, ["--token-ids", path("ids.json"), "--activations", "bf16"])
    if f32 is None or b16 is None:
        return
    w32, wb = (np.array(r["weights"], dtype=np.float64) for r in (f32, b16))
    for n in range(w32.shape[0]):
        eps = BF16_EPS * np.sqrt(len(matrices_before(n + 1)))
        err = float(np.abs(w32[n] - wb[n]).max())
        check(f"{arch} bf16: layer {n} weights within {SLOPE} * {eps:.4f} of f32's "
              f"(max |diff| {err:.5f})", 0.0 < err <= SLOPE * eps)
    eps = BF16_EPS * np.sqrt(len(matrices_before(w32.shape[0] + 1)))
    h32, hb = (np.array(r["hidden_states"], dtype=np.float64) for r in (f32, b16))
    rel = float(np.sqrt(np.mean((h32 - hb) ** 2) / np.mean(h32 ** 2)))
    check(f"{arch} bf16: hidden states within relative {eps:.4f} (relative RMS {rel:.5f})",
          0.0 < rel <= eps)


@test("--activations bf16 bf17: exit 2, one line listing the choices")
def activations_bad_value():
    rc, so, se = run(["compute", "--params", os.path.join(FIXTURES, "llama.gguf"),
                      "--token-ids", "[1, 2]", "--activations", "bf17"])
    check("exit 2, one line naming f32, q8_0, q8 and bf16",
          rc == 2 and se.count("\n") == 1 and all(c in se for c in ("f32", "q8_0", "q8", "bf16"))
          and "bf17" in se, se)


@test("--activations q8_0 and q8: refused where they change nothing")
def activations_refused():
    with open(path("ids.json"), "w") as f:
        json.dump(IDS, f)
    gguf = os.path.join(FIXTURES, "llama.gguf")
    plain = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf", "models", "llama.gguf")
    for label, args, want in [
            ("a problem without model weights",
             ["compute", os.path.join(ROOT, "samples", "gqa.json")], "reads no quantized"),
            ("a layer stack (every layer's input given)",
             ["compute", "--hidden-states", os.path.join(ROOT, "samples", "layers",
                                                         "hidden_states.npy"),
              "--params", os.path.join(ROOT, "samples", "layers", "model.safetensors"),
              "--heads", "4", "--causal", "--no-weights"], "reads no quantized"),
            ("a model of float32 layers",
             ["compute", "--params", plain, "--token-ids", path("ids.json")], "have none"),
            ("precision f64",
             ["compute", "--params", gguf, "--token-ids", path("ids.json"), "--precision",
              "f64"], "precision f64")]:
        for choice in ("q8_0", "q8", "bf16"):
            rc, so, se = run(args + ["--activations", choice])
            check(f"--activations {choice} with {label}: exit 2, one line naming it",
                  rc == 2 and se.count("\n") == 1 and want in se and
                  f"--activations {choice}" in se, se)


for _arch in ("llama", "qwen2"):
    test(f"BF16 {_arch} folder: --activations bf16 within the rounding of f32's")(
        lambda a=_arch: run_bf16(a))
    test(f"quantized {_arch}: --activations q8_0 within the rounding of f32's")(
        lambda a=_arch: run_activations(a, "q8_0"))
    test(f"quantized {_arch}: --activations q8 within the rounding of f32's, q8_0's bits "
         "where no K-quant reaches")(lambda a=_arch: run_q8(a))

for _arch in ("llama", "qwen2"):
    test(f"quantized {_arch}: every type, from ids and text, vs the float32 folder")(
        lambda a=_arch: run_arch(a))

main()

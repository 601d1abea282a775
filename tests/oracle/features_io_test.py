#!/usr/bin/python3
"""Params from safetensors checkpoints and the mask conventions, against numpy float64.

    /usr/bin/python3 tests/oracle/features_io_test.py PATH/TO/attn

Writes small .safetensors files by hand (8-byte little-endian header length, JSON header,
raw little-endian data: F32, F16, BF16, F64) in each layout (attn, torch-mha, gpt2 Conv1D,
llama with GQA), runs `attn compute` on problems that name them, and compares with a
reference that applies each layout's own formula (Conv1D: x·W + b; nn.Linear: x·Wᵀ + b)
and then tests/oracle/reference.py's attention. The mask conventions (keep, torch-mha,
additive) are checked the same way, and the reader's defects must fail with exit 2 and a
one-line message. Prints one line per failure, ends with "N passed, M failed"; exits 1 on
any failure. Python stdlib + numpy only.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from leak_rule import leak_env  # noqa: E402  (which runs check for leaks)

EPS32 = 1.2e-7
RNG = np.random.default_rng(7)


# ============================================================================ safetensors

def bf16_round(a):
    """Values exactly representable in bfloat16 (truncate the low 16 bits of float32)."""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(np.float64)


def exact(a, dtype):
    """`a` rounded to what a tensor of `dtype` holds, as float64."""
    a = np.asarray(a, dtype=np.float64)
    if dtype == "F32":
        return a.astype(np.float32).astype(np.float64)
    if dtype == "F16":
        return a.astype(np.float16).astype(np.float64)
    if dtype == "BF16":
        return bf16_round(a)
    if dtype == "F64":
        return a
    raise ValueError(dtype)


# ============================================================================ references

def rn(*shape):
    return RNG.standard_normal(shape)


def attention(Q, K, V, H, Hkv=None, **extra):
    """reference.py's attention of projected rank-2/3 Q, K, V split into heads: returns the
    merged [.., Lq, H·Dv] output and the weights in the contract's shapes."""
    prob = {"query": Q, "key": K, "value": V, "num_heads": H, "num_kv_heads": Hkv or H}
    prob.update(extra)
    return ref.compute(prob)


def linear(x, w, b=None):
    """nn.Linear: x·Wᵀ + b with W [out, in]."""
    y = x @ w.T
    return y if b is None else y + b


def conv1d(x, w, b=None):
    """GPT-2 Conv1D: x·W + b with W [in, out]."""
    y = x @ w
    return y if b is None else y + b


# ============================================================================ harness

class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s: %s" % (name, detail))


def run(binary, args, cwd):
    p = subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True, timeout=60,
                       env=leak_env(args, cwd))
    return p.returncode, p.stdout, p.stderr


def decode(v):
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[v]
    return v


def close(got, want, scale=None):
    """float32 result vs float64 reference: |got - want| <= tol, tol from ε32 and the
    magnitudes involved (the sums here are all shorter than 64 terms)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return False, "shape %s, expected %s" % (got.shape, want.shape)
    mag = scale if scale is not None else max(1.0, float(np.abs(want).max()) if want.size else 1)
    tol = 64 * EPS32 * mag
    err = np.abs(got - want)
    if not np.all(np.isfinite(got) == np.isfinite(want)) or (err.size and err.max() > tol):
        i = int(np.argmax(err)) if err.size else 0
        return False, "worst |diff| %.3g at flat %d (got %r, want %r), tol %.3g" % (
            float(err.max()), i, got.ravel()[i], want.ravel()[i], tol)
    return True, ""


def compute_case(res, binary, folder, name, problem, want_out, want_w=None, args=(),
                 files=()):
    """Writes problem.json (plus safetensors `files`: (relpath, tensors)), runs compute,
    compares output and weights."""
    for rel, tensors in files:
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        ref.write_safetensors(path, tensors)
    cmd = ["compute"]
    if problem is not None:
        with open(os.path.join(folder, "problem.json"), "w") as f:
            json.dump(problem, f)
        cmd.append("problem.json")
    cmd += list(args)
    code, out, err = run(binary, cmd, folder)
    if code != 0:
        res.check(name, False, "exit %d: %s" % (code, err.strip()[:400]))
        return None
    doc = json.loads(out)
    ok, why = close(decode(doc["output"]), want_out)
    res.check(name + " output", ok, why)
    if want_w is not None:
        if "weights" not in doc:
            res.check(name + " weights", False, "no weights in the result")
        else:
            ok, why = close(decode(doc["weights"]), want_w, scale=1.0)
            res.check(name + " weights", ok, why)
    return doc


def error_case(res, binary, folder, name, problem, pattern, raw_files=()):
    """The problem must fail with exit 2 and one stderr line matching `pattern`."""
    import re
    for rel, data in raw_files:
        with open(os.path.join(folder, rel), "wb") as f:
            f.write(data)
    with open(os.path.join(folder, "problem.json"), "w") as f:
        json.dump(problem, f)
    code, out, err = run(binary, ["compute", "problem.json"], folder)
    lines = err.strip().splitlines()
    ok = (code == 2 and len(lines) == 1 and lines[0].startswith("attn: error: ")
          and re.search(pattern, lines[0]) is not None)
    res.check(name, ok, "exit %s, stderr %r (wanted /%s/)" % (code, err.strip()[:400], pattern))


# ============================================================================ layouts

def test_torch_mha(res, binary, tmp):
    E, H, L = 8, 2, 5
    x = rn(L, E)
    W = exact(rn(3 * E, E) / math.sqrt(E), "F32")
    b = exact(rn(3 * E) * 0.1, "F32")
    Wo = exact(rn(E, E) / math.sqrt(E), "F32")
    bo = exact(rn(E) * 0.1, "F32")
    q, k, v = (linear(x, W[i * E:(i + 1) * E], b[i * E:(i + 1) * E]) for i in range(3))
    merged, w = attention(q, k, v, H)
    want = linear(merged, Wo, bo)
    tensors = [("in_proj_weight", "F32", W), ("in_proj_bias", "F32", b),
               ("out_proj.weight", "F32", Wo), ("out_proj.bias", "F32", bo)]
    compute_case(res, binary, tmp("mha"), "torch-mha fused, params as a path",
                 {"input": x.tolist(), "num_heads": H, "params": "mha.safetensors"},
                 want, w, files=[("mha.safetensors", tensors)])
    # The same through --params and an .npy input (the flag form).
    d = tmp("mha-flag")
    np.save(os.path.join(d, "x.npy"), x.astype(np.float32))
    xs = x.astype(np.float32).astype(np.float64)
    q, k, v = (linear(xs, W[i * E:(i + 1) * E], b[i * E:(i + 1) * E]) for i in range(3))
    merged, w = attention(q, k, v, H)
    compute_case(res, binary, d, "torch-mha via --params flag", None,
                 linear(merged, Wo, bo), w,
                 args=["-x", "x.npy", "--params", "mha.safetensors", "--heads", str(H)],
                 files=[("mha.safetensors", tensors)])

    # Separate q/k/v_proj_weight (kdim, vdim != embed_dim), F16, cross-attention, a prefix.
    Ek, Ev, Lk = 6, 3, 7
    ctx_k = rn(2, Lk, Ek)
    Wq = exact(rn(E, E) / 3, "F16")
    Wk = exact(rn(E, Ek) / 3, "F16")
    Wv = exact(rn(E, Ev) / 3, "F16")
    bi = exact(rn(3 * E) * 0.1, "F16")
    Wo = exact(rn(E, E) / 3, "F16")
    xq = rn(2, 4, E)
    ctx_v = rn(2, Lk, Ev)
    q = linear(xq, Wq, bi[:E])
    k = linear(ctx_k, Wk, bi[E:2 * E])
    v = linear(ctx_v, Wv, bi[2 * E:])
    merged, w = attention(q, k, v, H)
    want = linear(merged, Wo)
    pre = "decoder.layers.0.multihead_attn."
    tensors = [(pre + "q_proj_weight", "F16", Wq), (pre + "k_proj_weight", "F16", Wk),
               (pre + "v_proj_weight", "F16", Wv), (pre + "in_proj_bias", "F16", bi),
               (pre + "out_proj.weight", "F16", Wo),
               ("decoder.layers.0.linear1.weight", "F16", rn(4, E))]
    compute_case(res, binary, tmp("mha-sep"), "torch-mha separate q/k/v, F16, prefix",
                 {"input": xq.tolist(), "key": ctx_k.tolist(), "value": ctx_v.tolist(),
                  "num_heads": H,
                  "params": {"file": "w/model.safetensors", "prefix": pre,
                             "layout": "torch-mha"}},
                 want, w, files=[("w/model.safetensors", tensors)])


def test_gpt2(res, binary, tmp):
    E, H, B, L = 8, 4, 2, 6
    layers = []
    for _ in range(2):
        layers.append(dict(
            Wa=exact(rn(E, 3 * E) / math.sqrt(E), "BF16"), ba=exact(rn(3 * E) * 0.1, "BF16"),
            Wp=exact(rn(E, E) / math.sqrt(E), "BF16"), bp=exact(rn(E) * 0.1, "BF16")))
    tensors = [("wte.weight", "BF16", rn(10, E))]
    for i, lw in enumerate(layers):
        pre = "transformer.h.%d.attn." % i
        tensors += [(pre + "bias", "U8", np.tril(np.ones((1, 1, L, L)))),
                    (pre + "masked_bias", "F32", np.array(-1e4)),
                    (pre + "c_attn.weight", "BF16", lw["Wa"]), (pre + "c_attn.bias", "BF16", lw["ba"]),
                    (pre + "c_proj.weight", "BF16", lw["Wp"]), (pre + "c_proj.bias", "BF16", lw["bp"])]
    x = rn(B, L, E)
    lw = layers[1]
    qkv = conv1d(x, lw["Wa"], lw["ba"])
    q, k, v = qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
    merged, w = attention(q, k, v, H, causal=True)
    want = conv1d(merged, lw["Wp"], lw["bp"])
    compute_case(res, binary, tmp("gpt2"), "gpt2 Conv1D, BF16, layer 1, causal",
                 {"input": x.tolist(), "num_heads": H, "causal": True,
                  "params": {"file": "gpt2.safetensors", "prefix": "transformer.h.1.attn.",
                             "layout": "gpt2"}},
                 want, w, files=[("gpt2.safetensors", tensors)])
    # Layout detected, prefix without its trailing dot.
    compute_case(res, binary, tmp("gpt2-auto"), "gpt2 detected, prefix without dot",
                 {"input": x.tolist(), "num_heads": H, "causal": True,
                  "params": {"file": "gpt2.safetensors", "prefix": "transformer.h.1.attn"}},
                 want, w, files=[("gpt2.safetensors", tensors)])


def test_llama(res, binary, tmp):
    E, H, Hkv, D, L = 16, 4, 2, 4, 5
    Wq = exact(rn(H * D, E) / 4, "F16")
    Wk = exact(rn(Hkv * D, E) / 4, "BF16")
    Wv = exact(rn(Hkv * D, E) / 4, "F32")
    Wo = exact(rn(E, H * D) / 4, "F64")
    x = rn(L, E)
    q, k, v = linear(x, Wq), linear(x, Wk), linear(x, Wv)
    merged, w = attention(q, k, v, H, Hkv, causal=True)
    want = linear(merged, Wo)
    pre = "model.layers.0.self_attn."
    tensors = [("model.embed_tokens.weight", "F16", rn(11, E)),
               (pre + "q_proj.weight", "F16", Wq), (pre + "k_proj.weight", "BF16", Wk),
               (pre + "v_proj.weight", "F32", Wv), (pre + "o_proj.weight", "F64", Wo),
               ("model.layers.0.mlp.up_proj.weight", "F16", rn(32, E)),
               ("model.layers.0.input_layernorm.weight", "F32", np.ones(E))]
    compute_case(res, binary, tmp("llama"), "llama GQA implied (H=4, Hkv=2), mixed dtypes",
                 {"input": x.tolist(), "num_heads": H, "causal": True, "rope": False,
                  "norm": False, "params": {"file": "llama.safetensors", "prefix": pre}},
                 want, w, files=[("llama.safetensors", tensors)])

    # Qwen2-style q/k/v biases, explicit num_kv_heads = 1, cross lengths, bottom-right.
    Hkv = 1
    Wk = exact(rn(Hkv * D, E) / 4, "F32")
    Wv = exact(rn(Hkv * D, E) / 4, "F32")
    bq, bk, bv = (exact(rn(n) * 0.1, "F32") for n in (H * D, Hkv * D, Hkv * D))
    xq, xk = rn(3, E), rn(6, E)
    q, k, v = linear(xq, Wq, bq), linear(xk, Wk, bk), linear(xk, Wv, bv)
    merged, w = attention(q, k, v, H, Hkv, causal="bottom-right")
    want = linear(merged, Wo)
    tensors = [(pre + "q_proj.weight", "F16", Wq), (pre + "k_proj.weight", "F32", Wk),
               (pre + "v_proj.weight", "F32", Wv), (pre + "o_proj.weight", "F64", Wo),
               (pre + "q_proj.bias", "F32", bq), (pre + "k_proj.bias", "F32", bk),
               (pre + "v_proj.bias", "F32", bv)]
    compute_case(res, binary, tmp("qwen"), "llama with biases, MQA, bottom-right",
                 {"input": xq.tolist(), "context": xk.tolist(), "num_heads": H,
                  "num_kv_heads": Hkv, "causal": "bottom-right", "rope": False,
                  "params": {"file": "qwen.safetensors", "prefix": pre, "layout": "llama"}},
                 want, w, files=[("qwen.safetensors", tensors)])


def test_attn_layout(res, binary, tmp):
    E, H, L = 6, 3, 4
    p = {n: exact(rn(E, E) / 3, "F32") for n in ("w_q", "w_k", "w_v", "w_o")}
    p.update({n: exact(rn(E) * 0.1, "F32") for n in ("b_q", "b_v", "b_o")})
    x = rn(L, E)
    q, k, v = linear(x, p["w_q"], p["b_q"]), linear(x, p["w_k"]), linear(x, p["w_v"], p["b_v"])
    merged, w = attention(q, k, v, H)
    want = linear(merged, p["w_o"], p["b_o"])
    tensors = [("block.attn." + n, "F32", a) for n, a in p.items()]
    d = tmp("attn")
    doc = compute_case(res, binary, d, "attn names, prefix",
                       {"input": x.tolist(), "num_heads": H,
                        "params": {"file": "a.safetensors", "prefix": "block.attn."}},
                       want, w, files=[("a.safetensors", tensors)])
    # The same weights inline must give the very same bytes.
    with open(os.path.join(d, "inline.json"), "w") as f:
        json.dump({"input": x.tolist(), "num_heads": H,
                   "params": {n: a.tolist() for n, a in p.items()}}, f)
    code, out, err = run(binary, ["compute", "inline.json"], d)
    res.check("attn layout == inline params, byte for byte",
              code == 0 and doc is not None and json.loads(out) == doc,
              "exit %s %s" % (code, err.strip()[:200]))


def test_checkpoint_errors(res, binary, tmp):
    d = tmp("errors")
    E = 4
    good = [("w_q", "F32", np.eye(E))]
    ok_bytes = ref.safetensors_bytes(good)
    x = rn(3, E).tolist()

    def prob(params, **kw):
        doc = {"input": x, "params": params}
        doc.update(kw)
        return doc

    error_case(res, binary, d, "missing file", prob("nope.safetensors"),
               r"params: .*nope\.safetensors: cannot read")
    error_case(res, binary, d, "too short", prob("short.safetensors"),
               r"short\.safetensors: not a safetensors file: 5 bytes",
               raw_files=[("short.safetensors", b"\x01\x00\x00\x00\x00")])
    error_case(res, binary, d, "header length past the end", prob("len.safetensors"),
               r"len\.safetensors: truncated: the header length says 4096 bytes",
               raw_files=[("len.safetensors", struct.pack("<Q", 4096) + b"{}")])
    error_case(res, binary, d, "truncated data", prob("trunc.safetensors"),
               r"tensor 'w_q': data_offsets \[0, 64\] reach past the end of the data",
               raw_files=[("trunc.safetensors", ok_bytes[:-4])])
    error_case(res, binary, d, "trailing bytes", prob("trail.safetensors"),
               r"data bytes \[64, 68\) belong to no tensor",
               raw_files=[("trail.safetensors", ok_bytes + b"\0\0\0\0")])
    error_case(res, binary, d, "not JSON", prob("nj.safetensors"),
               r"nj\.safetensors: invalid JSON header",
               raw_files=[("nj.safetensors", struct.pack("<Q", 4) + b"{abc")])
    hdr = json.dumps({"w_q": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 60]}}).encode()
    error_case(res, binary, d, "size mismatch", prob("sz.safetensors"),
               r"tensor 'w_q': data_offsets \[0, 60\] hold 60 bytes, but F32 \[4, 4\] needs 64",
               raw_files=[("sz.safetensors", struct.pack("<Q", len(hdr)) + hdr + bytes(60))])
    hdr = json.dumps({"w_q": {"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}}).encode()
    error_case(res, binary, d, "unknown dtype", prob("dt.safetensors"),
               r"tensor 'w_q': unknown dtype 'F33'",
               raw_files=[("dt.safetensors", struct.pack("<Q", len(hdr)) + hdr + bytes(4))])
    ref.write_safetensors(os.path.join(d, "i64.safetensors"), [("w_q", "I64", np.eye(E))])
    error_case(res, binary, d, "integer weight", prob("i64.safetensors"),
               r"tensor 'w_q': dtype I64 is not supported for weights")
    ref.write_safetensors(os.path.join(d, "layers.safetensors"),
                      [("h.%d.attn.c_attn.weight" % i, "F32", rn(E, 3 * E)) for i in range(5)])
    error_case(res, binary, d, "no weights at the prefix lists the prefixes",
               prob({"file": "layers.safetensors", "prefix": "h.9.attn."}),
               r"no attention weights at prefix 'h\.9\.attn\.' .*; the file has them at prefix "
               r"'h\.0\.attn\.', 'h\.1\.attn\.', 'h\.2\.attn\.', \.\.\. \(5 prefixes\): "
               r"set \"prefix\"")
    ref.write_safetensors(os.path.join(d, "both.safetensors"),
                      [("w_q", "F32", np.eye(E)), ("q_proj.weight", "F32", np.eye(E))])
    error_case(res, binary, d, "ambiguous layout", prob("both.safetensors"),
               r"match the layouts attn and llama: set \"layout\"")
    ref.write_safetensors(os.path.join(d, "bkv.safetensors"),
                      [("in_proj_weight", "F32", rn(3 * E, E)), ("bias_k", "F32", rn(1, 1, E))])
    error_case(res, binary, d, "add_bias_kv refused", prob("bkv.safetensors"),
               r"tensor 'bias_k': add_bias_kv .* is not supported")
    ref.write_safetensors(os.path.join(d, "g.safetensors"), [("c_attn.weight", "F32", rn(E, 10))])
    error_case(res, binary, d, "gpt2 fused size", prob("g.safetensors"),
               r"tensor 'c_attn.weight': second dimension 10 does not split in three")
    error_case(res, binary, d, "unknown checkpoint field",
               prob({"file": "g.safetensors", "layer": 0}),
               r"params: unknown field 'layer' of a checkpoint \(expected file, prefix, layout, config\)")
    error_case(res, binary, d, "unknown layout", prob({"file": "g.safetensors", "layout": "t5"}),
               r"params\.layout: expected \"attn\", \"torch-mha\", \"gpt2\", \"llama\", \"bert\" or \"opt\"")
    ref.write_safetensors(os.path.join(d, "l.safetensors"), [("q_proj.weight", "F32", rn(E, E))])
    error_case(res, binary, d, "llama missing k_proj", prob("l.safetensors"),
               r"layout llama: missing tensor 'k_proj.weight'")


# ============================================================================ mask conventions

def test_mask_conventions(res, binary, tmp):
    B, H, Lq, Lk, D = 2, 2, 5, 6, 4
    Q, K, V = rn(B, H, Lq, D), rn(B, H, Lk, D), rn(B, H, Lk, 3)
    keep = RNG.random((B, 1, Lq, Lk)) < 0.7
    keep[0, 0, 2] = False                     # one fully masked row
    kpm_keep = RNG.random((B, Lk)) < 0.8
    base = {"query": Q.tolist(), "key": K.tolist(), "value": V.tolist()}
    want_out, want_w = ref.compute({"query": Q, "key": K, "value": V,
                                    "mask": keep.astype(float),
                                    "key_padding_mask": kpm_keep.astype(float)})

    def case(name, folder, extra, want=(want_out, want_w), npy=()):
        d = tmp(folder)
        for rel, a in npy:
            np.save(os.path.join(d, rel), a)
        doc = dict(base)
        doc.update(extra)
        compute_case(res, binary, d, name, doc, want[0], want[1])

    case("keep (default), JSON booleans", "keep-default",
         {"mask": keep.tolist(), "key_padding_mask": kpm_keep.tolist()})
    case("keep (explicit), .npy bool", "keep-npy",
         {"mask_convention": "keep", "mask": "m.npy", "key_padding_mask": "k.npy"},
         npy=[("m.npy", keep), ("k.npy", kpm_keep)])
    case("torch-mha, .npy bool (True = ignore)", "mha-bool",
         {"mask_convention": "torch-mha", "mask": "m.npy", "key_padding_mask": "k.npy"},
         npy=[("m.npy", ~keep), ("k.npy", ~kpm_keep)])
    case("torch-mha, JSON 0/1 and uint8", "mha-int",
         {"mask_convention": "torch-mha", "mask": (~keep).astype(int).tolist(),
          "key_padding_mask": "k.npy"},
         npy=[("k.npy", (~kpm_keep).astype(np.uint8))])
    neg = np.where(keep, 0.0, -np.inf)
    kneg = np.where(kpm_keep, 0.0, -np.inf)
    case("torch-mha, float -inf/0 mask (generate_square_subsequent_mask style)", "mha-float",
         {"mask_convention": "torch-mha", "mask": "m.npy",
          "key_padding_mask": (~kpm_keep).tolist()},
         npy=[("m.npy", np.where(keep, 0.0, -np.inf).astype(np.float32))])
    case("additive 0/-inf (exactly a keep-mask)", "add-01",
         {"mask_convention": "additive", "mask": "m.npy", "key_padding_mask": "k.npy"},
         npy=[("m.npy", neg.astype(np.float32)), ("k.npy", kneg.astype(np.float16))])

    # Additive with finite values: a bias. With the bias field too; [B, H, Lq, Lk] mask,
    # [B, Lk] key padding; the reference adds all three.
    madd = np.where(RNG.random((B, H, Lq, Lk)) < 0.8, f32(rn(B, H, Lq, Lk)), -np.inf)
    madd[1, 1, 4] = -np.inf                   # fully masked row in one head
    kadd = np.where(kpm_keep, f32(rn(B, Lk) * 0.5), -np.inf)
    bias = f32(rn(Lq, Lk))
    total = bias[None, None] + madd + kadd[:, None, None, :]
    w_out, w_w = ref.compute({"query": Q, "key": K, "value": V, "bias": total})
    case("additive with values, + bias field", "add-vals",
         {"mask_convention": "additive", "mask": "m.npy", "key_padding_mask": "k.npy",
          "bias": bias.tolist()},
         want=(w_out, w_w),
         npy=[("m.npy", madd.astype(np.float32)), ("k.npy", kadd.astype(np.float32))])
    # Key padding alone as an additive bias (broadcast over queries), JSON with "-inf".
    w_out2, w_w2 = ref.compute({"query": Q, "key": K, "value": V,
                                "bias": np.broadcast_to(kadd[:, None, None, :],
                                                        (B, 1, Lq, Lk))})
    case("additive key_padding_mask alone, JSON", "add-kpm",
         {"mask_convention": "additive",
          "key_padding_mask": [[("-inf" if math.isinf(v) else v) for v in row]
                               for row in kadd.tolist()]},
         want=(w_out2, w_w2))
    # Hugging Face's extended mask: additive [B, 1, 1, Lk] of 0 / float32 min, broadcast
    # over heads and queries as SDPA does; and the same 0/-inf as a [1, Lk] keep-mask.
    hf = np.where(kpm_keep, 0.0, np.finfo(np.float32).min)[:, None, None, :]
    w_out3, w_w3 = ref.compute({"query": Q, "key": K, "value": V, "bias": hf})
    case("additive [B, 1, 1, Lk] (Hugging Face extended mask), broadcast", "add-hf",
         {"mask_convention": "additive", "mask": "m.npy"}, want=(w_out3, w_w3),
         npy=[("m.npy", hf.astype(np.float32))])
    w_out4, w_w4 = ref.compute({"query": Q, "key": K, "value": V, "bias": hf})
    case("bias [B, 1, 1, Lk] broadcast", "bias-hf", {"bias": "b.npy"}, want=(w_out4, w_w4),
         npy=[("b.npy", hf.astype(np.float32))])

    # Streaming path (--no-weights) with an additive bias.
    d = tmp("add-stream")
    np.save(os.path.join(d, "m.npy"), madd.astype(np.float32))
    np.save(os.path.join(d, "k.npy"), kadd.astype(np.float32))
    doc = dict(base, mask_convention="additive", mask="m.npy", key_padding_mask="k.npy",
               bias=bias.tolist())
    with open(os.path.join(d, "problem.json"), "w") as f:
        json.dump(doc, f)
    code, out, err = run(binary, ["compute", "problem.json", "--no-weights"], d)
    ok, why = (False, "exit %s: %s" % (code, err.strip()[:300]))
    if code == 0:
        ok, why = close(decode(json.loads(out)["output"]), w_out)
    res.check("additive with values, --no-weights", ok, why)

    # Rank-2 inputs with feature-split heads and a [Lq, Lk] torch-mha mask.
    x = rn(Lq, 6)
    m2 = RNG.random((Lq, Lq)) < 0.3
    o, w = ref.compute({"query": x, "key": x, "value": x, "num_heads": 3,
                        "mask": (~m2).astype(float)})
    case("torch-mha [Lq, Lk] with heads", "mha-2d",
         {"query": x.tolist(), "key": x.tolist(), "value": x.tolist(), "num_heads": 3,
          "mask_convention": "torch-mha", "mask": m2.tolist()}, want=(o, w))

    d = tmp("mc-errors")
    np.save(os.path.join(d, "b.npy"), keep)
    error_case(res, binary, d, "additive refuses a boolean .npy",
               dict(base, mask_convention="additive", mask="b.npy"),
               r"mask: mask_convention \"additive\" takes numbers .*got a boolean array")
    error_case(res, binary, d, "additive refuses JSON booleans",
               dict(base, mask_convention="additive", key_padding_mask=kpm_keep.tolist()),
               r"key_padding_mask: .*expected a number")
    error_case(res, binary, d, "unknown convention",
               dict(base, mask_convention="ignore", mask=keep.tolist()),
               r"mask_convention: expected \"keep\", \"torch-mha\" or \"additive\", got \"ignore\"")


def f32(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)


# ============================================================================ main

def main():
    if len(sys.argv) != 2:
        print("usage: features_io_test.py PATH/TO/attn", file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    res = Results()
    with tempfile.TemporaryDirectory(prefix="attn-features-io-") as root:
        def tmp(name):
            d = os.path.join(root, name)
            os.makedirs(d, exist_ok=True)
            return d

        for test in (test_torch_mha, test_gpt2, test_llama, test_attn_layout,
                     test_checkpoint_errors, test_mask_conventions):
            try:
                test(res, binary, tmp)
            except Exception as e:  # a harness bug must fail the run, not skip it
                res.check(test.__name__, False, "%s: %s" % (type(e).__name__, e))
    print("%d passed, %d failed" % (res.passed, res.failed))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes a tiny llama and a tiny qwen2 as quantized GGUF files, every tensor type attn
dequantizes inside each file (one type per weight matrix, as llama.cpp's mixed Q4_K_M
files mix them), for tests/cli/gguf_quant_forward_test.py (fixtures/gguf/quant_models/).

    python3 tests/unit/gguf_quant_model_fixtures.py /path/to/llama.cpp [OUT_DIR]

Shapes: hidden 256, 4 heads of 64, 2 kv heads, MLP 256, 2 layers, 8 tokens: every weight
row is 256 long, a whole K-quant block. The float32 weights come from numpy's
default_rng(SEED) in the order of `shapes()` (the test draws them again for the Hugging
Face folder). The GGUF side is llama.cpp's: convert_hf_to_gguf.py's LlamaModel /
Qwen2Model (metadata, Q/K permutation), gguf-py's GGUFWriter and quantizers (F16, BF16,
Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) and, for the K-quants gguf-py cannot quantize, ggml's
reference quantize_row_*_ref from ggml/src/ggml-quants.c, compiled here with gcc into a
temporary shared library (never committed). Norms and biases stay float32, as llama.cpp
keeps them. Each file carries the 8-token SentencePiece-style vocabulary of
gguf_vocab_fixtures.py (TINY_SPM), so --text runs through it. Also written: T_error.json,
each tensor's type and its relative RMS dequantization error (gguf-py's dequantizer vs the
float32 weights), from which the test derives its tolerance.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gguf_model_fixtures import import_converter  # noqa: E402
from gguf_vocab_fixtures import add_tiny_spm  # noqa: E402

E, H, KV, D, I, V, L = 256, 4, 2, 64, 256, 8, 2
SEED = 2222

# The type of each weight matrix (the rest float32): all thirteen in each model.
TYPES = {
    "llama": {"model.embed_tokens": "Q8_0", "lm_head": "Q4_K",
              0: ["Q4_K", "Q6_K", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "F16"],
              1: ["Q5_K", "Q3_K", "Q2_K", "BF16", "F32", "Q8_0", "Q6_K"]},
    "qwen2": {"model.embed_tokens": "Q6_K", "lm_head": "Q8_0",
              0: ["Q5_0", "Q5_1", "Q3_K", "Q4_K", "Q2_K", "BF16", "Q4_0"],
              1: ["Q8_0", "Q4_1", "F16", "Q5_K", "Q6_K", "F32", "Q4_K"]},
}
MATRICES = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
            "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def shapes(arch):
    """(Hugging Face name, shape, std) in drawing order."""
    out = [("model.embed_tokens.weight", (V, E), 1.0), ("model.norm.weight", (E,), 0.1),
           ("lm_head.weight", (V, E), 1 / 16)]
    for n in range(L):
        p = f"model.layers.{n}."
        out += [(p + "input_layernorm.weight", (E,), 0.1),
                (p + "post_attention_layernorm.weight", (E,), 0.1)]
        rows = {"q_proj": H * D, "k_proj": KV * D, "v_proj": KV * D, "o_proj": E,
                "gate_proj": I, "up_proj": I, "down_proj": E}
        for m in MATRICES:
            out.append((p + m + ".weight", (rows[m.split(".")[1]], E), 1 / 16))
        if arch == "qwen2":
            out += [(p + "self_attn.q_proj.bias", (H * D,), 0.1),
                    (p + "self_attn.k_proj.bias", (KV * D,), 0.1),
                    (p + "self_attn.v_proj.bias", (KV * D,), 0.1)]
    return out


def weights(arch):
    """The float32 weights: norms around 1, the rest N(0, std^2)."""
    rng = np.random.default_rng(SEED)
    t = {}
    for name, shape, std in shapes(arch):
        w = rng.standard_normal(shape) * std
        if name.endswith("norm.weight"):
            w = 1 + w
        t[name] = w.astype(np.float32)
    return t


def type_of(arch, name):
    spec = TYPES[arch]
    for key in ("model.embed_tokens", "lm_head"):
        if name == key + ".weight":
            return spec[key]
    for n in range(L):
        for m, qtype in zip(MATRICES, spec[n]):
            if name == f"model.layers.{n}.{m}.weight":
                return qtype
    return "F32"


def ggml_quantizer(llama_cpp, tmp):
    """ggml's reference K-quant quantizers through ctypes."""
    src = Path(llama_cpp) / "ggml"
    stub = Path(tmp) / "stubs.c"
    stub.write_text(
        '#include "ggml-impl.h"\n#include <stdlib.h>\n'
        "float ggml_table_f32_f16[1 << 16];\n"
        "void ggml_abort(const char* f, int l, const char* fmt, ...) { abort(); }\n"
        "size_t ggml_row_size(enum ggml_type t, int64_t n) { return 0; }\n"
        'const char* ggml_type_name(enum ggml_type t) { return ""; }\n'
        "size_t ggml_type_size(enum ggml_type t) { return 0; }\n"
        "void fixtures_init(void) { for (int i = 0; i < 65536; ++i)"
        " ggml_table_f32_f16[i] = GGML_COMPUTE_FP16_TO_FP32((ggml_fp16_t)i); }\n")
    lib = Path(tmp) / "libquants.so"
    subprocess.run(["gcc", "-O2", "-fPIC", "-shared", f"-I{src / 'include'}",
                    f"-I{src / 'src'}", "-o", str(lib), str(stub),
                    str(src / "src" / "ggml-quants.c"), "-lm"], check=True)
    so = ctypes.CDLL(str(lib))
    so.fixtures_init()
    return so


def quantize(gguf, so, w, qtype):
    qt = gguf.GGMLQuantizationType[qtype]
    if qtype == "F32":
        return w, qt
    if not qtype.endswith("_K"):
        return gguf.quants.quantize(w, qt), qt
    block, size = gguf.GGML_QUANT_SIZES[qt]
    rows = np.ascontiguousarray(w, dtype=np.float32)
    out = np.zeros((rows.shape[0], rows.shape[1] // block * size), dtype=np.uint8)
    fn = getattr(so, f"quantize_row_{qtype.lower()[:-2]}_K_ref")
    for r in range(rows.shape[0]):
        fn(rows[r].ctypes.data_as(ctypes.c_void_p), out[r].ctypes.data_as(ctypes.c_void_p),
           ctypes.c_int64(rows.shape[1]))
    return out, qt


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    llama_cpp = Path(sys.argv[1]).resolve()
    gguf, convert = import_converter(llama_cpp)
    import torch

    out = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE / "fixtures" / "gguf" / "quant_models"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        so = ggml_quantizer(llama_cpp, tmp)
        for arch, cls_name in (("llama", "LlamaModel"), ("qwen2", "Qwen2Model")):
            hparams = {"hidden_size": E, "num_attention_heads": H, "num_key_value_heads": KV,
                       "num_hidden_layers": L, "intermediate_size": I, "vocab_size": V,
                       "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
                       "rope_theta": 10000.0, "model_type": arch}
            cls = getattr(convert, cls_name)
            model = cls.__new__(cls)  # the converter's class, without its file-reading __init__
            model.hparams = hparams
            model.dir_model = out
            model.ftype = gguf.LlamaFileType.ALL_F32
            model.block_count = L
            model.tensor_map = gguf.get_tensor_name_map(model.model_arch, L)
            model.gguf_writer = gguf.GGUFWriter(str(out / f"{arch}.gguf"),
                                                gguf.MODEL_ARCH_NAMES[model.model_arch])
            model.set_gguf_parameters()
            w = model.gguf_writer
            add_tiny_spm(w)
            errors = {}
            for name, data in weights(arch).items():
                bid = int(name.split(".")[2]) if ".layers." in name else None
                for new_name, new_data in model.modify_tensors(torch.from_numpy(data.copy()),
                                                               name, bid):
                    f32 = new_data.numpy().astype(np.float32)
                    qtype = type_of(arch, name)
                    q, qt = quantize(gguf, so, f32, qtype)
                    w.add_tensor(new_name, q, raw_dtype=qt)
                    back = gguf.quants.dequantize(q, qt).reshape(f32.shape)
                    rel = float(np.sqrt(np.mean((back - f32) ** 2) / np.mean(f32 ** 2)))
                    errors[name] = {"type": qtype, "relative_rms_error": rel}
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()
            with open(out / f"{arch}_error.json", "w") as f:
                json.dump({"seed": SEED, "config": hparams, "tensors": errors}, f, indent=1)
                f.write("\n")


if __name__ == "__main__":
    main()

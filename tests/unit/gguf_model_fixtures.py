#!/usr/bin/env python3
"""Writes tiny models twice, as Hugging Face names them and as llama.cpp's converter turns
them into GGUF, for the GGUF -> Hugging Face mapping tests (fixtures/gguf/models/).

    python3 tests/unit/gguf_model_fixtures.py /path/to/llama.cpp [OUT_DIR]

The GGUF side is written by llama.cpp's own code, read from the given checkout and never
committed: convert_hf_to_gguf.py's model classes (set_gguf_parameters for the metadata,
modify_tensors for the tensors: LlamaModel.permute of Q/K, Gemma's norm + 1, GPT-2's
Conv1D transposes, the tensor names from gguf-py's TensorNameMap), and gguf-py's
GGUFWriter. Tensors stay float32, so undoing the converter must give the Hugging Face
tensors bit for bit. Written per model type T:
  T.gguf          the converted model
  T_hf.npz        the Hugging Face tensors by their Hugging Face names (np.savez)
  T_config.json   the config.json the converter was given
for T in llama, qwen2, gemma, phi3, gpt2 and llama3 (llama with Llama 3's RoPE scaling, for
which the converter's generate_extra_tensors adds rope_freqs.weight).
"""

import json
import os
import sys
from pathlib import Path

import numpy as np

E, H, KV, D, I, V, L = 16, 4, 2, 4, 24, 8, 2  # hidden, heads, kv heads, head dim, mlp, vocab, layers


def llama_like(rng, qkv_bias=False, fused=False):
    t = {"model.embed_tokens.weight": (V, E), "model.norm.weight": (E,), "lm_head.weight": (V, E)}
    for n in range(L):
        p = f"model.layers.{n}."
        t[p + "input_layernorm.weight"] = (E,)
        t[p + "post_attention_layernorm.weight"] = (E,)
        t[p + "self_attn.o_proj.weight"] = (E, H * D)
        t[p + "mlp.down_proj.weight"] = (E, I)
        if fused:
            t[p + "self_attn.qkv_proj.weight"] = ((H + 2 * KV) * D, E)
            t[p + "mlp.gate_up_proj.weight"] = (2 * I, E)
        else:
            t[p + "self_attn.q_proj.weight"] = (H * D, E)
            t[p + "self_attn.k_proj.weight"] = (KV * D, E)
            t[p + "self_attn.v_proj.weight"] = (KV * D, E)
            t[p + "mlp.gate_proj.weight"] = (I, E)
            t[p + "mlp.up_proj.weight"] = (I, E)
            if qkv_bias:
                t[p + "self_attn.q_proj.bias"] = (H * D,)
                t[p + "self_attn.k_proj.bias"] = (KV * D,)
                t[p + "self_attn.v_proj.bias"] = (KV * D,)
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in t.items()}


def gpt2(rng):
    t = {"transformer.wte.weight": (V, E), "transformer.wpe.weight": (32, E),
         "transformer.ln_f.weight": (E,), "transformer.ln_f.bias": (E,)}
    for n in range(L):
        p = f"transformer.h.{n}."
        t.update({p + "ln_1.weight": (E,), p + "ln_1.bias": (E,), p + "ln_2.weight": (E,),
                  p + "ln_2.bias": (E,), p + "attn.c_attn.weight": (E, 3 * E),
                  p + "attn.c_attn.bias": (3 * E,), p + "attn.c_proj.weight": (E, E),
                  p + "attn.c_proj.bias": (E,), p + "mlp.c_fc.weight": (E, 4 * E),
                  p + "mlp.c_fc.bias": (4 * E,), p + "mlp.c_proj.weight": (4 * E, E),
                  p + "mlp.c_proj.bias": (E,)})
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in t.items()}


def configs():
    base = {"hidden_size": E, "num_attention_heads": H, "num_key_value_heads": KV,
            "num_hidden_layers": L, "intermediate_size": I, "vocab_size": V,
            "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0}
    return {
        "llama": ("LlamaModel", dict(base, model_type="llama", architectures=["LlamaForCausalLM"],
                                     rope_theta=500000.0), dict()),
        "qwen2": ("Qwen2Model", dict(base, model_type="qwen2", rope_theta=1000000.0),
                  dict(qkv_bias=True)),
        "gemma": ("GemmaModel", dict(base, model_type="gemma", head_dim=D), dict()),
        "phi3": ("Phi3MiniModel", dict(base, model_type="phi3", num_key_value_heads=KV,
                                       original_max_position_embeddings=64, sliding_window=2047),
                 dict(fused=True)),
        "gpt2": ("GPT2Model", {"model_type": "gpt2", "n_embd": E, "n_head": H, "n_layer": L,
                               "n_ctx": 32, "n_positions": 32, "vocab_size": V,
                               "layer_norm_epsilon": 1e-5}, None),
        # Llama 3's RoPE scaling: the converter writes rope_freqs.weight. An original context
        # of 16 puts the tiny heads' two frequencies in the blended and the divided band (the
        # converter reads it from the top level, Hugging Face from rope_scaling: both given).
        "llama3": ("LlamaModel", dict(base, model_type="llama", architectures=["LlamaForCausalLM"],
                                      rope_theta=500000.0, original_max_position_embeddings=16,
                                      rope_scaling={
                                          "rope_type": "llama3", "factor": 8.0,
                                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                          "original_max_position_embeddings": 16}), dict()),
    }


def import_converter(llama_cpp):
    """gguf-py and convert_hf_to_gguf.py from a llama.cpp checkout (never committed)."""
    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    sys.path.insert(0, str(llama_cpp))
    import torch
    for missing in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
        if not hasattr(torch, missing):  # older torch: the converter only names these dtypes
            setattr(torch, missing, torch.float32)
    import gguf
    import convert_hf_to_gguf as convert
    return gguf, convert


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    llama_cpp = Path(sys.argv[1]).resolve()
    gguf, convert = import_converter(llama_cpp)
    import torch

    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent / "fixtures" / "gguf" / "models"
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(22)
    for model_type, (cls_name, hparams, shape_args) in configs().items():
        tensors = gpt2(rng) if shape_args is None else llama_like(rng, **shape_args)
        if model_type == "phi3":
            hparams["hidden_size"] = E
        cls = getattr(convert, cls_name)
        model = cls.__new__(cls)  # the converter's class, without its file-reading __init__
        model.hparams = hparams
        model.dir_model = out
        model.ftype = gguf.LlamaFileType.ALL_F32
        model.block_count = model.find_hparam(["n_layers", "num_hidden_layers", "n_layer"])
        model.tensor_map = gguf.get_tensor_name_map(model.model_arch, model.block_count)
        path = out / f"{model_type}.gguf"
        model.gguf_writer = gguf.GGUFWriter(str(path), gguf.MODEL_ARCH_NAMES[model.model_arch])
        model.set_gguf_parameters()
        for name, data in tensors.items():
            bid = int(name.split(".")[2 if name.startswith("model.") else 2]) if ".layers." in name or ".h." in name else None
            for new_name, new_data in model.modify_tensors(torch.from_numpy(data.copy()), name, bid):
                model.gguf_writer.add_tensor(new_name, new_data.numpy().astype(np.float32))
        for new_name, new_data in model.generate_extra_tensors():  # rope_freqs (llama3)
            model.gguf_writer.add_tensor(new_name, new_data.numpy().astype(np.float32))
        model.gguf_writer.write_header_to_file()
        model.gguf_writer.write_kv_data_to_file()
        model.gguf_writer.write_tensors_to_file()
        model.gguf_writer.close()
        np.savez(out / f"{model_type}_hf.npz", **tensors)
        with open(out / f"{model_type}_config.json", "w") as f:
            json.dump(hparams, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()

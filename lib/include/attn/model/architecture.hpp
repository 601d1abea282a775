// The one table of model architectures (keyed by config.json's `model_type`): how each
// names its tensors, which are fused and how, its norms, positions, MLP and residual form.
// Written from each model's Hugging Face modeling code (modeling_<type>.py).
//
// Architecture and ModelSpec are plain data: config.json fills them here (model_spec()),
// and another source (a GGUF file's metadata) may fill them itself. Name fields are
// suffixes: a tensor's full name is root + name (+ ".weight"/".bias"), with "{}" in
// `layer` replaced by the layer number.
#pragma once

#include "attn/block.hpp"
#include "attn/norm.hpp"
#include "attn/rope.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace attn::model {

/// How a layer's Q, K and V weights are stored.
enum class QkvLayout {
    separate,       ///< q, k, v: three nn.Linear [out, in] (+ bias)
    conv1d_fused,   ///< GPT-2 c_attn: one Conv1D [E, 3E] (columns q|k|v) + bias [3E]
    per_head_fused, ///< GPT-NeoX query_key_value [H·3D, E]: per head q|k|v rows (view(H, 3D))
    rows_fused,     ///< Phi-3 qkv_proj [(H + 2·Hkv)·D, E]: rows q, then k, then v
    /// Falcon's new_decoder_architecture query_key_value [(H + 2·Hkv)·D, E]: per key/value
    /// head (view(Hkv, H/Hkv + 2, D)) its H/Hkv query heads, then k, then v
    group_fused,
};

/// How the MLP's weights are stored.
enum class MlpLayout {
    plain,        ///< up [I, E], down [E, I] (+ biases): down(act(up·x))
    plain_conv1d, ///< GPT-2 Conv1D c_fc [E, I], c_proj [I, E]
    gated,        ///< gate, up [I, E], down [E, I]: down(act(gate·x) ⊙ up·x)
    gated_fused,  ///< Phi-3 gate_up_proj [2I, E]: rows gate, then up
};

/// Where token positions come from.
enum class PositionScheme {
    none,    ///< no learned positions (RoPE, when `rope`, inside attention)
    learned, ///< a learned table: row position_offset + l (GPT-2, BERT, OPT's offset 2)
    roberta, ///< a learned table at padding_idx + 1 + (count of non-pad tokens so far);
             ///< pad tokens at padding_idx (create_position_ids_from_input_ids)
    /// OPT: a learned table at position_offset + (count of real tokens so far) − 1, from
    /// the attention mask (OPTDecoder.forward: cumsum(attention_mask) · mask − 1); padding
    /// at position_offset − 1
    attention_mask,
};

/// One architecture: names and structure. Empty names are absent parts. (Names first,
/// then numbers, kinds and flags: the order clang-tidy's padding check asks for.)
struct Architecture {
    // Names.
    std::string model_type;           ///< config.json's model_type: "gpt2"
    std::vector<std::string> roots;   ///< where the names start, tried in order: "transformer.", ""
    std::string token_embedding;      ///< "wte.weight"
    std::string position_embedding;   ///< "wpe.weight"
    std::string token_type_embedding; ///< BERT: row 0 added to every token
    std::string embedding_norm;       ///< BERT "embeddings.LayerNorm" (+ .weight/.bias)
    std::string layer;                ///< "h.{}."; block names below are relative to it
    std::string q, k, v;              ///< separate: "attn.q_proj"; fused: the one tensor in q
    std::string o;                    ///< output projection "attn.c_proj"
    std::string attention_norm, mlp_norm; ///< "ln_1", "ln_2" (see Residual for where)
    /// Norms on attention's and the MLP's outputs before their residual (pre_norm only):
    /// Gemma 2's and OLMo 2's "post_attention_layernorm", "post_feedforward_layernorm".
    std::string attention_post_norm, mlp_post_norm;
    std::string q_norm, k_norm; ///< the projected Q's and K's norms: "self_attn.q_norm"
    /// A mixture of experts (when `router` is set): the router "block_sparse_moe.gate",
    /// expert e's tensors under `expert` with "{}" = e ("block_sparse_moe.experts.{}.")
    /// named expert_gate, expert_up, expert_down ("w1", "w3", "w2"); Qwen2-MoE's shared
    /// expert (its gate_proj, up_proj, down_proj under "mlp.shared_expert.") and its gate.
    std::string router, expert, expert_gate, expert_up, expert_down;
    std::string shared_expert, shared_expert_gate;
    std::string up, gate, down;     ///< gated_fused: the fused tensor in up
    std::string final_norm;         ///< "ln_f"; empty: none (BERT)
    std::string activation_key;     ///< config key naming the MLP's activation
    std::string default_activation; ///< ACT2FN name when the config does not say
    // Numbers.
    double norm_weight_offset = 0.0;     ///< Gemma: RMSNorm scales by (1 + w)
    double default_norm_eps = 1e-5;      ///< when the config does not say
    double default_partial_rotary = 1.0; ///< GPT-NeoX's rotary_pct default 0.25
    std::size_t position_offset = 0;     ///< OPT: 2
    std::size_t default_head_dim = 0;    ///< GemmaConfig's head_dim 256; 0: hidden / heads
    std::size_t default_rotary_dim = 0;  ///< GPTJConfig's rotary_dim 64; 0: the head dim
    double default_rope_theta = 0.0;     ///< Gemma3TextConfig's 1e6; 0: RopeSpec's
    // Kinds.
    QkvLayout qkv = QkvLayout::separate;
    MlpLayout mlp = MlpLayout::plain;
    NormKind norm = NormKind::layer_norm;
    Residual residual = Residual::pre_norm;
    RopeStyle rope_style = RopeStyle::neox;
    PositionScheme positions = PositionScheme::none;
    QkNormScope qk_norm_scope = QkNormScope::head; ///< what q_norm, k_norm normalize
    // Flags.
    bool o_conv1d = false;         ///< GPT-2 Conv1D c_proj [in, out]
    bool fixed_norm_eps = false;   ///< DistilBERT, OPT: eps is the code's, not the config's
    bool causal = true;            ///< the decoder's own causal mask
    bool rope = false;             ///< RoPE on Q and K (style rope_style)
    bool embed_scale_sqrt = false; ///< Gemma: embeddings · √E (in the model's dtype)
    bool alibi = false;            ///< BLOOM: ALiBi (alibi_default_slopes) on the scores
};

/// The architectures attn knows, in the order messages list them.
const std::vector<Architecture>& architectures();
/// The one for `model_type`, or null.
const Architecture* find_architecture(std::string_view model_type);
/// "gpt2, gpt_neox, ..." for messages.
std::string architecture_names();

/// A model: its architecture and sizes, each value with where it came from (for explain).
struct ModelSpec {
    Architecture arch;
    std::string root;            ///< the root the file's names use
    std::string activation_name; ///< as the config names it
    /// (what, value, source) for explain and info: "heads", "12", "config.json: n_head".
    std::vector<std::vector<std::string>> origins;
    std::optional<RopeSpec> rope;
    /// Mistral/Phi-3 `sliding_window` (query i sees keys i − W < j <= i, masking_utils'
    /// sliding_window_overlay); Qwen2's only with use_sliding_window, on its layer_types'
    /// "sliding_attention" layers (from max_window_layers on when the config lists none).
    std::optional<std::size_t> sliding_window;
    /// The layers the window applies to (sliding_layers[l]); empty: every layer.
    std::vector<bool> sliding_layers;
    /// Gemma 3: the sliding layers' own RoPE (rope_local_base_freq, unscaled).
    std::optional<RopeSpec> local_rope;
    /// Gemma 2/3: query_pre_attn_scalar^-0.5 instead of 1/√D.
    std::optional<double> attention_scale;
    /// Gemma 2/3: attn_logit_softcapping (scores = cap·tanh(scores / cap)).
    std::optional<double> softcap;
    /// A mixture of experts (arch.router): the experts, how many each token takes, whether
    /// their weights are renormalized; the layers with the dense MLP instead
    /// (dense_layers[l]; empty: none).
    std::size_t experts = 0, experts_per_token = 0;
    bool normalize_experts = true;
    std::vector<bool> dense_layers;
    std::size_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0;
    double norm_eps = 1e-5;
    std::int64_t pad_token_id = 1; ///< RoBERTa positions
    Activation activation = Activation::gelu_erf;
    Residual residual = Residual::pre_norm;
    bool scale_attn_weights = true; ///< GPT-2 scale_attn_weights: scores · 1/√D (else · 1)
    bool scale_attn_by_inverse_layer_idx = false; ///< GPT-2: layer l's scores / (l + 1)
};

/// The ACT2FN names attn computes: gelu, gelu_python, gelu_new, gelu_pytorch_tanh, relu,
/// silu, swish; and bloom_gelu (BloomGelu, BLOOM's own, named so here).
/// Throws InputError("WHERE: activation 'X' is not supported (supported: ...)").
Activation parse_activation(std::string_view name, std::string_view where);

/// A model's spec from its config.json (and the tensor names, to find the root). `layout`:
/// the architecture to use when given (--layout), else config.json's model_type.
/// Throws InputError: an unsupported model_type (listing the supported), a missing or
/// bad key, a root that fits no or several sets of names.
ModelSpec model_spec(const std::filesystem::path& config,
                     const std::vector<std::string>& names,
                     const std::optional<std::string>& layout = {});

/// model_spec from config.json's text; `config` names it in messages (a GGUF's metadata
/// as config.json: model::GgufModel::config()).
ModelSpec model_spec(std::string_view text,
                     const std::filesystem::path& config,
                     const std::vector<std::string>& names,
                     const std::optional<std::string>& layout = {});

/// One line per value: "architecture: gpt2 (config.json: model_type)", for info and explain.
std::vector<std::string> describe_model(const ModelSpec& spec);

} // namespace attn::model

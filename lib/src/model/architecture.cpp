// The architecture table and a model's spec from config.json. Each entry follows its
// Hugging Face modeling_<type>.py: tensor names, fused layouts, norm and its placement,
// positions, MLP and activation, residual form.
#include "attn/model/architecture.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/number_text.hpp"
#include "attn/model/hf_config.hpp"
#include "model/detail.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace attn::model {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// The llama family: RMSNorm, pre-norm, gated SiLU MLP, RoPE (rotate_half).
Architecture llama_like(std::string type) {
    Architecture a;
    a.model_type = std::move(type);
    a.roots = {"model.", ""};
    a.token_embedding = "embed_tokens.weight";
    a.layer = "layers.{}.";
    a.q = "self_attn.q_proj";
    a.k = "self_attn.k_proj";
    a.v = "self_attn.v_proj";
    a.o = "self_attn.o_proj";
    a.attention_norm = "input_layernorm";
    a.mlp_norm = "post_attention_layernorm";
    a.mlp = MlpLayout::gated;
    a.gate = "mlp.gate_proj";
    a.up = "mlp.up_proj";
    a.down = "mlp.down_proj";
    a.final_norm = "norm";
    a.norm = NormKind::rms_norm;
    a.default_norm_eps = 1e-6;
    a.activation_key = "hidden_act";
    a.default_activation = "silu";
    a.rope = true;
    return a;
}

/// The BERT family: learned positions, embedding LayerNorm, post-norm, not causal.
Architecture bert_like(const std::string& type) {
    Architecture a;
    a.model_type = type;
    a.roots = {type + ".", ""};
    a.token_embedding = "embeddings.word_embeddings.weight";
    a.position_embedding = "embeddings.position_embeddings.weight";
    a.token_type_embedding = "embeddings.token_type_embeddings.weight";
    a.embedding_norm = "embeddings.LayerNorm";
    a.layer = "encoder.layer.{}.";
    a.q = "attention.self.query";
    a.k = "attention.self.key";
    a.v = "attention.self.value";
    a.o = "attention.output.dense";
    a.attention_norm = "attention.output.LayerNorm";
    a.mlp_norm = "output.LayerNorm";
    a.up = "intermediate.dense";
    a.down = "output.dense";
    a.default_norm_eps = 1e-12;
    a.residual = Residual::post_norm;
    a.activation_key = "hidden_act";
    a.default_activation = "gelu";
    a.causal = false;
    a.positions = PositionScheme::learned;
    return a;
}

/// modeling_gpt2.py: Conv1D c_attn (q|k|v columns), ln_1/ln_2 pre-norm, gelu_new.
Architecture gpt2() {
    Architecture a;
    a.model_type = "gpt2";
    a.roots = {"transformer.", ""};
    a.token_embedding = "wte.weight";
    a.position_embedding = "wpe.weight";
    a.layer = "h.{}.";
    a.qkv = QkvLayout::conv1d_fused;
    a.q = "attn.c_attn";
    a.o = "attn.c_proj";
    a.o_conv1d = true;
    a.attention_norm = "ln_1";
    a.mlp_norm = "ln_2";
    a.mlp = MlpLayout::plain_conv1d;
    a.up = "mlp.c_fc";
    a.down = "mlp.c_proj";
    a.final_norm = "ln_f";
    a.activation_key = "activation_function";
    a.default_activation = "gelu_new";
    a.positions = PositionScheme::learned;
    return a;
}

/// modeling_gpt_neox.py: per-head fused query_key_value, partial RoPE, parallel residual.
Architecture gpt_neox() {
    Architecture a;
    a.model_type = "gpt_neox";
    a.roots = {"gpt_neox.", ""};
    a.token_embedding = "embed_in.weight";
    a.layer = "layers.{}.";
    a.qkv = QkvLayout::per_head_fused;
    a.q = "attention.query_key_value";
    a.o = "attention.dense";
    a.attention_norm = "input_layernorm";
    a.mlp_norm = "post_attention_layernorm";
    a.up = "mlp.dense_h_to_4h";
    a.down = "mlp.dense_4h_to_h";
    a.final_norm = "final_layer_norm";
    a.residual = Residual::parallel; // use_parallel_residual (default true)
    a.activation_key = "hidden_act";
    a.default_activation = "gelu";
    a.rope = true;
    a.default_partial_rotary = 0.25;
    return a;
}

/// modeling_gptj.py: one ln_1 for attention and MLP in parallel, interleaved rotary_dim.
Architecture gptj() {
    Architecture a;
    a.model_type = "gptj";
    a.roots = {"transformer.", ""};
    a.token_embedding = "wte.weight";
    a.layer = "h.{}.";
    a.q = "attn.q_proj";
    a.k = "attn.k_proj";
    a.v = "attn.v_proj";
    a.o = "attn.out_proj";
    a.attention_norm = "ln_1";
    a.up = "mlp.fc_in";
    a.down = "mlp.fc_out";
    a.final_norm = "ln_f";
    a.residual = Residual::parallel;
    a.activation_key = "activation_function";
    a.default_activation = "gelu_new";
    a.rope = true;
    a.rope_style = RopeStyle::interleaved;
    a.default_rotary_dim = 64; // GPTJConfig(rotary_dim=64)
    return a;
}

/// modeling_gemma.py: (1 + w) RMSNorm, embeddings · √E, gelu_pytorch_tanh.
Architecture gemma() {
    Architecture a = llama_like("gemma");
    a.norm_weight_offset = 1.0;
    a.embed_scale_sqrt = true;
    a.activation_key = "hidden_activation"; // hidden_act is ignored (GemmaMLP)
    a.default_activation = "gelu_pytorch_tanh";
    a.default_head_dim = 256; // GemmaConfig(head_dim=256)
    return a;
}

/// modeling_qwen3.py: llama with q_norm/k_norm (RMSNorm over each head's features).
Architecture qwen3() {
    Architecture a = llama_like("qwen3");
    a.q_norm = "self_attn.q_norm";
    a.k_norm = "self_attn.k_norm";
    a.default_head_dim = 128; // Qwen3Config(head_dim=128)
    return a;
}

/// modeling_olmo2.py: q_norm/k_norm over the whole projection, no pre-norms: the norms
/// on attention's and the MLP's outputs.
Architecture olmo2() {
    Architecture a = llama_like("olmo2");
    a.attention_norm.clear();
    a.mlp_norm.clear();
    a.attention_post_norm = "post_attention_layernorm";
    a.mlp_post_norm = "post_feedforward_layernorm";
    a.q_norm = "self_attn.q_norm";
    a.k_norm = "self_attn.k_norm";
    a.qk_norm_scope = QkNormScope::projection;
    a.default_norm_eps = 1e-5; // Olmo2Config(rms_norm_eps=1e-5)
    return a;
}

/// modeling_gemma2.py: Gemma's with sandwich norms (pre and post of attention and MLP);
/// softcapping, query_pre_attn_scalar and the sliding layers come from the config.
Architecture gemma2(const std::string& type) {
    Architecture a = gemma();
    a.model_type = type;
    a.mlp_norm = "pre_feedforward_layernorm";
    a.attention_post_norm = "post_attention_layernorm";
    a.mlp_post_norm = "post_feedforward_layernorm";
    return a;
}

/// modeling_gemma3.py (Gemma3TextModel): Gemma 2's block with q_norm/k_norm per head
/// ((1 + w) RMSNorm), its sliding layers on their own RoPE base.
Architecture gemma3_text() {
    Architecture a = gemma2("gemma3_text");
    a.q_norm = "self_attn.q_norm";
    a.k_norm = "self_attn.k_norm";
    a.default_rope_theta = 1e6; // Gemma3TextConfig(rope_theta=1_000_000)
    return a;
}

/// modeling_starcoder2.py: llama's attention (biases when use_bias), LayerNorm
/// (norm_epsilon), a plain c_fc/c_proj MLP, sliding_window when the config sets one.
Architecture starcoder2() {
    Architecture a = llama_like("starcoder2");
    a.norm = NormKind::layer_norm;
    a.mlp = MlpLayout::plain;
    a.up = "mlp.c_fc";
    a.gate.clear();
    a.down = "mlp.c_proj";
    a.default_norm_eps = 1e-5;
    a.default_activation = "gelu_pytorch_tanh";
    return a;
}

/// modeling_phi.py (Phi-1/2): one input_layernorm for attention and MLP in parallel,
/// dense (with bias), partial RoPE (0.5), fc1/fc2, final_layernorm; q_layernorm and
/// k_layernorm (LayerNorm over each head, shared by the heads) when qk_layernorm.
Architecture phi() {
    Architecture a = llama_like("phi");
    a.o = "self_attn.dense";
    a.norm = NormKind::layer_norm;
    a.mlp_norm.clear();
    a.mlp = MlpLayout::plain;
    a.up = "mlp.fc1";
    a.gate.clear();
    a.down = "mlp.fc2";
    a.final_norm = "final_layernorm";
    a.residual = Residual::parallel;
    a.default_activation = "gelu_new";
    a.default_partial_rotary = 0.5;
    a.default_norm_eps = 1e-5;
    a.q_norm = "self_attn.q_layernorm"; // qk_layernorm only (read_switches)
    a.k_norm = "self_attn.k_layernorm";
    return a;
}

/// modeling_stablelm.py: llama's names with LayerNorm, partial RoPE (0.25), biases when
/// use_qkv_bias; per-head q/k LayerNorms (one tensor per head) when qk_layernorm; one
/// input_layernorm in parallel when use_parallel_residual.
Architecture stablelm() {
    Architecture a = llama_like("stablelm");
    a.norm = NormKind::layer_norm;
    a.default_partial_rotary = 0.25;
    a.default_norm_eps = 1e-5;
    a.q_norm = "self_attn.q_layernorm.norms.{}"; // qk_layernorm only (read_switches)
    a.k_norm = "self_attn.k_layernorm.norms.{}";
    return a;
}

/// modeling_mixtral.py: mistral with MixtralSparseMoeBlock (block_sparse_moe: gate, experts
/// w1 gate, w3 up, w2 down; top-k weights renormalized).
Architecture mixtral() {
    Architecture a = llama_like("mixtral");
    a.router = "block_sparse_moe.gate";
    a.expert = "block_sparse_moe.experts.{}.";
    a.expert_gate = "w1";
    a.expert_up = "w3";
    a.expert_down = "w2";
    a.default_norm_eps = 1e-5;
    return a;
}

/// modeling_qwen2_moe.py: qwen2 with Qwen2MoeSparseMoeBlock (mlp.gate, mlp.experts.{}, a
/// shared expert under sigmoid(shared_expert_gate)); dense layers keep llama's mlp names.
Architecture qwen2_moe() {
    Architecture a = llama_like("qwen2_moe");
    a.router = "mlp.gate";
    a.expert = "mlp.experts.{}.";
    a.expert_gate = "gate_proj";
    a.expert_up = "up_proj";
    a.expert_down = "down_proj";
    a.shared_expert = "mlp.shared_expert.";
    a.shared_expert_gate = "mlp.shared_expert_gate";
    return a;
}

/// modeling_phi3.py: fused qkv_proj and gate_up_proj.
Architecture phi3() {
    Architecture a = llama_like("phi3");
    a.qkv = QkvLayout::rows_fused;
    a.q = "self_attn.qkv_proj";
    a.k.clear();
    a.v.clear();
    a.mlp = MlpLayout::gated_fused;
    a.up = "mlp.gate_up_proj";
    a.gate.clear();
    a.default_norm_eps = 1e-5;
    return a;
}

/// modeling_opt.py: learned positions at offset 2, do_layer_norm_before, ReLU.
Architecture opt() {
    Architecture a;
    a.model_type = "opt";
    a.roots = {"model.decoder.", "decoder."};
    a.token_embedding = "embed_tokens.weight";
    a.position_embedding = "embed_positions.weight";
    a.layer = "layers.{}.";
    a.q = "self_attn.q_proj";
    a.k = "self_attn.k_proj";
    a.v = "self_attn.v_proj";
    a.o = "self_attn.out_proj";
    a.attention_norm = "self_attn_layer_norm";
    a.mlp_norm = "final_layer_norm";
    a.up = "fc1";
    a.down = "fc2";
    a.final_norm = "final_layer_norm";
    a.fixed_norm_eps = true; // nn.LayerNorm's default 1e-5
    a.activation_key = "activation_function";
    a.default_activation = "relu";
    a.positions = PositionScheme::attention_mask;
    a.position_offset = 2;
    return a;
}

/// modeling_roberta.py: BERT's layout, positions counted from padding_idx + 1.
Architecture roberta() {
    Architecture a = bert_like("roberta");
    a.positions = PositionScheme::roberta;
    return a;
}

/// modeling_distilbert.py: q_lin..out_lin, sa_layer_norm, ffn, no token types.
Architecture distilbert() {
    Architecture a = bert_like("distilbert");
    a.token_type_embedding.clear();
    a.layer = "transformer.layer.{}.";
    a.q = "attention.q_lin";
    a.k = "attention.k_lin";
    a.v = "attention.v_lin";
    a.o = "attention.out_lin";
    a.attention_norm = "sa_layer_norm";
    a.mlp_norm = "output_layer_norm";
    a.up = "ffn.lin1";
    a.down = "ffn.lin2";
    a.fixed_norm_eps = true; // LayerNorm(eps=1e-12) in the code
    a.activation_key = "activation";
    return a;
}

/// modeling_gpt_bigcode.py: GPT-2's names and learned positions with nn.Linear weights;
/// c_attn rows q (E), then k and v (one head each: multi_query, the default), or per head
/// q|k|v (view(H, 3D)) without multi_query.
Architecture gpt_bigcode() {
    Architecture a = gpt2();
    a.model_type = "gpt_bigcode";
    a.qkv = QkvLayout::rows_fused;
    a.o_conv1d = false;
    a.mlp = MlpLayout::plain;
    a.default_activation = "gelu_pytorch_tanh";
    return a;
}

/// modeling_falcon.py: word_embeddings, query_key_value (multi_query: rows q, then one k
/// and v head; read_falcon sets the other layouts), dense, RoPE, LayerNorm, attention and
/// MLP in parallel on input_layernorm (parallel_attn), gelu.
Architecture falcon() {
    Architecture a;
    a.model_type = "falcon";
    a.roots = {"transformer.", ""};
    a.token_embedding = "word_embeddings.weight";
    a.layer = "h.{}.";
    a.qkv = QkvLayout::rows_fused;
    a.q = "self_attention.query_key_value";
    a.o = "self_attention.dense";
    a.attention_norm = "input_layernorm";
    a.up = "mlp.dense_h_to_4h";
    a.down = "mlp.dense_4h_to_h";
    a.final_norm = "ln_f";
    a.residual = Residual::parallel;
    a.activation_key = "activation";
    a.default_activation = "gelu";
    a.rope = true;
    return a;
}

/// modeling_bloom.py: word_embeddings_layernorm, query_key_value fused per head
/// (view(H, 3, D)), ALiBi (build_alibi_tensor's slopes) instead of positions, LayerNorm,
/// BloomGelu (BloomMLP reads no activation from the config).
Architecture bloom() {
    Architecture a;
    a.model_type = "bloom";
    a.roots = {"transformer.", ""};
    a.token_embedding = "word_embeddings.weight";
    a.embedding_norm = "word_embeddings_layernorm";
    a.layer = "h.{}.";
    a.qkv = QkvLayout::per_head_fused;
    a.q = "self_attention.query_key_value";
    a.o = "self_attention.dense";
    a.attention_norm = "input_layernorm";
    a.mlp_norm = "post_attention_layernorm";
    a.up = "mlp.dense_h_to_4h";
    a.down = "mlp.dense_4h_to_h";
    a.final_norm = "ln_f";
    a.default_activation = "bloom_gelu";
    a.alibi = true;
    return a;
}

/// The table, in the order messages list the architectures (architecture_names).
std::vector<Architecture> make_table() {
    return {
        gpt2(),
        gpt_neox(),
        gptj(),
        llama_like("llama"),
        llama_like("mistral"),
        llama_like("qwen2"), // q/k/v biases: read when present
        qwen3(),
        olmo2(),
        gemma(),
        gemma2("gemma2"),
        gemma3_text(),
        phi3(),
        phi(),
        stablelm(),
        starcoder2(),
        gpt_bigcode(),
        falcon(),
        bloom(),
        mixtral(),
        qwen2_moe(),
        opt(),
        bert_like("bert"),
        roberta(),
        distilbert(),
    };
}

/// The value of `key` when present and not null.
const json* value_of(const json& doc, const std::string& key) {
    const auto it = doc.find(key);
    return it == doc.end() || it->is_null() ? nullptr : &*it;
}

using detail::flag;

/// A number > 0 when present; `fallback` when the key is absent; none when it is null.
std::optional<double> positive(const json& doc,
                               const std::string& key,
                               std::optional<double> fallback,
                               const std::string& file) {
    const auto it = doc.find(key);
    if (it == doc.end()) {
        return fallback;
    }
    if (it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_number() || !(it->get<double>() > 0.0) || !std::isfinite(it->get<double>())) {
        throw InputError(file + ": " + key + ": expected a number > 0, got " + io::value_text(*it));
    }
    return it->get<double>();
}

std::size_t needed(const std::optional<HfValue<std::size_t>>& v,
                   const char* what,
                   const std::string& file,
                   std::vector<std::vector<std::string>>& origins) {
    if (!v) {
        throw InputError(file + ": needs the model's " + std::string(what));
    }
    origins.push_back({what, std::to_string(v->value), "config.json: " + v->key});
    return v->value;
}

/// A string value when present and not null.
std::optional<std::string> text(const json& doc, const std::string& key, const std::string& file) {
    const json* v = value_of(doc, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!v->is_string()) {
        throw InputError(file + ": " + key + ": expected a string, got " + io::value_text(*v));
    }
    return v->get<std::string>();
}

/// An integer >= `least` when present, else `fallback`.
std::size_t count_key(const json& doc,
                      const char* key,
                      std::size_t fallback,
                      std::size_t least,
                      const std::string& file) {
    const json* m = value_of(doc, key);
    if (m == nullptr) {
        return fallback;
    }
    if (!m->is_number_unsigned() || m->get<std::size_t>() < least) {
        throw InputError(file + ": " + key + ": expected an integer >= " + std::to_string(least) +
                         ", got " + io::value_text(*m));
    }
    return m->get<std::size_t>();
}

/// The experts: Mixtral's num_local_experts (8) and num_experts_per_tok (2), always
/// renormalized; Qwen2-MoE's num_experts (60), num_experts_per_tok (4), norm_topk_prob
/// (false), and its dense layers (mlp_only_layers, and those off decoder_sparse_step).
void read_experts(ModelSpec& s, const json& doc, const std::string& type, const std::string& file) {
    const bool mixtral = type == "mixtral";
    s.experts =
        count_key(doc, mixtral ? "num_local_experts" : "num_experts", mixtral ? 8 : 60, 1, file);
    s.experts_per_token = count_key(doc, "num_experts_per_tok", mixtral ? 2 : 4, 1, file);
    if (s.experts_per_token > s.experts) {
        throw InputError(file + ": num_experts_per_tok " + std::to_string(s.experts_per_token) +
                         " is more than the " + std::to_string(s.experts) + " experts");
    }
    s.normalize_experts = mixtral || flag(doc, "norm_topk_prob", false, file);
    std::string dense;
    if (!mixtral) {
        const std::size_t step = count_key(doc, "decoder_sparse_step", 1, 1, file);
        s.dense_layers.assign(s.layers, false);
        for (std::size_t l = 0; l < s.layers; ++l) {
            s.dense_layers[l] = (l + 1) % step != 0;
        }
        if (const json* only = value_of(doc, "mlp_only_layers")) {
            if (!only->is_array()) {
                throw InputError(file + ": mlp_only_layers: expected a list of layers, got " +
                                 io::value_text(*only));
            }
            for (const json& l : *only) {
                if (!l.is_number_unsigned() || l.get<std::size_t>() >= s.layers) {
                    throw InputError(file + ": mlp_only_layers: " + io::value_text(l) +
                                     " is not a layer (0 to " + std::to_string(s.layers - 1) + ")");
                }
                s.dense_layers[l.get<std::size_t>()] = true;
            }
        }
        const auto n = std::count(s.dense_layers.begin(), s.dense_layers.end(), true);
        dense = n == 0 ? "" : ", dense MLP on " + std::to_string(n) + " layers";
    }
    s.origins.push_back(
        {"experts",
         std::to_string(s.experts_per_token) + " of " + std::to_string(s.experts) +
             (s.normalize_experts ? ", weights renormalized" : "") +
             (s.arch.shared_expert.empty() ? "" : ", a gated shared expert") + dense,
         mixtral ? "config.json: num_local_experts, num_experts_per_tok"
                 : "config.json: num_experts, num_experts_per_tok, norm_topk_prob"});
}

/// The config's switches that change what a layer computes, each as its model's code reads
/// it: GPT-2's attention scaling, OPT's norms, BERT's position embedding type.
void read_switches(ModelSpec& s,
                   const json& doc,
                   const std::string& type,
                   const std::string& file) {
    if (type == "gpt_bigcode") { // GPTBigCodeAttention: multi_query, one k and v head
        if (flag(doc, "multi_query", true, file)) {
            s.kv_heads = 1;
            for (auto& row : s.origins) {
                if (row[0] == "kv heads") {
                    row = {"kv heads", "1", "config.json: multi_query"};
                }
            }
        } else {
            s.arch.qkv = QkvLayout::per_head_fused;
        }
        if (flag(doc, "add_cross_attention", false, file)) {
            throw InputError(file + ": add_cross_attention true (an encoder's states) is not "
                                    "supported");
        }
    }
    if (type == "gpt2" || type == "gpt_bigcode") { // GPT2Attention._attn, GPTBigCode's
        s.scale_attn_weights = flag(doc, "scale_attn_weights", true, file);
        s.scale_attn_by_inverse_layer_idx =
            type == "gpt2" && flag(doc, "scale_attn_by_inverse_layer_idx", false, file);
        if (!s.scale_attn_weights || s.scale_attn_by_inverse_layer_idx) {
            s.origins.push_back(
                {"scores",
                 std::string(s.scale_attn_weights ? "· 1/√D" : "unscaled") +
                     (s.scale_attn_by_inverse_layer_idx ? ", / (layer + 1)" : ""),
                 "config.json: scale_attn_weights, scale_attn_by_inverse_layer_idx"});
        }
    }
    if (type == "opt") { // OPTDecoder.__init__
        if (!flag(doc, "layer_norm_elementwise_affine", true, file)) {
            throw InputError(file + ": layer_norm_elementwise_affine false (norms without "
                                    "weights) is not supported");
        }
        if (flag(doc, "_remove_final_layer_norm", false, file)) {
            s.arch.final_norm.clear();
        }
    }
    if (type == "gemma2" || type == "gemma3_text") { // Gemma2Attention, Gemma3Attention
        if (flag(doc, "use_bidirectional_attention", false, file)) {
            throw InputError(file + ": use_bidirectional_attention true (no causal mask) is not "
                                    "supported");
        }
        const double scalar = *positive(doc, "query_pre_attn_scalar", 256.0, file);
        s.attention_scale = 1.0 / std::sqrt(scalar);
        // Gemma2Config's attn_logit_softcapping 50; Gemma3TextConfig's none.
        s.softcap = positive(doc,
                             "attn_logit_softcapping",
                             type == "gemma2" ? std::optional(50.0) : std::nullopt,
                             file);
        s.origins.push_back({"scores",
                             "· query_pre_attn_scalar^-0.5 = " + io::format_double(scalar) +
                                 "^-0.5" +
                                 (s.softcap ? ", softcap " + io::format_double(*s.softcap) : ""),
                             "config.json: query_pre_attn_scalar, attn_logit_softcapping"});
    }
    if (!s.arch.router.empty()) {
        read_experts(s, doc, type, file);
    }
    if (type == "bloom" && flag(doc, "apply_residual_connection_post_layernorm", false, file)) {
        throw InputError(file + ": apply_residual_connection_post_layernorm true (the residual "
                                "taken after the norm) is not supported");
    }
    if ((type == "phi" || type == "stablelm") && !flag(doc, "qk_layernorm", false, file)) {
        s.arch.q_norm.clear(); // PhiAttention, StableLmAttention: only with qk_layernorm
        s.arch.k_norm.clear();
    }
    if (type == "bert" || type == "roberta") { // BertSelfAttention: relative_key(_query)
        const auto kind = text(doc, "position_embedding_type", file);
        if (kind && *kind != "absolute") {
            throw InputError(file + ": position_embedding_type '" + io::message_text(*kind, 40) +
                             "' is not supported (only absolute)");
        }
    }
}

/// config.json's layer_types: which layers are "sliding_attention".
std::vector<bool> read_layer_types(const json& types, std::size_t layers, const std::string& file) {
    if (!types.is_array() || types.size() != layers) {
        throw InputError(file + ": layer_types: expected a list of " + std::to_string(layers) +
                         " strings, got " + io::value_text(types));
    }
    std::vector<bool> sliding(layers, false);
    for (std::size_t l = 0; l < layers; ++l) {
        const json& t = types[l];
        const std::string kind = t.is_string() ? t.get<std::string>() : std::string();
        if (kind != "sliding_attention" && kind != "full_attention") {
            throw InputError(file + ": layer_types[" + std::to_string(l) +
                             "]: expected \"sliding_attention\" or \"full_attention\", got " +
                             io::value_text(t));
        }
        sliding[l] = kind == "sliding_attention";
    }
    return sliding;
}

/// The sliding layers when the config lists no layer_types: Qwen2/3 from max_window_layers
/// on (default 28); Gemma 2 every other layer from layer 0 (Gemma2Config: (l + 1) % 2);
/// Gemma 3 all but every sliding_window_pattern-th (Gemma3TextConfig: default 6).
std::vector<bool> default_sliding_layers(const ModelSpec& s,
                                         const json& doc,
                                         const std::string& type,
                                         const std::string& file) {
    const auto count = [&](const char* key, std::size_t fallback, std::size_t least) {
        return count_key(doc, key, fallback, least, file);
    };
    std::vector<bool> sliding(s.layers, false);
    if (type != "gemma2" && type != "gemma3_text") { // qwen2, qwen3, qwen2_moe
        for (std::size_t l = count("max_window_layers", 28, 0); l < s.layers; ++l) {
            sliding[l] = true;
        }
        return sliding;
    }
    const std::size_t pattern = type == "gemma2" ? 2 : count("sliding_window_pattern", 6, 1);
    for (std::size_t l = 0; l < s.layers; ++l) {
        sliding[l] = (l + 1) % pattern != 0;
    }
    return sliding;
}

/// Mistral's and Phi-3's sliding_window (MistralConfig's default 4096 when the key is
/// absent, none when null); Qwen2's and Qwen3's with use_sliding_window, on their
/// layer_types' sliding layers (else from max_window_layers on); Gemma 2's and 3's on
/// theirs (Gemma 3's sliding layers take their own RoPE even without a window).
/// Qwen2's and Qwen3's sliding window: only with use_sliding_window.
bool qwen_slides(const json& doc, const std::string& type, const std::string& file) {
    return (type == "qwen2" || type == "qwen3" || type == "qwen2_moe") &&
           flag(doc, "use_sliding_window", false, file);
}

/// Gemma 2's and 3's sliding layers (with or without a window).
bool gemma_slides(const std::string& type) {
    return type == "gemma2" || type == "gemma3_text";
}

void read_sliding_window(ModelSpec& s,
                         const json& doc,
                         const std::string& type,
                         const std::string& file) {
    s.sliding_window = detail::config_sliding_window(doc, type, file);
    const bool gemma = gemma_slides(type);
    if (!gemma && !(qwen_slides(doc, type, file) && s.sliding_window)) {
        return;
    }
    const json* types = value_of(doc, "layer_types");
    s.sliding_layers = types != nullptr ? read_layer_types(*types, s.layers, file)
                                        : default_sliding_layers(s, doc, type, file);
}

/// Gemma 3's sliding layers' RoPE: the global one's with rope_local_base_freq (default
/// 10000) as theta and no scaling (Gemma3TextModel's rotary_emb_local).
void read_local_rope(ModelSpec& s,
                     const json& doc,
                     const std::string& type,
                     const std::string& file) {
    if (type != "gemma3_text" || !s.rope) {
        return;
    }
    RopeSpec local = *s.rope;
    local.theta = *positive(doc, "rope_local_base_freq", 10000.0, file);
    local.scaling = RopeScaling{};
    std::string from = doc.contains("rope_local_base_freq") ? "config.json: rope_local_base_freq"
                                                            : "the gemma3_text config's default";
    // transformers 5: rope_parameters per layer type.
    const json* per_type = value_of(doc, "rope_parameters");
    if (per_type != nullptr && per_type->is_object() && per_type->contains("sliding_attention")) {
        const auto part = [&](const char* kind, RopeSpec& r) {
            const json* p = value_of(*per_type, kind);
            const std::string where = file + ": rope_parameters." + kind;
            if (p == nullptr || !p->is_object()) {
                throw InputError(where + ": expected an object");
            }
            r.theta = *positive(*p, "rope_theta", r.theta, where);
            r.scaling = parse_rope_scaling(*p, where);
        };
        part("full_attention", *s.rope);
        part("sliding_attention", local);
        from = "config.json: rope_parameters.sliding_attention";
    }
    s.local_rope = local;
    s.origins.push_back({"local positions",
                         "RoPE theta " + io::format_double(local.theta) + " on sliding layers",
                         from});
}

/// The architecture: `layout` when given, else config.json's model_type. Returns its name.
std::string read_architecture(ModelSpec& s,
                              const HfConfig& c,
                              const std::optional<std::string>& layout,
                              const std::string& file) {
    std::string type;
    if (layout) {
        type = *layout;
        s.origins.push_back({"architecture", type, option_name("layout")});
    } else if (c.model_type) {
        type = c.model_type->value;
        s.origins.push_back({"architecture", type, "config.json: model_type"});
    } else {
        throw InputError(file + ": no model_type: give the architecture with --layout (one of " +
                         architecture_names() + ")");
    }
    const Architecture* arch = find_architecture(type);
    if (arch == nullptr) {
        throw InputError(file + ": model_type '" + io::message_text(type, 40) +
                         "' is not supported (supported: " + architecture_names() + ")");
    }
    s.arch = *arch;
    return type;
}

/// The root: the one candidate whose token embedding is there.
std::string model_root(const Architecture& a,
                       const std::vector<std::string>& names,
                       const std::string& type,
                       const std::string& file) {
    std::vector<std::string> roots;
    for (const std::string& r : a.roots) {
        if (std::binary_search(names.begin(), names.end(), r + a.token_embedding)) {
            roots.push_back(r);
        }
    }
    if (roots.empty()) {
        throw InputError(file + ": the tensors are not a " + type + " model's: no '" +
                         a.roots.front() + a.token_embedding + "'");
    }
    return roots.front();
}

/// Layers, hidden size, heads, kv heads and head dim.
void read_sizes(ModelSpec& s, const HfConfig& c, const std::string& type, const std::string& file) {
    auto& o = s.origins;
    const Architecture& a = s.arch;
    s.layers = needed(c.num_layers, "layers", file, o);
    s.hidden = needed(c.hidden_size, "hidden size", file, o);
    s.heads = needed(c.num_heads, "heads", file, o);
    s.kv_heads = c.num_kv_heads ? c.num_kv_heads->value : s.heads;
    o.push_back({"kv heads",
                 std::to_string(s.kv_heads),
                 c.num_kv_heads ? "config.json: " + c.num_kv_heads->key : "= heads"});
    if (s.kv_heads == 0 || s.heads % s.kv_heads != 0) {
        throw InputError(file + ": num_key_value_heads " + std::to_string(s.kv_heads) +
                         " does not divide the " + std::to_string(s.heads) + " heads");
    }
    if (!c.head_dim && a.default_head_dim != 0) {
        s.head_dim = a.default_head_dim;
        o.push_back({"head dim", std::to_string(s.head_dim), "the " + type + " config's default"});
    } else {
        s.head_dim = *hf_head_dim(c);
        o.push_back({"head dim",
                     std::to_string(s.head_dim),
                     c.head_dim ? "config.json: head_dim" : "hidden size / heads"});
    }
}

/// The norm's epsilon: config.json's unless the code fixes it.
void read_norm(ModelSpec& s, const HfConfig& c, const std::string& type) {
    const Architecture& a = s.arch;
    s.norm_eps = a.default_norm_eps;
    std::string eps_from = "the " + type + " code";
    if (c.norm_eps && !a.fixed_norm_eps) {
        s.norm_eps = c.norm_eps->value;
        eps_from = "config.json: " + c.norm_eps->key;
    }
    s.origins.push_back({"norm",
                         std::string(a.norm == NormKind::rms_norm ? "RMSNorm" : "LayerNorm") +
                             (a.norm_weight_offset != 0.0 ? " (1 + w)" : "") + " eps " +
                             io::format_double(s.norm_eps),
                         eps_from});
}

/// The MLP's activation. Returns where it came from.
std::string
read_activation(ModelSpec& s, const json& doc, const std::string& type, const std::string& file) {
    const Architecture& a = s.arch;
    s.activation_name = a.default_activation;
    std::string act_from = "the " + type + " default";
    if (const json* v = a.activation_key.empty() ? nullptr : value_of(doc, a.activation_key)) {
        if (!v->is_string()) {
            throw InputError(file + ": " + a.activation_key + ": expected a string, got " +
                             io::value_text(*v));
        }
        s.activation_name = v->get<std::string>();
        act_from = "config.json: " + a.activation_key;
    }
    s.activation = parse_activation(s.activation_name, file + ": " + a.activation_key);
    return act_from;
}

/// Falcon's layouts (FalconAttention, FalconDecoderLayer): new_decoder_architecture
/// (num_kv_heads groups of query_key_value, ln_attn and ln_mlp when num_ln_in_parallel_attn
/// is 2, its default), else multi_query (one k and v head, the default) or per head
/// q|k|v, and parallel_attn (default true) or post_attention_layernorm before the MLP.
void read_falcon(ModelSpec& s, const json& doc, const std::string& file) {
    if (flag(doc, "alibi", false, file)) {
        throw InputError(file + ": alibi true (Falcon's ALiBi) is not supported");
    }
    const bool parallel = flag(doc, "parallel_attn", true, file);
    std::size_t kv = count_key(doc, "num_kv_heads", s.heads, 1, file);
    kv = count_key(doc, "n_head_kv", kv, 1, file);
    std::string kv_from = "config.json: num_kv_heads";
    if (flag(doc, "new_decoder_architecture", false, file)) {
        if (!parallel) {
            throw InputError(file + ": new_decoder_architecture with parallel_attn false is not "
                                    "supported (FalconDecoderLayer has no such block)");
        }
        if (kv == 0 || s.heads % kv != 0) {
            throw InputError(file + ": num_kv_heads " + std::to_string(kv) +
                             " does not divide the " + std::to_string(s.heads) + " heads");
        }
        s.kv_heads = kv;
        s.arch.qkv = QkvLayout::group_fused;
        if (count_key(doc, "num_ln_in_parallel_attn", 2, 1, file) == 2) {
            s.arch.attention_norm = "ln_attn";
            s.arch.mlp_norm = "ln_mlp";
        }
    } else if (flag(doc, "multi_query", true, file)) {
        s.kv_heads = 1;
        kv_from = "config.json: multi_query";
    } else {
        s.arch.qkv = QkvLayout::per_head_fused;
        s.kv_heads = s.heads;
        kv_from = "= heads (no multi_query)";
    }
    if (!parallel) {
        s.residual = Residual::pre_norm;
        s.arch.mlp_norm = "post_attention_layernorm";
    }
    for (auto& row : s.origins) {
        if (row[0] == "kv heads") {
            row = {"kv heads", std::to_string(s.kv_heads), kv_from};
        }
    }
}

/// The residual form: the architecture's, or GPT-NeoX's and OPT's config switches. Returns
/// where it came from.
std::string
read_residual(ModelSpec& s, const json& doc, const std::string& type, const std::string& file) {
    s.residual = s.arch.residual;
    std::string residual_from = "the " + type + " code";
    if (type == "gpt_neox" && !flag(doc, "use_parallel_residual", true, file)) {
        s.residual = Residual::pre_norm;
        residual_from = "config.json: use_parallel_residual";
    }
    if (type == "falcon") {
        read_falcon(s, doc, file);
        residual_from = "config.json: new_decoder_architecture, parallel_attn";
    }
    if (type == "stablelm" && flag(doc, "use_parallel_residual", false, file)) {
        s.residual = Residual::parallel; // StableLmDecoderLayer: no post_attention_layernorm
        s.arch.mlp_norm.clear();
        residual_from = "config.json: use_parallel_residual";
    }
    if (type == "opt") {
        if (!flag(doc, "do_layer_norm_before", true, file)) {
            s.residual = Residual::post_norm;
            s.arch.final_norm.clear(); // OPTDecoder: final_layer_norm only before-norm
        }
        residual_from = "config.json: do_layer_norm_before";
        if (const json* w = value_of(doc, "word_embed_proj_dim");
            w != nullptr && !(w->is_number_unsigned() && w->get<std::size_t>() == s.hidden)) {
            throw InputError(file + ": word_embed_proj_dim differs from hidden_size "
                                    "(project_in/project_out) and is not supported");
        }
    }
    return residual_from;
}

/// The block: the MLP's activation and the residual form.
void read_block(ModelSpec& s, const json& doc, const std::string& type, const std::string& file) {
    const std::string act_from = read_activation(s, doc, type, file);
    const std::string residual_from = read_residual(s, doc, type, file);
    const bool mlp_gated = s.arch.mlp == MlpLayout::gated || s.arch.mlp == MlpLayout::gated_fused;
    s.origins.push_back(
        {"mlp", std::string(mlp_gated ? "gated " : "") + s.activation_name, act_from});
    const bool post = !s.arch.attention_post_norm.empty();
    s.origins.push_back({"block",
                         s.residual == Residual::pre_norm && post
                             ? (s.arch.attention_norm.empty()
                                    ? "norms after attention and MLP, sequential residual"
                                    : "norms before and after attention and MLP, sequential "
                                      "residual")
                         : s.residual == Residual::pre_norm ? "pre-norm, sequential residual"
                         : s.residual == Residual::post_norm
                             ? "post-norm, sequential residual"
                             : "parallel residual (attention + MLP)",
                         residual_from});
}

/// Positions: RoPE from the config, or learned ones (RoBERTa's from its pad_token_id).
void read_positions(ModelSpec& s,
                    const HfConfig& c,
                    const json& doc,
                    const std::string& type,
                    const std::string& file) {
    const Architecture& a = s.arch;
    auto& o = s.origins;
    if (a.rope) {
        RopeSpec r = hf_rope_spec(c, s.head_dim);
        r.style = a.rope_style;
        if (!c.rope_theta && a.default_rope_theta != 0.0) {
            r.theta = a.default_rope_theta;
        }
        if (!c.rotary_dim && !c.partial_rotary_factor && a.default_partial_rotary != 1.0) {
            r.dim = static_cast<std::size_t>(static_cast<double>(s.head_dim) *
                                             a.default_partial_rotary);
        }
        if (!c.rotary_dim && a.default_rotary_dim != 0) {
            r.dim = a.default_rotary_dim;
        }
        check_rope(r, s.head_dim);
        s.rope = r;
        o.push_back({"positions",
                     std::string("RoPE ") +
                         (r.style == RopeStyle::neox ? "rotate_half" : "interleaved") + ", theta " +
                         io::format_double(r.theta) + ", " +
                         std::to_string(rope_dim(r, s.head_dim)) + " of " +
                         std::to_string(s.head_dim) + " dims",
                     c.rope_theta ? "config.json: " + c.rope_theta->key : "default theta"});
    } else if (a.alibi) {
        o.push_back({"positions", "ALiBi (build_alibi_tensor's slopes)", "the " + type + " code"});
    } else if (a.positions != PositionScheme::none) {
        o.push_back({"positions",
                     a.positions == PositionScheme::roberta
                         ? "learned, from padding_idx + 1 (RoBERTa)"
                     : a.positions == PositionScheme::attention_mask
                         ? "learned, counting the attention mask's tokens, at offset " +
                               std::to_string(a.position_offset)
                         : "learned absolute",
                     "the " + type + " code"});
    }
    if (a.positions == PositionScheme::roberta) {
        if (const json* v = value_of(doc, "pad_token_id")) {
            if (!v->is_number_integer()) {
                throw InputError(file + ": pad_token_id: expected an integer, got " +
                                 io::value_text(*v));
            }
            s.pad_token_id = v->get<std::int64_t>();
        }
    }
}

/// The attention line: causal or not, and the sliding window.
void describe_attention(ModelSpec& s, const json& doc, const std::string& type) {
    const Architecture& a = s.arch;
    std::string window;
    if (s.sliding_window) {
        window = ", sliding window " + std::to_string(*s.sliding_window);
        if (!s.sliding_layers.empty()) {
            const auto n = std::count(s.sliding_layers.begin(), s.sliding_layers.end(), true);
            window += " on " + std::to_string(n) + " of " + std::to_string(s.layers) + " layers";
        }
    }
    s.origins.push_back(
        {"attention",
         std::string(a.causal ? "causal" : "bidirectional") + window,
         s.sliding_window ? (doc.contains("sliding_window") ? "config.json: sliding_window"
                                                            : "the " + type + " config's default")
                          : "the " + type + " code"});
}

} // namespace

const std::vector<Architecture>& architectures() {
    static const std::vector<Architecture> table = make_table();
    return table;
}

const Architecture* find_architecture(std::string_view model_type) {
    for (const Architecture& a : architectures()) {
        if (a.model_type == model_type) {
            return &a;
        }
    }
    return nullptr;
}

std::string architecture_names() {
    std::string out;
    for (const Architecture& a : architectures()) {
        out += (out.empty() ? "" : ", ") + a.model_type;
    }
    return out;
}

Activation parse_activation(std::string_view name, std::string_view where) {
    if (name == "gelu" || name == "gelu_python") { // ACT2FN: both the erf form
        return Activation::gelu_erf;
    }
    if (name == "gelu_new" || name == "gelu_pytorch_tanh") {
        return Activation::gelu_tanh;
    }
    if (name == "relu") {
        return Activation::relu;
    }
    if (name == "silu" || name == "swish") {
        return Activation::silu;
    }
    if (name == "bloom_gelu") {
        return Activation::gelu_bloom;
    }
    throw InputError(
        std::string(where) + ": activation '" + io::message_text(name, 40) +
        "' is not supported (supported: gelu, gelu_python, gelu_new, gelu_pytorch_tanh, "
        "relu, silu, swish)");
}

ModelSpec model_spec(const fs::path& config,
                     const std::vector<std::string>& names,
                     const std::optional<std::string>& layout) {
    const std::vector<std::uint8_t> bytes = io::read_file(config);
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return model_spec(text, config, names, layout);
}

ModelSpec model_spec(std::string_view text,
                     const fs::path& config,
                     const std::vector<std::string>& names,
                     const std::optional<std::string>& layout) {
    const std::string file = config.string();
    const HfConfig c = parse_hf_config(text, config);
    const json doc = io::parse_json_text(text, file);
    ModelSpec s;
    const std::string type = read_architecture(s, c, layout, file);
    s.root = model_root(s.arch, names, type, file);
    read_sizes(s, c, type, file);
    read_norm(s, c, type);
    read_block(s, doc, type, file);
    read_positions(s, c, doc, type, file);
    read_switches(s, doc, type, file);
    read_sliding_window(s, doc, type, file);
    read_local_rope(s, doc, type, file);
    describe_attention(s, doc, type);
    return s;
}

std::vector<std::string> describe_model(const ModelSpec& spec) {
    std::vector<std::string> out;
    for (const auto& row : spec.origins) {
        out.push_back(row[0] + ": " + row[1] + " (" + row[2] + ")");
    }
    return out;
}

bool detail::flag(const json& doc, const std::string& key, bool fallback, const std::string& file) {
    const json* v = value_of(doc, key);
    if (v == nullptr) {
        return fallback;
    }
    if (!v->is_boolean()) {
        throw InputError(file + ": " + key + ": expected true or false, got " + io::value_text(*v));
    }
    return v->get<bool>();
}

std::optional<std::size_t>
detail::config_sliding_window(const json& doc, const std::string& type, const std::string& file) {
    const bool none_by_default = type == "phi3" || type == "starcoder2" || type == "mixtral";
    if (type != "mistral" && !none_by_default && !qwen_slides(doc, type, file) &&
        !gemma_slides(type)) {
        return std::nullopt;
    }
    const auto it = doc.find("sliding_window");
    if (it == doc.end()) {
        // MistralConfig, Qwen2Config, Gemma2Config, Gemma3TextConfig: 4096; Starcoder2Config,
        // MixtralConfig, Phi3Config: none
        return none_by_default ? std::nullopt : std::optional<std::size_t>(4096);
    }
    if (it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_number_unsigned() || it->get<std::size_t>() == 0) {
        throw InputError(file + ": sliding_window: expected a positive integer, got " +
                         io::value_text(*it));
    }
    return it->get<std::size_t>();
}

} // namespace attn::model

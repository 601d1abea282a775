// The architecture table and a model's spec from config.json. Each entry follows its
// Hugging Face modeling_<type>.py: tensor names, fused layouts, norm and its placement,
// positions, MLP and activation, residual form.
#include "attn/model/architecture.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/number_text.hpp"
#include "attn/model/hf_config.hpp"

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

/// The table, in the order messages list the architectures (architecture_names).
std::vector<Architecture> make_table() {
    return {
        gpt2(),
        gpt_neox(),
        gptj(),
        llama_like("llama"),
        llama_like("mistral"),
        llama_like("qwen2"), // q/k/v biases: read when present
        gemma(),
        phi3(),
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

bool flag(const json& doc, const std::string& key, bool fallback, const std::string& file) {
    const json* v = value_of(doc, key);
    if (v == nullptr) {
        return fallback;
    }
    if (!v->is_boolean()) {
        throw InputError(file + ": " + key + ": expected true or false, got " + io::value_text(*v));
    }
    return v->get<bool>();
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

/// The config's switches that change what a layer computes, each as its model's code reads
/// it: GPT-2's attention scaling, OPT's norms, BERT's position embedding type.
void read_switches(ModelSpec& s,
                   const json& doc,
                   const std::string& type,
                   const std::string& file) {
    if (type == "gpt2") { // GPT2Attention._attn
        s.scale_attn_weights = flag(doc, "scale_attn_weights", true, file);
        s.scale_attn_by_inverse_layer_idx =
            flag(doc, "scale_attn_by_inverse_layer_idx", false, file);
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
    if (type == "bert" || type == "roberta") { // BertSelfAttention: relative_key(_query)
        const auto kind = text(doc, "position_embedding_type", file);
        if (kind && *kind != "absolute") {
            throw InputError(file + ": position_embedding_type '" + io::message_text(*kind, 40) +
                             "' is not supported (only absolute)");
        }
    }
}

/// Mistral's and Phi-3's sliding_window (MistralConfig's default 4096 when the key is
/// absent, none when null); Qwen2's with use_sliding_window, on its layer_types'
/// sliding layers (Qwen2Config: from max_window_layers on).
void read_sliding_window(ModelSpec& s,
                         const json& doc,
                         const std::string& type,
                         const std::string& file) {
    const bool qwen2 = type == "qwen2" && flag(doc, "use_sliding_window", false, file);
    if (type != "mistral" && type != "phi3" && !qwen2) {
        return;
    }
    const auto it = doc.find("sliding_window");
    if (it == doc.end()) {
        if (type != "phi3") {
            s.sliding_window = 4096; // MistralConfig, Qwen2Config
        }
    } else if (!it->is_null()) {
        if (!it->is_number_unsigned() || it->get<std::size_t>() == 0) {
            throw InputError(file + ": sliding_window: expected a positive integer, got " +
                             io::value_text(*it));
        }
        s.sliding_window = it->get<std::size_t>();
    }
    if (!qwen2 || !s.sliding_window) {
        return;
    }
    s.sliding_layers.assign(s.layers, false);
    if (const json* types = value_of(doc, "layer_types")) {
        if (!types->is_array() || types->size() != s.layers) {
            throw InputError(file + ": layer_types: expected a list of " +
                             std::to_string(s.layers) + " strings, got " + io::value_text(*types));
        }
        for (std::size_t l = 0; l < s.layers; ++l) {
            const json& t = (*types)[l];
            const std::string kind = t.is_string() ? t.get<std::string>() : std::string();
            if (kind != "sliding_attention" && kind != "full_attention") {
                throw InputError(file + ": layer_types[" + std::to_string(l) +
                                 "]: expected \"sliding_attention\" or \"full_attention\", got " +
                                 io::value_text(t));
            }
            s.sliding_layers[l] = kind == "sliding_attention";
        }
        return;
    }
    std::size_t from = 28; // Qwen2Config(max_window_layers=28)
    if (const json* m = value_of(doc, "max_window_layers")) {
        if (!m->is_number_unsigned()) {
            throw InputError(file + ": max_window_layers: expected an integer >= 0, got " +
                             io::value_text(*m));
        }
        from = m->get<std::size_t>();
    }
    for (std::size_t l = from; l < s.layers; ++l) {
        s.sliding_layers[l] = true;
    }
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
    if (const json* v = value_of(doc, a.activation_key)) {
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
    s.origins.push_back({"block",
                         s.residual == Residual::pre_norm ? "pre-norm, sequential residual"
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

} // namespace attn::model

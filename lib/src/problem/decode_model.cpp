// The real-model fields of the problem document: a checkpoint's config.json (heads, RoPE,
// norm eps; the fields override it), "token_ids" looked up in the checkpoint's
// embeddings as the layer input, the layout's pre-attention norm ("norm": false turns it
// off) and "rope" (on by default for the llama layout).
#include "attn/embedding.hpp"
#include "attn/error.hpp"
#include "attn/io/number_text.hpp"
#include "attn/model/checkpoint_model.hpp"
#include "attn/model/hf_config.hpp"
#include "attn/model/rope_field.hpp"
#include "attn/problem/plan.hpp"
#include "decode_detail.hpp"

#include <charconv>
#include <cmath>

namespace attn::problem::detail {

namespace fs = std::filesystem;
using io::Array;
using io::ArrayKind;
using nlohmann::json;

namespace {

/// A number as explain prints it: the shortest text that reads back.
std::string number(double x) {
    if (x == std::floor(x) && std::fabs(x) < 1e15) {
        return std::to_string(static_cast<std::int64_t>(x)); // 500000, not 5e+05
    }
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, x);
    return std::string(buf, r.ptr);
}

/// "config.json n_head": a config value's origin.
template <class T> std::string origin(const model::HfConfig& c, const model::HfValue<T>& v) {
    return c.file.filename().string() + " " + v.key;
}

fs::path resolved(const fs::path& p, const fs::path& base) {
    return p.is_absolute() ? p : base / p;
}

/// The eps of the layout's norms: config.json, else the layout's default.
double norm_eps(DecodeContext& cx, model::ParamsLayout layout, std::string* from) {
    if (cx.config && cx.config->norm_eps) {
        *from = origin(*cx.config, *cx.config->norm_eps);
        return cx.config->norm_eps->value;
    }
    *from = std::string(model::layout_name(layout)) + " default";
    return model::layout_default_norm_eps(layout);
}

/// The head dim RoPE rotates: of the query heads.
std::size_t query_head_dim(const Problem& p) {
    return p.direct_heads ? p.q4.shape()[3] : plan_problem(p).d;
}

void decode_rope(DecodeContext& cx, Problem& p) {
    const std::size_t d = query_head_dim(p);
    // The checkpoint's own RoPE (llama), with config.json's values.
    const auto config_spec = [&](std::string* from) {
        if (cx.config) {
            if (cx.config->rope_theta) {
                *from = origin(*cx.config, *cx.config->rope_theta);
            }
            return model::hf_rope_spec(*cx.config, d);
        }
        return RopeSpec{};
    };
    std::optional<RopeSpec> spec;
    std::string from;
    if (p.layout && model::layout_uses_rope(*p.layout)) {
        from = std::string(model::layout_name(*p.layout)) + " layout";
        spec = config_spec(&from);
    }
    std::optional<model::RopeField> field;
    if (cx.has("rope")) {
        const json& j = cx.doc["rope"];
        if (j.is_boolean() && !j.get<bool>()) {
            if (spec) {
                p.settings.push_back({"rope", "off", "given"});
            }
            spec.reset();
        } else {
            field = model::parse_rope_field(j, "rope");
            RopeSpec s = spec ? *spec : config_spec(&from);
            // The keys given override the checkpoint's values; true keeps them.
            if (j.is_number() || (j.is_object() && j.contains("theta"))) {
                s.theta = field->spec.theta;
                from = "given";
            }
            if (j.is_object()) {
                if (j.contains("style")) {
                    s.style = field->spec.style;
                }
                if (j.contains("dim")) {
                    s.dim = field->spec.dim;
                }
                if (j.contains("scaling")) {
                    s.scaling = field->spec.scaling;
                }
            }
            if (from.empty()) {
                from = "given";
            }
            spec = s;
        }
    }
    if (!spec) {
        return;
    }
    if (d > 0) {
        check_rope(*spec, d);
    }
    p.rope = spec;
    p.rope_positions =
        field ? model::resolve_rope_positions(*field, p.lq, p.lk) : rope_positions(p.lq, p.lk);
    std::string value = "theta " + number(spec->theta) + ", " +
                        (spec->style == RopeStyle::neox ? "neox" : "interleaved") + ", dim " +
                        std::to_string(rope_dim(*spec, d)) + " of " + std::to_string(d);
    if (spec->scaling.type == RopeScalingType::linear) {
        value += ", linear scaling x" + number(spec->scaling.factor);
    } else if (spec->scaling.type == RopeScalingType::llama3) {
        value += ", llama3 scaling x" + number(spec->scaling.factor);
    }
    p.settings.push_back({"rope", value, from});
}

void decode_norm(DecodeContext& cx, Problem& p) {
    const bool wanted = !cx.has("norm") || boolean(cx.doc["norm"], "norm");
    if (!p.layout || !cx.checkpoint || !model::layout_norm_kind(*p.layout)) {
        return;
    }
    if (!wanted) {
        p.settings.push_back({"norm", "off", "given"});
        return;
    }
    std::string from;
    const double eps = norm_eps(cx, *p.layout, &from);
    std::optional<model::SafetensorsFile> file;
    try {
        file.emplace(cx.checkpoint->file);
    } catch (const InputError& e) {
        throw InputError(std::string("params: ") + e.marked());
    }
    const std::optional<Norm> norm =
        model::load_layer_norm(*file, *p.layout, p.prefix, eps, p.sources);
    const std::string name =
        model::block_prefix(p.prefix) + std::string(model::layout_norm_name(*p.layout));
    if (!norm) {
        p.settings.push_back({"norm", "none", "no " + name + ".weight in the checkpoint"});
        return;
    }
    p.settings.push_back(
        {"norm",
         std::string(norm->kind == NormKind::layer_norm ? "LayerNorm " : "RMSNorm ") + name +
             ", eps " + number(eps),
         "checkpoint; eps: " + from});
    for_each_precision(p, [&]<class T>(BasicInputs<T>& in) { in.norm = in_precision<T>(*norm); });
}

/// Token ids feed the first layer: a checkpoint with hub names of numbered layers (GPT-2's
/// h.N.attn.*, BERT's bare encoder.layer.N.attention.*) and no "prefix" is read at its
/// first layer's, as a model folder's first layer is; `params` as given otherwise.
json first_layer_params(const json& params, const fs::path& base) {
    const bool has_prefix = params.is_object() && params.contains("prefix");
    const json& file = params.is_object() && params.contains("file") ? params["file"] : params;
    if (has_prefix || !file.is_string()) {
        return params;
    }
    std::optional<model::SafetensorsFile> st;
    try {
        st.emplace(resolved(file.get<std::string>(), base));
    } catch (const InputError&) {
        return params; // load_checkpoint_params names it
    }
    std::vector<std::string> names;
    for (const model::SafetensorsEntry& e : st->header().tensors) {
        names.push_back(e.name);
    }
    const std::optional<model::CheckpointLayers> layers = model::checkpoint_layers(st->header());
    if (!model::detect_layouts(names).empty() || !layers || layers->prefixes.empty() ||
        layers->prefixes.front().empty()) {
        return params;
    }
    json out = params.is_object() ? params : json{{"file", file}};
    out["prefix"] = layers->prefixes.front();
    return out;
}

} // namespace

const model::CheckpointParams& checkpoint_params(DecodeContext& cx, Problem& p) {
    if (!cx.checkpoint) {
        const json params =
            cx.has("token_ids") ? first_layer_params(cx.doc["params"], cx.base) : cx.doc["params"];
        cx.checkpoint = model::load_checkpoint_params(
            params,
            cx.base,
            p.sources,
            cx.config && cx.config->model_type ? cx.config->model_type->value : "");
    }
    return *cx.checkpoint;
}

void decode_config(DecodeContext& cx, Problem& p) {
    if (!cx.has("params") || !model::is_checkpoint_params(cx.doc["params"])) {
        return;
    }
    const json& params = cx.doc["params"];
    const json& file = params.is_object() ? params["file"] : params;
    if (!file.is_string()) {
        return; // load_checkpoint_params names it
    }
    std::optional<fs::path> config;
    if (params.is_object() && params.contains("config") && !params["config"].is_null()) {
        if (!params["config"].is_string()) {
            throw InputError("params.config: expected the path of a config.json, got " +
                             type_name(params["config"]));
        }
        config = resolved(params["config"].get<std::string>(), cx.base);
    } else {
        config = model::hf_config_beside(resolved(file.get<std::string>(), cx.base));
    }
    if (!config) {
        return;
    }
    try {
        cx.config = model::read_hf_config(*config);
    } catch (const InputError& e) {
        throw InputError(std::string("params.config: ") + e.marked());
    }
    p.sources.push_back({"params.config", *config, {}, std::nullopt, 0.0f});
}

void decode_token_ids(DecodeContext& cx, Problem& p) {
    for (const char* other : {"query", "input", "key", "context"}) {
        if (cx.has(other)) {
            throw InputError(std::string("token_ids: give either token_ids or ") + other +
                             " as the layer input, not both");
        }
    }
    if (!cx.has("params") || !model::is_checkpoint_params(cx.doc["params"])) {
        throw InputError("token_ids: needs a checkpoint to look the ids up in (params: a "
                         ".safetensors file)");
    }
    const Array ids = cx.load(p, "token_ids", ArrayKind::numeric, nullptr);
    if (ids.shape.size() != 1 && ids.shape.size() != 2) {
        throw InputError("token_ids: expected shape [L] or [B, L], got " + shape_string(ids.shape));
    }
    const std::size_t b = ids.shape.size() == 2 ? ids.shape[0] : 1;
    TokenIds t = TokenIds::from_shape({b, ids.shape.back()});
    for (std::size_t i = 0; i < t.size(); ++i) {
        const double v =
            ids.values64.empty() ? static_cast<double>(ids.values[i]) : ids.values64[i];
        if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9.0e15) {
            throw InputError("token_ids: value " + number(v) + " at index " + std::to_string(i) +
                             " is not an integer id");
        }
        t.data()[i] = static_cast<std::int64_t>(v);
    }
    const model::CheckpointParams& c = checkpoint_params(cx, p);
    std::optional<model::SafetensorsFile> file;
    try {
        file.emplace(c.file);
    } catch (const InputError& e) {
        throw InputError(std::string("params: ") + e.marked());
    }
    std::string from;
    const Embeddings e =
        model::load_embeddings(*file, c.layout, norm_eps(cx, c.layout, &from), p.sources);
    for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
        in.query_src = embed(t, in_precision<T>(e));
        in.key_src = in.query_src;
        in.value_src = in.query_src;
    });
    p.batched = ids.shape.size() == 2;
    p.batch = b;
    p.lq = p.lk = t.shape()[1];
    p.settings.push_back({"input",
                          "embeddings of token_ids " + shape_string(ids.shape),
                          c.file.filename().string()});
}

namespace {

/// One layer's weights compute the attention the problem describes: what config.json says
/// changes it beyond the heads and RoPE is refused, never silently dropped, unless the
/// problem gives the field itself (a whole model folder applies them, model_run.cpp).
void check_config_attention(DecodeContext& cx, const Problem& p) {
    if (!cx.config) {
        return;
    }
    const model::HfConfig& c = *cx.config;
    const std::string whole = "or run the whole model (params: its folder, with token_ids)";
    if (c.sliding_window && !cx.has("window") && p.lk > c.sliding_window->value) {
        const std::size_t w = c.sliding_window->value;
        throw InputError(origin(c, *c.sliding_window) + " " + std::to_string(w) +
                         ": each query of this model sees only its last " + std::to_string(w) +
                         " keys, which one layer's weights do not apply to " +
                         std::to_string(p.lk) + " keys: give \"window\": [" +
                         std::to_string(w - 1) + ", 0] with causal, " + whole);
    }
    const bool gpt2 = c.model_type && c.model_type->value == "gpt2";
    const bool unscaled = c.scale_attn_weights && !c.scale_attn_weights->value;
    const bool by_layer =
        c.scale_attn_by_inverse_layer_idx && c.scale_attn_by_inverse_layer_idx->value;
    if (gpt2 && (unscaled || by_layer) && !cx.has("scale")) {
        const std::string keys =
            unscaled && by_layer ? origin(c, *c.scale_attn_weights) + " false, " +
                                       c.scale_attn_by_inverse_layer_idx->key + " true"
            : unscaled ? origin(c, *c.scale_attn_weights) + " false"
                       : origin(c, *c.scale_attn_by_inverse_layer_idx) + " true";
        const std::string what = unscaled && by_layer ? "by the layer's index + 1, not by √d"
                                 : unscaled           ? "by 1, not by √d"
                                                      : "by √d · (the layer's index + 1)";
        throw InputError(keys + ": this GPT-2 divides each layer's scores " + what +
                         ", which one layer's weights do not say: give \"scale\", " + whole);
    }
}

} // namespace

void decode_model(DecodeContext& cx, Problem& p) {
    if (cx.has("norm") && !p.layout) {
        (void)boolean(cx.doc["norm"], "norm");
    }
    check_config_attention(cx, p);
    decode_norm(cx, p);
    decode_rope(cx, p);
}

} // namespace attn::problem::detail

// Decoding the contract's problem document into tensors and specs. Every check names the field and,
// for shapes, gives the expected and the actual shape in the user's own rank (not the core's rank
// 4). This file holds the decoding context, the presets, the sources and heads, and calls the
// other field groups in order: decode_params.cpp (params, init), decode_arrays.cpp (array
// fields), decode_fields.cpp (scale, causal, masks, score features, labels).
#include "attn/error.hpp"
#include "attn/io/number_text.hpp"
#include "attn/problem/problem.hpp"
#include "attn/suggest.hpp"
#include "decode_detail.hpp"

#include <algorithm>
#include <set>
#include <string_view>

namespace attn::problem {

using io::message_text;

const std::vector<std::string>& problem_fields() {
    static const std::vector<std::string> fields = {"query",          "key",
                                                    "value",          "input",
                                                    "context",        "params",
                                                    "init",           "num_heads",
                                                    "num_kv_heads",   "scale",
                                                    "causal",         "mask",
                                                    "bias",           "key_padding_mask",
                                                    "query_tokens",   "key_tokens",
                                                    "tokens",         "id",
                                                    "variant",        "mask_convention",
                                                    "window",         "window_align",
                                                    "softcap",        "alibi",
                                                    "sinks",          "return",
                                                    "top_k",          "precision",
                                                    "rope",           "norm",
                                                    "token_ids",      "average_heads",
                                                    "varlen",         "text",
                                                    "special_tokens", "rollout_fusion",
                                                    "select_heads",   "query_rows",
                                                    "weights_dtype",  "activations"};
    return fields;
}

const std::vector<std::string>& array_fields() {
    static const std::vector<std::string> fields = {"query",
                                                    "key",
                                                    "value",
                                                    "input",
                                                    "context",
                                                    "mask",
                                                    "bias",
                                                    "key_padding_mask",
                                                    "token_ids",
                                                    "hidden_states"};
    return fields;
}

namespace detail {

namespace {

/// JSON text of a value we echo back; invalid UTF-8 is replaced rather than thrown on.
std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

const char* variant_names = "dot, scaled, self, masked-self, cross, multihead";

/// Rank-4 [B, H, L, D] query, key and value: the heads are given, no projections.
void decode_direct_heads(
    DecodeContext& cx, Problem& p, Array& q_arr, std::optional<Tensor>& q_t, const char* q_field) {
    std::optional<Tensor> k_t, v_t; // rank-4 .npy inputs, read straight into tensors
    if (!cx.has("key")) {
        throw InputError(std::string(q_field) +
                         ": a rank-4 [B, H, L, D] query needs rank-4 key and value");
    }
    if (cx.has("params") || cx.has("init")) {
        throw InputError("params: projections apply to rank-2/3 inputs, not to rank-4 "
                         "[B, H, L, D] heads");
    }
    Array k_arr = cx.load(p, "key", ArrayKind::numeric, &k_t);
    Array v_arr = cx.load(p, "value", ArrayKind::numeric, &v_t);
    const auto& qs = q_arr.shape;
    if (k_arr.shape.size() != 4 || (k_arr.shape[0] != qs[0] && k_arr.shape[0] != 1) ||
        k_arr.shape[3] != qs[3] || k_arr.shape[1] == 0 || qs[1] % k_arr.shape[1] != 0) {
        throw InputError::shape("key", {qs[0], kAnyDim, kAnyDim, qs[3]}, k_arr.shape);
    }
    const auto& ks = k_arr.shape;
    if (v_arr.shape.size() != 4 || v_arr.shape[0] != ks[0] || v_arr.shape[1] != ks[1] ||
        v_arr.shape[2] != ks[2]) {
        throw InputError::shape("value", {ks[0], ks[1], ks[2], kAnyDim}, v_arr.shape);
    }
    if (cx.has("num_heads") && positive_int(cx.doc["num_heads"], "num_heads") != qs[1]) {
        throw InputError("num_heads: " + shown(cx.doc["num_heads"]) + " disagrees with query " +
                         shape_string(qs) + " (" + std::to_string(qs[1]) + " heads)");
    }
    if (cx.has("num_kv_heads") && positive_int(cx.doc["num_kv_heads"], "num_kv_heads") != ks[1]) {
        throw InputError("num_kv_heads: " + shown(cx.doc["num_kv_heads"]) + " disagrees with key " +
                         shape_string(ks) + " (" + std::to_string(ks[1]) + " heads)");
    }
    p.direct_heads = true;
    p.batched = true;
    for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
        in.q4 = to_tensor4<T>(q_arr, q_t);
        in.k4 = to_tensor4<T>(k_arr, k_t);
        in.v4 = to_tensor4<T>(v_arr, v_t);
    });
    p.num_heads = qs[1];
    p.num_kv_heads = ks[1];
    p.batch = qs[0];
    p.lq = qs[2];
    p.lk = ks[2];
}

/// Rank-2/3 sources: query or input, then key and value, context, or the query itself.
void decode_projected_sources(DecodeContext& cx, Problem& p, Array& q_arr, const char* q_field) {
    for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
        in.query_src = to_tensor3<T>(q_arr, q_field, "[L, E]");
    });
    p.batched = q_arr.shape.size() == 3;
    if (cx.has("key")) {
        Array k_arr = cx.load(p, "key", ArrayKind::numeric, nullptr);
        for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
            in.key_src = to_tensor3<T>(k_arr, "key", "[L, E]");
        });
        Array v_arr = cx.load(p, "value", ArrayKind::numeric, nullptr);
        for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
            in.value_src = to_tensor3<T>(v_arr, "value", "[L, E]");
        });
    } else if (cx.has("context")) {
        Array c_arr = cx.load(p, "context", ArrayKind::numeric, nullptr);
        for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
            in.key_src = to_tensor3<T>(c_arr, "context", "[Lk, Ec]");
            in.value_src = in.key_src;
        });
    } else {
        for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
            in.key_src = in.query_src;
            in.value_src = in.query_src;
        });
    }
    p.batch = p.query_src.shape()[0];
    p.lq = p.query_src.shape()[1];
    p.lk = p.key_src.shape()[1];
    for (const auto* src : {&p.key_src, &p.value_src}) {
        const char* name = cx.has("key") ? (src == &p.key_src ? "key" : "value") : "context";
        if (src->shape()[0] != p.batch && src->shape()[0] != 1) {
            throw InputError::shape(name, {p.batch, kAnyDim, kAnyDim}, shape_of(*src));
        }
    }
    if (p.value_src.shape()[0] != p.key_src.shape()[0] ||
        p.value_src.shape()[1] != p.key_src.shape()[1]) {
        throw InputError::shape(
            "value", {p.key_src.shape()[0], p.lk, kAnyDim}, shape_of(p.value_src));
    }
}

/// num_heads and num_kv_heads of projected sources: the fields, else a checkpoint's
/// config.json, else 1 head (and the key/value heads the checkpoint's shapes imply).
void decode_heads(DecodeContext& cx, Problem& p) {
    const auto from_config = [&](const char* field,
                                 const std::optional<model::HfValue<std::size_t>>& v,
                                 std::size_t fallback) {
        if (cx.has(field)) {
            const std::size_t n = positive_int(cx.doc[field], field);
            p.settings.push_back({field, std::to_string(n), "given"});
            return n;
        }
        if (v) {
            p.settings.push_back({field,
                                  std::to_string(v->value),
                                  cx.config->file.filename().string() + " " + v->key});
            return v->value;
        }
        return fallback;
    };
    const bool config = cx.config.has_value();
    p.num_heads = from_config("num_heads", config ? cx.config->num_heads : std::nullopt, 1);
    p.num_kv_heads =
        from_config("num_kv_heads", config ? cx.config->num_kv_heads : std::nullopt, p.num_heads);
    cx.heads_known = cx.has("num_heads") || (config && cx.config->num_heads);
    cx.kv_heads_known = cx.has("num_kv_heads") || (config && cx.config->num_kv_heads);
    if (p.num_heads % p.num_kv_heads != 0) {
        throw InputError("num_kv_heads: " + std::to_string(p.num_kv_heads) +
                         " does not divide num_heads " + std::to_string(p.num_heads));
    }
}

} // namespace

std::string type_name(const json& j) {
    return j.type_name();
}

/// A value quoted in a message: one line, and short whatever the input holds.
std::string shown(const json& j) {
    return message_text(dump(j), 80);
}

/// A key or string quoted in a message.
std::string shown(const std::string& s) {
    return message_text(s, 80);
}

std::size_t positive_int(const json& j, const char* name) {
    if (!j.is_number_integer() || j.get<std::int64_t>() < 1 || j.get<std::int64_t>() > (1 << 20)) {
        throw InputError(std::string(name) + ": expected a positive integer, got " + shown(j));
    }
    return static_cast<std::size_t>(j.get<std::int64_t>());
}

bool boolean(const json& j, const char* name) {
    if (!j.is_boolean()) {
        throw InputError(std::string(name) + ": expected true or false, got " + shown(j));
    }
    return j.get<bool>();
}

bool DecodeContext::has(const char* f) {
    return (doc.contains(f) && !doc[f].is_null()) || given.count(f) != 0;
}

Array DecodeContext::load(Problem& p,
                          const char* field,
                          ArrayKind kind,
                          std::optional<Tensor>* rank4) {
    if (const auto it = given.find(field); it != given.end()) {
        Array a = handed_over(std::move(it->second),
                              kind == ArrayKind::numeric ? precision : Precision::f32);
        // The sources become tensors through to_tensor3/to_tensor4, which read borrowed
        // values (io::Array::floats: in place, or copied once); other fields own theirs.
        const std::string_view f = field;
        if (f != "query" && f != "key" && f != "value" && f != "input" && f != "context") {
            a.copy_borrowed();
        }
        record_source(p.sources, field, {}, a, kind);
        return a;
    }
    return load_array(doc[field], field, kind, base, p.sources, precision, rank4);
}

/// Presets: explicit fields win.
void decode_presets(DecodeContext& cx) {
    json& doc = cx.doc;
    std::string& variant = cx.variant;
    if (cx.has("variant")) {
        if (!doc["variant"].is_string()) {
            throw InputError("variant: expected one of " + std::string(variant_names));
        }
        variant = doc["variant"].get<std::string>();
        static const std::set<std::string> known = {
            "dot", "scaled", "self", "masked-self", "cross", "multihead"};
        if (known.count(variant) == 0) {
            throw InputError("variant: unknown variant '" + shown(variant) + "' (expected one of " +
                             variant_names + ")");
        }
    }
    const bool projected_variant = variant == "self" || variant == "masked-self" ||
                                   variant == "cross" || variant == "multihead";
    if (variant == "dot" && !doc.contains("scale")) {
        doc["scale"] = 1;
    }
    if (variant == "masked-self" && !cx.has("causal") && !cx.has("mask") && !cx.has("bias")) {
        doc["causal"] = true;
    }
    if (projected_variant && !cx.has("params") && !cx.has("init")) {
        throw InputError("variant: '" + variant +
                         "' needs projection weights: give params or init");
    }
    if (variant == "cross" && !cx.has("context") && !cx.has("key")) {
        throw InputError("variant: 'cross' needs context (the key/value source)");
    }
}

void decode_id_and_precision(DecodeContext& cx, Problem& p) {
    if (cx.doc.contains("id")) {
        p.id = cx.doc["id"]; // null too: echoed as given
    }
    // Precision first: it decides how the arrays are read.
    if (cx.has("precision")) {
        const json& pr = cx.doc["precision"];
        if (pr == "f64") {
            p.precision = Precision::f64;
        } else if (pr != "f32") {
            throw InputError("precision: expected \"f32\" or \"f64\", got " + shown(pr));
        }
    }
    if (p.precision == Precision::f64) {
        p.doubles.emplace();
    }
    cx.precision = p.precision;
    if (cx.has("weights_dtype")) {
        const json& w = cx.doc["weights_dtype"];
        if (w != "f32" && w != "f16") {
            throw InputError(option_name("weights_dtype") + ": expected \"f32\" or \"f16\", got " +
                             shown(w));
        }
        p.weights_f16 = w == "f16";
    }
    if (cx.has("activations")) {
        const json& v = cx.doc["activations"];
        const std::optional<model::Activations> a =
            v.is_string() ? model::activations_named(v.get<std::string>()) : std::nullopt;
        if (!a) {
            throw InputError(option_name("activations") +
                             ": expected \"f32\", \"q8_0\", \"q8\" or \"bf16\", got " + shown(v));
        }
        p.activations = *a;
    }
}

void decode_sources(DecodeContext& cx, Problem& p) {
    if (cx.has("query") && cx.has("input")) {
        throw InputError("query: give either query or input as the query source, not both");
    }
    if (!cx.has("query") && !cx.has("input") && !cx.has("token_ids")) {
        throw InputError("problem: no query source: give query (with key and value) or input");
    }
    if (cx.has("context") && (cx.has("key") || cx.has("value"))) {
        throw InputError("context: give either context or key/value as the key/value source");
    }
    if (cx.has("key") != cx.has("value")) {
        throw InputError(std::string(cx.has("key") ? "value" : "key") +
                         ": missing (key and value come together)");
    }
    if (cx.has("query") && !cx.has("key") && !cx.has("context")) {
        throw InputError("key: missing (query needs key and value, or context)");
    }
    if (cx.has("token_ids")) {
        decode_token_ids(cx, p);
        decode_heads(cx, p);
        decode_projections(cx, p);
        return;
    }
    const char* q_field = cx.has("query") ? "query" : "input";
    std::optional<Tensor> q_t; // a rank-4 .npy input, read straight into its tensor
    Array q_arr = cx.load(p, q_field, ArrayKind::numeric, &q_t);
    if (q_arr.shape.size() == 4) {
        decode_direct_heads(cx, p, q_arr, q_t, q_field);
    } else {
        decode_projected_sources(cx, p, q_arr, q_field);
        decode_heads(cx, p);
        decode_projections(cx, p);
    }
}

void check_given(const DecodeContext& cx) {
    const std::vector<std::string>& array_fields = problem::array_fields();
    for (const auto& [field, array] : cx.given) {
        if (field == "hidden_states") { // the every-layer problem: decode_layer_stack
            throw InputError("hidden_states: gives every layer's input (an every-layer "
                             "problem, not one layer's)");
        }
        const bool param = field.rfind("params.", 0) == 0;
        if (param && (!cx.doc.contains("params") || !cx.doc["params"].is_object())) {
            throw InputError(field + ": a weight handed over needs params as an object");
        }
        if (!param &&
            std::find(array_fields.begin(), array_fields.end(), field) == array_fields.end()) {
            throw InputError(shown(field) + ": not an array field (arrays: query, key, value, "
                                            "input, context, mask, bias, key_padding_mask, "
                                            "token_ids, params.NAME)");
        }
        if (!param && cx.doc.contains(field) && !cx.doc[field].is_null()) {
            throw InputError(field + ": given twice (in the problem and as an array)");
        }
    }
}

} // namespace detail

Problem
decode_problem(const nlohmann::json& doc_in, const std::filesystem::path& base, ArrayValues given) {
    using namespace detail;
    if (!doc_in.is_object()) {
        throw InputError("problem: expected a JSON object, got " + type_name(doc_in));
    }
    DecodeContext cx;
    cx.doc = doc_in;
    cx.base = base;
    cx.given = std::move(given);
    // hidden_states and layers belong to the every-layer document (problem/layers.hpp).
    if (cx.has("hidden_states")) {
        throw InputError("hidden_states: every-layer problems are computed by attn compute and "
                         "attn explain, one problem at a time");
    }
    if (cx.has("layers")) {
        throw InputError(cx.has("token_ids")
                             ? "layers: selects layers of a whole model (params: its folder, or "
                               "a .safetensors file with config.json beside it or \"config\"); "
                               "a checkpoint without a config runs token_ids through one layer"
                             : "layers: selects layers of hidden_states, which is not given");
    }
    const auto& fields = problem_fields();
    for (const auto& [key, value] : cx.doc.items()) {
        if (std::find(fields.begin(), fields.end(), key) == fields.end()) {
            throw InputError("problem: unknown field '" + shown(key) + "'" +
                             did_you_mean(key, fields));
        }
    }
    check_given(cx);
    decode_presets(cx);
    Problem p;
    decode_id_and_precision(cx, p);
    decode_config(cx, p);
    decode_text(cx, p);
    decode_sources(cx, p);
    decode_model(cx, p);
    decode_scale_and_causal(cx, p);
    decode_masks(cx, p);
    decode_score_features(cx, p);
    decode_labels(cx, p);
    decode_selection(cx, p);
    return p;
}

} // namespace attn::problem

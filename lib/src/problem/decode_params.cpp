// The projection weights of the problem document: "params" (inline arrays, a .json file,
// or a checkpoint) and "init" (seeded random weights within the memory limit).
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/number_text.hpp"
#include "attn/layer.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/suggest.hpp"
#include "decode_detail.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

namespace attn::problem::detail {

namespace fs = std::filesystem;
using io::Array;
using io::ArrayKind;
using io::format_size;
using io::memory_limit;
using io::message_text;
using io::parse_json_text;
using io::read_file;
using model::implied_num_kv_heads;
using model::is_checkpoint_params;
using nlohmann::json;

namespace {

/// Splits rows [3E, ...] of a fused in-projection into q, k, v thirds.
template <class T> std::array<T, 3> split_thirds(const T& fused, const std::string& name) {
    const std::size_t rows = fused.shape()[0];
    if (rows % 3 != 0) {
        throw InputError(name + ": first dimension " + std::to_string(rows) +
                         " is not 3·embed_dim (q, k, v stacked)");
    }
    const std::size_t e = rows / 3;
    const std::size_t row_size = rows == 0 ? 0 : fused.size() / rows;
    std::array<T, 3> parts;
    for (std::size_t p = 0; p < 3; ++p) {
        auto shape = fused.shape();
        shape[0] = e;
        parts[p] = T::from_shape(shape);
        std::copy(fused.data() + p * e * row_size,
                  fused.data() + (p + 1) * e * row_size,
                  parts[p].data());
    }
    return parts;
}

/// params.KEY in T as a rank-N tensor: a [out, in] weight (N = 2) or a [out] bias (N = 1);
/// nothing when the params object does not hold KEY.
template <class T, std::size_t N>
std::optional<xt::xtensor<T, N>> param_tensor(const std::map<std::string, Array>& arrays,
                                              const char* key) {
    const auto it = arrays.find(key);
    if (it == arrays.end()) {
        return std::nullopt;
    }
    const Array& a = it->second;
    if (a.shape.size() != N) {
        throw InputError::rank(
            std::string("params.") + key, N, N == 2 ? "[out, in] weight" : "[out] bias", a.shape);
    }
    typename xt::xtensor<T, N>::shape_type shape{};
    std::copy(a.shape.begin(), a.shape.end(), shape.begin());
    return array_tensor<xt::xtensor<T, N>>(a, shape);
}

/// Builds nn.Linear-layout projections in T from the arrays of a params object, keyed by
/// their names there.
template <class T>
BasicProjections<T> build_projections(const std::map<std::string, Array>& arrays) {
    using M = xt::xtensor<T, 2>;
    using V = xt::xtensor<T, 1>;
    const auto matrix = [&](const char* key) { return param_tensor<T, 2>(arrays, key); };
    const auto vector = [&](const char* key) { return param_tensor<T, 1>(arrays, key); };
    auto set_once = [](auto& slot, auto&& value, const char* a, const char* b) {
        if (!value) {
            return;
        }
        if (slot) {
            throw InputError(std::string("params: both ") + a + " and " + b +
                             " give the same weight");
        }
        slot = std::forward<decltype(value)>(value);
    };

    BasicProjections<T> p;
    p.w_q = matrix("w_q");
    p.w_k = matrix("w_k");
    p.w_v = matrix("w_v");
    p.w_o = matrix("w_o");
    p.b_q = vector("b_q");
    p.b_k = vector("b_k");
    p.b_v = vector("b_v");
    p.b_o = vector("b_o");
    if (auto fused = matrix("in_proj_weight")) {
        auto parts = split_thirds(*fused, "params.in_proj_weight");
        set_once(p.w_q, std::optional<M>(std::move(parts[0])), "w_q", "in_proj_weight");
        set_once(p.w_k, std::optional<M>(std::move(parts[1])), "w_k", "in_proj_weight");
        set_once(p.w_v, std::optional<M>(std::move(parts[2])), "w_v", "in_proj_weight");
    }
    if (auto fused = vector("in_proj_bias")) {
        auto parts = split_thirds(*fused, "params.in_proj_bias");
        set_once(p.b_q, std::optional<V>(std::move(parts[0])), "b_q", "in_proj_bias");
        set_once(p.b_k, std::optional<V>(std::move(parts[1])), "b_k", "in_proj_bias");
        set_once(p.b_v, std::optional<V>(std::move(parts[2])), "b_v", "in_proj_bias");
    }
    set_once(p.w_q, matrix("q_proj_weight"), "w_q", "q_proj_weight");
    set_once(p.w_k, matrix("k_proj_weight"), "w_k", "k_proj_weight");
    set_once(p.w_v, matrix("v_proj_weight"), "w_v", "v_proj_weight");
    set_once(p.w_o, matrix("out_proj.weight"), "w_o", "out_proj.weight");
    set_once(p.b_o, vector("out_proj.bias"), "b_o", "out_proj.bias");
    return p;
}

/// The input projections come together: once any of w_q, w_k, w_v is given (by any of its
/// names), a missing one is an error naming it rather than a silent identity; "w_k": null
/// says "identity" explicitly.
void check_input_projections(const json& j) {
    const bool fused = j.contains("in_proj_weight") && !j["in_proj_weight"].is_null();
    static const std::array<std::array<const char*, 2>, 3> names = {
        {{"w_q", "q_proj_weight"}, {"w_k", "k_proj_weight"}, {"w_v", "v_proj_weight"}}};
    std::vector<std::string> given, missing;
    for (const auto& n : names) {
        if (fused || j.contains(n[0]) || j.contains(n[1])) {
            given.emplace_back(n[0]);
        } else {
            missing.emplace_back(n[0]);
        }
    }
    if (given.empty() || missing.empty()) {
        return;
    }
    std::string list;
    for (const std::string& g : given) {
        list += (list.empty() ? "" : ", ") + g;
    }
    throw InputError("params." + missing.front() + ": missing (params gives " + list +
                     "; a missing input projection is never taken as the identity: give it, "
                     "or \"" +
                     missing.front() + "\": null for the identity)");
}

/// A state dict saved with numpy's savez as "params": its arrays by the names a params
/// object takes (w_q, ..., in_proj_weight, out_proj.weight: {"w_q": "FILE.npz:w_q", ...},
/// read as any array field, in either precision), else by a checkpoint layer's names at
/// prefix "" (q_proj.weight, c_attn.weight, self.query.weight: mapped as a .safetensors
/// layer is, in float32). Nothing when `full` does not name a .npz archive.
struct NpzParams {
    json refs;         ///< array name -> "FILE.npz:name"
    bool flat = false; ///< every name is one a params object takes
};
std::optional<NpzParams> npz_params(const fs::path& full, const std::vector<std::string>& flat) {
    const std::optional<io::NpzRef> ref = io::parse_npz_ref(full.string());
    if (!ref || !ref->member.empty()) {
        return std::nullopt;
    }
    const std::vector<std::uint8_t> bytes = read_file(full);
    const std::vector<std::string> members =
        io::npz_members(bytes, "params: " + message_text(full.string()));
    json j = json::object();
    for (const std::string& m : members) {
        j[m] = full.string() + ":" + m;
    }
    const bool all_flat = std::all_of(members.begin(), members.end(), [&](const auto& m) {
        return std::find(flat.begin(), flat.end(), m) != flat.end();
    });
    return NpzParams{std::move(j), all_flat};
}

/// The projections of a .npz state dict in a checkpoint layer's names (npz_params).
Projections npz_layer(const json& refs, const fs::path& full, Problem& problem) {
    const std::string what = "params: " + message_text(full.string());
    std::vector<std::string> names;
    for (const auto& [name, value] : refs.items()) {
        names.push_back(name);
    }
    const std::vector<model::ParamsLayout> found = model::detect_layouts(names);
    if (found.size() != 1) {
        throw InputError(what + ": " +
                         (found.empty() ? "no attention weights among its arrays (expected the "
                                          "names of a params object or of a checkpoint layer: "
                                          "w_q, in_proj_weight, q_proj.weight, c_attn.weight, "
                                          "self.query.weight)"
                                        : "its arrays match more than one layout"));
    }
    std::map<std::string, Array> tensors;
    for (const auto& [name, value] : refs.items()) {
        tensors.emplace(name, io::read_npz_array(full, name));
    }
    problem.sources.push_back({"params", full, {}, std::nullopt, 0.0f});
    problem.layout = found.front();
    return model::map_layout(found.front(), tensors, what, "");
}

/// The weights a params object may hold, in load order: w_q, w_k, w_v, w_o, b_q, ..., then
/// the state-dict names.
const std::vector<std::string>& params_names() {
    static const std::vector<std::string> names = {"w_q",
                                                   "w_k",
                                                   "w_v",
                                                   "w_o",
                                                   "b_q",
                                                   "b_k",
                                                   "b_v",
                                                   "b_o",
                                                   "in_proj_weight",
                                                   "in_proj_bias",
                                                   "q_proj_weight",
                                                   "k_proj_weight",
                                                   "v_proj_weight",
                                                   "out_proj.weight",
                                                   "out_proj.bias"};
    return names;
}

/// Weights handed over already read ("params.w_q", a front end's arrays), taken out of
/// cx.given: they join an inline params object `j` as if it held them ("<array>").
std::map<std::string, Array> take_given_weights(DecodeContext& cx, json& j) {
    std::map<std::string, Array> given;
    for (auto it = cx.given.begin(); it != cx.given.end();) {
        if (it->first.rfind("params.", 0) != 0) {
            ++it;
            continue;
        }
        const std::string key = it->first.substr(7);
        if (!j.is_object()) {
            throw InputError(it->first +
                             ": a weight handed over needs params as an object, "
                             "not " +
                             type_name(j));
        }
        if (j.contains(key)) {
            throw InputError(it->first + ": given twice (in params and as an array)");
        }
        j[key] = "<array>";
        given[key] = std::move(it->second);
        given[key].copy_borrowed(); // weights are read into tensors of their own
        it = cx.given.erase(it);
    }
    return given;
}

/// Every key of a params object is a weight it may hold (params_names()).
void check_weight_names(const json& j) {
    const std::vector<std::string>& names = params_names();
    for (const auto& [key, value] : j.items()) {
        if (std::find(names.begin(), names.end(), key) == names.end()) {
            const std::string suggestion = did_you_mean(key, names);
            throw InputError("params: unknown weight '" + shown(key) + "'" +
                             (suggestion.empty()
                                  ? " (expected w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o or the "
                                    "names of an nn.MultiheadAttention state dict)"
                                  : suggestion));
        }
    }
}

/// The weights of params object `j` (paths relative to `base`) and those handed over, by
/// name, each recorded in problem.sources.
std::map<std::string, Array> load_params_arrays(const json& j,
                                                std::map<std::string, Array>& given,
                                                const fs::path& base,
                                                Problem& problem) {
    std::vector<ProblemSource>& sources = problem.sources;
    std::map<std::string, Array> arrays;
    for (const std::string& key : params_names()) {
        if (const auto it = given.find(key); it != given.end()) {
            arrays[key] = handed_over(std::move(it->second), problem.precision);
            record_source(sources, "params." + key, {}, arrays[key], ArrayKind::numeric);
        } else if (j.contains(key) && !j[key].is_null()) { // null: the identity, as if absent
            arrays[key] = load_array(j[key],
                                     std::string("params.") + key,
                                     ArrayKind::numeric,
                                     base,
                                     sources,
                                     problem.precision);
        }
    }
    return arrays;
}

/// Decodes "params" into the projections of each precision p holds.
/// Returns what the weights came from when that does not carry the head count (a
/// checkpoint, an nn.MultiheadAttention state dict), else nullptr.
const char*
decode_params(DecodeContext& cx, const json& j_in, const fs::path& base_in, Problem& problem) {
    std::vector<ProblemSource>& sources = problem.sources;
    if (is_checkpoint_params(j_in)) {
        // attn/model/safetensors.hpp. F32/F16/BF16 tensors are exact in float32: widening them
        // for f64 loses nothing.
        const model::CheckpointParams& c = checkpoint_params(cx, problem);
        for_each_precision(problem, [&]<class T>(BasicInputs<T>& in) {
            in.projections = in_precision<T>(c.projections);
        });
        problem.layout = c.layout;
        problem.prefix = c.prefix;
        return "a checkpoint";
    }
    const std::vector<std::string>& names = params_names();
    json j = j_in;
    fs::path base = base_in;
    std::map<std::string, Array> given = take_given_weights(cx, j);
    if (j.is_string()) {
        const fs::path p = j.get<std::string>();
        const fs::path full = p.is_absolute() ? p : base_in / p;
        if (full.extension() != ".gguf") { // a GGUF checkpoint is the checkpoint readers' call
            io::refuse_foreign_formats(full, "params", ".json, .npz or .safetensors");
        }
        if (const std::optional<NpzParams> npz = npz_params(full, names)) {
            if (!npz->flat) {
                const Projections proj = npz_layer(npz->refs, full, problem);
                for_each_precision(problem, [&]<class T>(BasicInputs<T>& in) {
                    in.projections = in_precision<T>(proj);
                });
                return "a checkpoint layer";
            }
            return decode_params(cx, npz->refs, base_in, problem);
        }
        std::vector<std::uint8_t> bytes;
        try {
            bytes = read_file(full);
        } catch (const InputError& e) {
            throw InputError(std::string("params: ") + e.marked());
        }
        j = parse_json_text(
            std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
            "params: " + message_text(full.string()));
        base = full.parent_path();
        sources.push_back({"params", full, {}, std::nullopt, 0.0f});
    }
    if (!j.is_object()) {
        throw InputError("params: expected an object of weights or the path of a .json file "
                         "holding one, got " +
                         type_name(j));
    }
    check_weight_names(j);
    check_input_projections(j);
    const std::map<std::string, Array> arrays = load_params_arrays(j, given, base, problem);
    for_each_precision(problem, [&]<class T>(BasicInputs<T>& in) {
        in.projections = build_projections<T>(arrays);
    });
    for (const char* key : {"in_proj_weight", "q_proj_weight", "out_proj.weight"}) {
        if (arrays.count(key) != 0) {
            return "an nn.MultiheadAttention state dict";
        }
    }
    return nullptr;
}

/// Refuses random init weights that would not fit memory_limit(), before they are drawn:
/// w_q [dim, e_q], w_k [kv_dim, e_k], w_v [kv_dim, e_v], w_o [e_q, dim] as random_projections
/// makes them. Saturating arithmetic: an empty source may carry any feature size.
void check_init_fits(std::size_t e_q,
                     std::size_t e_k,
                     std::size_t e_v,
                     std::size_t dim,
                     std::size_t num_heads,
                     std::size_t num_kv_heads,
                     bool output_projection) {
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    auto mul = [](std::uint64_t a, std::uint64_t b) { return a != 0 && b > max / a ? max : a * b; };
    auto add = [](std::uint64_t a, std::uint64_t b) { return a > max - b ? max : a + b; };
    const std::uint64_t kv_dim = mul(dim / std::max<std::size_t>(num_heads, 1), num_kv_heads);
    std::uint64_t values = add(mul(dim, e_q), mul(kv_dim, add(e_k, e_v)));
    if (output_projection) {
        values = add(values, mul(e_q, dim));
    }
    const std::uint64_t bytes = mul(values, sizeof(float));
    const std::uint64_t limit = memory_limit();
    if (bytes > limit) {
        throw InputError("init: random projection weights of dim " + std::to_string(dim) +
                         " for features " + std::to_string(e_q) + " need " + format_size(bytes) +
                         ", more than the memory limit of " + format_size(limit) +
                         " (--max-memory)");
    }
}

/// Decodes "init" into seeded random projections, drawn in each precision p holds.
void decode_init(const json& init, const std::string& variant, Problem& p) {
    if (!init.is_object()) {
        throw InputError("init: expected an object {\"seed\": N, \"dim\": D}, got " +
                         type_name(init));
    }
    std::uint64_t seed = 0;
    std::size_t dim = p.query_src.shape()[2];
    bool output_projection = variant == "multihead";
    bool bias = false;
    for (const auto& [key, value] : init.items()) {
        if (key == "seed") {
            if (!value.is_number_integer() || value.get<std::int64_t>() < 0) {
                if (!value.is_number_unsigned()) {
                    throw InputError("init.seed: expected a non-negative integer, got " +
                                     shown(value));
                }
            }
            seed = value.get<std::uint64_t>();
        } else if (key == "dim") {
            dim = positive_int(value, "init.dim");
        } else if (key == "output_projection") {
            output_projection = boolean(value, "init.output_projection");
        } else if (key == "bias") {
            bias = boolean(value, "init.bias");
        } else {
            const std::string suggestion =
                did_you_mean(key, {"seed", "dim", "output_projection", "bias"});
            throw InputError("init: unknown field '" + shown(key) + "'" +
                             (suggestion.empty() ? " (expected seed, dim, output_projection, bias)"
                                                 : suggestion));
        }
    }
    check_init_fits(p.query_src.shape()[2],
                    p.key_src.shape()[2],
                    p.value_src.shape()[2],
                    dim,
                    p.num_heads,
                    p.num_kv_heads,
                    output_projection);
    // The same draw in each precision the problem holds.
    for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
        in.projections = random_projections<T>({.seed = seed,
                                                .e_q = p.query_src.shape()[2],
                                                .e_k = p.key_src.shape()[2],
                                                .e_v = p.value_src.shape()[2],
                                                .dim = dim,
                                                .num_heads = p.num_heads,
                                                .num_kv_heads = p.num_kv_heads,
                                                .output_projection = output_projection,
                                                .bias = bias});
    });
}

} // namespace

void decode_projections(DecodeContext& cx, Problem& p) {
    if (cx.has("params") && cx.has("init")) {
        throw InputError("init: give either params or init, not both");
    }
    if (cx.has("params")) {
        const char* origin = decode_params(cx, cx.doc["params"], cx.base, p);
        const auto& w_q = p.projections->w_q;
        if (origin != nullptr && !cx.heads_known && w_q && w_q->shape()[0] > 1) {
            // The likeliest mistake with a state dict or a checkpoint without its config.json:
            // neither says how many heads.
            const std::string dim = std::to_string(w_q->shape()[0]);
            p.warnings.push_back(
                p.layout ? "num_heads: no config.json beside the checkpoint and no --heads, so 1 "
                           "head of dim " +
                               dim +
                               ": a checkpoint, which does not carry the head count, needs "
                               "num_heads (--heads H) as the model has it, or --config FILE"
                         : "num_heads: not given, so 1 head of dim " + dim +
                               ", but params come from " + origin +
                               ", which does not carry the head count: give num_heads (--heads "
                               "H) as the model has it");
        }
        if (!cx.kv_heads_known && is_checkpoint_params(cx.doc["params"])) {
            // Llama-style GQA: the checkpoint's k_proj rows give the key/value heads.
            p.num_kv_heads = implied_num_kv_heads(*p.projections, p.num_heads);
        }
    } else if (cx.has("init")) {
        decode_init(cx.doc["init"], cx.variant, p);
    }
}

} // namespace attn::problem::detail

// Decoding the contract's problem document into tensors and specs. Every check names the field and,
// for shapes, gives the expected and the actual shape in the user's own rank (not the core's rank
// 4).
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/mask_convention.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/layer.hpp"
#include "attn/problem/problem.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

namespace attn::problem {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace attn::io;

const std::vector<std::string>& problem_fields() {
    static const std::vector<std::string> fields = {"query",        "key",
                                                    "value",        "input",
                                                    "context",      "params",
                                                    "init",         "num_heads",
                                                    "num_kv_heads", "scale",
                                                    "causal",       "mask",
                                                    "bias",         "key_padding_mask",
                                                    "query_tokens", "key_tokens",
                                                    "tokens",       "id",
                                                    "variant",      "mask_convention",
                                                    "window",       "window_align",
                                                    "softcap",      "alibi",
                                                    "sinks",        "return",
                                                    "top_k",        "precision"};
    return fields;
}

namespace {

std::string type_name(const json& j) {
    return j.type_name();
}

/// JSON text of a value we echo back; invalid UTF-8 is replaced rather than thrown on.
std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

/// A value quoted in a message: one line, and short whatever the input holds.
std::string shown(const json& j) {
    return message_text(dump(j), 80);
}

/// A key or string quoted in a message.
std::string shown(const std::string& s) {
    return message_text(s, 80);
}

/// Records where an array came from and its first value --check-finite refuses.
void record_source(std::vector<ProblemSource>& sources,
                   const std::string& name,
                   const fs::path& path,
                   const std::vector<std::size_t>& shape,
                   std::span<const float> values,
                   ArrayKind kind) {
    ProblemSource s{name, path, shape, std::nullopt, 0.0f};
    if (kind == ArrayKind::numeric) {
        // Masks load as numbers only under mask_convention "additive", where -inf blocks.
        const bool is_bias = name == "bias" || name == "mask" || name == "key_padding_mask";
        const auto bad = std::find_if(values.begin(), values.end(), [&](float x) {
            return is_bias ? (std::isnan(x) || x == std::numeric_limits<float>::infinity())
                           : !std::isfinite(x);
        });
        if (bad != values.end()) {
            s.first_nonfinite = static_cast<std::size_t>(bad - values.begin());
            s.nonfinite_value = *bad;
        }
    }
    sources.push_back(std::move(s));
}

void record_source(std::vector<ProblemSource>& sources,
                   const std::string& name,
                   const fs::path& path,
                   const Array& a,
                   ArrayKind kind) {
    record_source(sources, name, path, a.shape, a.values, kind);
}

/// Loads an array field: a JSON literal, or a .npy/.json path relative to base_dir.
/// With Precision::f64, numeric arrays also keep their exact float64 values (masks never
/// need them: booleans, 0/1 and 0/-inf are exact in float32).
Array load_array(const json& j,
                 const std::string& name,
                 ArrayKind kind,
                 const fs::path& base,
                 std::vector<ProblemSource>& sources,
                 Precision precision = Precision::f32,
                 std::optional<Tensor>* rank4 = nullptr) {
    if (kind != ArrayKind::numeric) {
        precision = Precision::f32;
    }
    if (j.is_string()) {
        const fs::path p = j.get<std::string>();
        const fs::path full = p.is_absolute() ? p : base / p;
        // A rank-4 [B, H, L, D] .npy input is decoded straight into its tensor: no second
        // copy of what may be the largest input.
        ValueSink sink;
        if (rank4 != nullptr) {
            sink = [rank4](const std::vector<std::size_t>& shape) -> float* {
                if (shape.size() != 4) {
                    return nullptr;
                }
                *rank4 = Tensor::from_shape({shape[0], shape[1], shape[2], shape[3]});
                return (*rank4)->data();
            };
        }
        Array a;
        try {
            a = read_array_file(full, kind, precision, sink, name);
        } catch (const InputError& e) {
            throw InputError(name + ": " + e.what());
        }
        if (rank4 != nullptr && *rank4) {
            record_source(sources,
                          name,
                          full,
                          a.shape,
                          std::span<const float>((*rank4)->data(), (*rank4)->size()),
                          kind);
        } else {
            record_source(sources, name, full, a, kind);
        }
        return a;
    }
    if (j.is_array()) {
        Array a = parse_json_array(j, name, kind, precision);
        record_source(sources, name, {}, a, kind);
        return a;
    }
    throw InputError(name + ": expected an array or the path of a .npy/.json file, got " +
                     type_name(j));
}

/// Frees an array's float32 values once they have been copied into a tensor, so that a
/// problem never holds an input twice (shape and values64 stay).
void release_values(Array& a) {
    std::vector<float>().swap(a.values);
}

/// [L, E] or [B, L, E] -> [B, L, E]; `a`'s float32 values are released.
Tensor3 to_tensor3(Array& a, const std::string& name, const char* dims) {
    Tensor3 t;
    if (a.shape.size() == 2) {
        t = Tensor3::from_shape({1, a.shape[0], a.shape[1]});
    } else if (a.shape.size() == 3) {
        t = Tensor3::from_shape({a.shape[0], a.shape[1], a.shape[2]});
    } else {
        throw InputError(name + ": expected a rank-2 " + dims + " or rank-3 [B, " +
                         std::string(dims + 1) + " array, got shape " + shape_string(a.shape));
    }
    std::copy(a.values.begin(), a.values.end(), t.begin());
    release_values(a);
    return t;
}

/// The float64 tensor of an array read with Precision::f64 (values64), in `shape`.
template <class T> T exact_tensor(const Array& a, const typename T::shape_type& shape) {
    T t = T::from_shape(shape);
    ATTN_ASSERT(a.values64.size() == t.size());
    std::copy(a.values64.begin(), a.values64.end(), t.begin());
    return t;
}

/// A float32 container widened to float64 (exact): for checkpoint weights, read as float32.
template <class T, std::size_t N> xt::xtensor<double, N> widen(const xt::xtensor<T, N>& x) {
    auto y = xt::xtensor<double, N>::from_shape(x.shape());
    std::transform(x.begin(), x.end(), y.begin(), [](T v) { return static_cast<double>(v); });
    return y;
}

BasicProjections<double> widen(const Projections& p) {
    BasicProjections<double> out;
    const auto m = [](const std::optional<Matrix>& w) {
        return w ? std::optional<BasicMatrix<double>>(widen(*w)) : std::nullopt;
    };
    const auto v = [](const std::optional<Vector>& b) {
        return b ? std::optional<BasicVector<double>>(widen(*b)) : std::nullopt;
    };
    out.w_q = m(p.w_q);
    out.w_k = m(p.w_k);
    out.w_v = m(p.w_v);
    out.w_o = m(p.w_o);
    out.b_q = v(p.b_q);
    out.b_k = v(p.b_k);
    out.b_v = v(p.b_v);
    out.b_o = v(p.b_o);
    return out;
}

/// bias += addend in float64, broadcasting size-1 dims as add_bias() does (which has
/// already checked the float32 sum of the same shape against the memory limit).
void add_bias64(std::optional<BasicTensor<double>>& bias,
                const BasicTensor<double>& addend,
                std::size_t lq,
                std::size_t lk) {
    const auto& sa = addend.shape();
    if (!bias && sa[2] == lq && sa[3] == lk) {
        bias = addend;
        return;
    }
    std::array<std::size_t, 4> target{sa[0], sa[1], lq, lk};
    if (bias) {
        target[0] = std::max(target[0], bias->shape()[0]);
        target[1] = std::max(target[1], bias->shape()[1]);
    }
    auto at = [](const BasicTensor<double>& t,
                 std::size_t b,
                 std::size_t h,
                 std::size_t i,
                 std::size_t j) {
        const auto& s = t.shape();
        const std::size_t bb = s[0] == 1 ? 0 : b;
        const std::size_t hh = s[1] == 1 ? 0 : h;
        const std::size_t ii = s[2] == 1 ? 0 : i;
        return t.data()[((bb * s[1] + hh) * s[2] + ii) * s[3] + j];
    };
    BasicTensor<double> sum = BasicTensor<double>::from_shape(target);
    double* dst = sum.data();
    for (std::size_t b = 0; b < target[0]; ++b) {
        for (std::size_t h = 0; h < target[1]; ++h) {
            for (std::size_t i = 0; i < lq; ++i) {
                for (std::size_t j = 0; j < lk; ++j) {
                    *dst++ = (bias ? at(*bias, b, h, i, j) : 0.0) + at(addend, b, h, i, j);
                }
            }
        }
    }
    bias = std::move(sum);
}

/// [B, H, L, D] -> Tensor; `a`'s float32 values are released.
Tensor to_tensor4(Array& a) {
    Tensor t = Tensor::from_shape({a.shape[0], a.shape[1], a.shape[2], a.shape[3]});
    std::copy(a.values.begin(), a.values.end(), t.begin());
    release_values(a);
    return t;
}

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

/// Builds nn.Linear-layout projections in T (float, or double from values64) from the
/// arrays of a params object, keyed by their names there.
template <class T>
BasicProjections<T> build_projections(const std::map<std::string, Array>& arrays) {
    using M = xt::xtensor<T, 2>;
    using V = xt::xtensor<T, 1>;
    const auto fill = [](const Array& a, auto& t) {
        if constexpr (std::is_same_v<T, double>) {
            std::copy(a.values64.begin(), a.values64.end(), t.begin());
        } else {
            std::copy(a.values.begin(), a.values.end(), t.begin());
        }
    };
    auto matrix = [&](const char* key) -> std::optional<M> {
        const auto it = arrays.find(key);
        if (it == arrays.end()) {
            return std::nullopt;
        }
        const Array& a = it->second;
        if (a.shape.size() != 2) {
            throw InputError(std::string("params.") + key +
                             ": expected a rank-2 [out, in] weight, got shape " +
                             shape_string(a.shape));
        }
        M m = M::from_shape({a.shape[0], a.shape[1]});
        fill(a, m);
        return m;
    };
    auto vector = [&](const char* key) -> std::optional<V> {
        const auto it = arrays.find(key);
        if (it == arrays.end()) {
            return std::nullopt;
        }
        const Array& a = it->second;
        if (a.shape.size() != 1) {
            throw InputError(std::string("params.") + key +
                             ": expected a rank-1 [out] bias, got shape " + shape_string(a.shape));
        }
        V v = V::from_shape({a.shape[0]});
        fill(a, v);
        return v;
    };
    auto set_once = [](auto& slot, auto&& value, const char* a, const char* b) {
        if (!value) {
            return;
        }
        if (slot) {
            throw InputError(std::string("params: both ") + a + " and " + b +
                             " give the same weight");
        }
        slot = std::move(value);
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

/// Decodes "params" into p.projections (and, for precision f64, p.exact->projections).
void decode_params(const json& j_in, const fs::path& base_in, Problem& problem) {
    std::vector<ProblemSource>& sources = problem.sources;
    if (is_checkpoint_params(j_in)) {
        // attn/io/safetensors.hpp. F32/F16/BF16 tensors are exact in float32: widening them
        // for f64 loses nothing.
        problem.projections = load_checkpoint_params(j_in, base_in, sources);
        if (problem.exact) {
            problem.exact->projections = widen(*problem.projections);
        }
        return;
    }
    json j = j_in;
    fs::path base = base_in;
    if (j.is_string()) {
        const fs::path p = j.get<std::string>();
        const fs::path full = p.is_absolute() ? p : base_in / p;
        std::vector<std::uint8_t> bytes;
        try {
            bytes = read_file(full);
        } catch (const InputError& e) {
            throw InputError(std::string("params: ") + e.what());
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
    static const std::set<std::string> known = {"w_q",
                                                "w_k",
                                                "w_v",
                                                "w_o",
                                                "b_q",
                                                "b_k",
                                                "b_v",
                                                "b_o",
                                                "in_proj_weight",
                                                "in_proj_bias",
                                                "out_proj.weight",
                                                "out_proj.bias",
                                                "q_proj_weight",
                                                "k_proj_weight",
                                                "v_proj_weight"};
    for (const auto& [key, value] : j.items()) {
        if (known.count(key) == 0) {
            throw InputError("params: unknown weight '" + shown(key) +
                             "' (expected w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o or the names of "
                             "an nn.MultiheadAttention state dict)");
        }
    }
    // Load order as before: w_q, w_k, w_v, w_o, b_q, ..., then the state-dict names.
    static const char* const order[] = {"w_q",
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
    std::map<std::string, Array> arrays;
    for (const char* key : order) {
        if (j.contains(key)) {
            arrays[key] = load_array(j[key],
                                     std::string("params.") + key,
                                     ArrayKind::numeric,
                                     base,
                                     sources,
                                     problem.precision);
        }
    }
    problem.projections = build_projections<float>(arrays);
    if (problem.exact) {
        problem.exact->projections = build_projections<double>(arrays);
    }
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

/// Score features: a list of exactly `want` finite numbers (ALiBi slopes, sink logits).
template <class T>
std::vector<T> decode_per_head(const json& j, const char* name, std::size_t want) {
    if (!j.is_array() || j.size() != want) {
        throw InputError(std::string(name) + ": expected a list of " + std::to_string(want) +
                         " numbers (one per head), got " + shown(j));
    }
    std::vector<T> out;
    for (const json& x : j) {
        if (!x.is_number() || !std::isfinite(x.get<double>())) {
            throw InputError(std::string(name) + ": expected finite numbers, got " + shown(x));
        }
        out.push_back(x.get<T>());
    }
    return out;
}

/// The sliding window: "window": [left, right], integers >= -1 (-1 = unbounded).
Window decode_window(const json& j) {
    const auto side = [](const json& x) {
        return x.is_number_integer() && x.get<std::int64_t>() >= -1 &&
               x.get<std::int64_t>() <= (std::int64_t{1} << 40);
    };
    if (!j.is_array() || j.size() != 2 || !side(j[0]) || !side(j[1])) {
        throw InputError("window: expected [left, right], integers >= -1 (-1 = unbounded), got " +
                         shown(j));
    }
    return {.left = j[0].get<std::int64_t>(), .right = j[1].get<std::int64_t>()};
}

Causal decode_causal(const json& j) {
    if (j.is_boolean()) {
        return j.get<bool>() ? Causal::top_left : Causal::none;
    }
    if (j.is_string()) {
        const auto s = j.get<std::string>();
        if (s == "top-left" || s == "true") {
            return Causal::top_left;
        }
        if (s == "bottom-right") {
            return Causal::bottom_right;
        }
        if (s == "false" || s == "none") {
            return Causal::none;
        }
    }
    throw InputError("causal: expected false, true, \"top-left\" or \"bottom-right\", got " +
                     shown(j));
}

std::vector<std::string> decode_tokens(const json& j, const char* name, std::size_t want) {
    if (!j.is_array()) {
        throw InputError(std::string(name) + ": expected a list of strings, got " + type_name(j));
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_string()) {
            throw InputError(std::string(name) + ": [" + std::to_string(i) +
                             "]: expected a string, got " + type_name(j[i]));
        }
        out.push_back(j[i].get<std::string>());
    }
    if (out.size() != want) {
        throw InputError(std::string(name) + ": expected " + std::to_string(want) +
                         " labels, got " + std::to_string(out.size()));
    }
    return out;
}

/// Shape check of a mask or bias given in the user's rank; returns its rank-4 shape.
Shape pair_shape(const Array& a,
                 const std::string& name,
                 std::size_t b,
                 std::size_t h,
                 std::size_t lq,
                 std::size_t lk) {
    const auto& s = a.shape;
    if (s.size() == 2 && s[0] == lq && s[1] == lk) {
        return {1, 1, lq, lk};
    }
    if (s.size() == 3 && (s[0] == b || s[0] == 1) && s[1] == lq && s[2] == lk) {
        return {s[0], 1, lq, lk};
    }
    if (s.size() == 4 && (s[0] == b || s[0] == 1) && (s[1] == h || s[1] == 1) && s[2] == lq &&
        s[3] == lk) {
        return {s[0], s[1], lq, lk};
    }
    std::string want;
    switch (s.size()) {
    case 3:
        want = "[B, Lq, Lk] = " + shape_string({b, lq, lk}) + " (B may be 1)";
        break;
    case 4:
        want = "[B, H, Lq, Lk] = " + shape_string({b, h, lq, lk}) + " (B and H may be 1)";
        break;
    case 2:
        want = "[Lq, Lk] = " + shape_string({lq, lk});
        break;
    default:
        want = "[Lq, Lk] = " + shape_string({lq, lk}) + ", [B, Lq, Lk] or [B, H, Lq, Lk]";
    }
    throw InputError(name + ": expected shape " + want + ", got " + shape_string(s));
}

const char* variant_names = "dot, scaled, self, masked-self, cross, multihead";

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

} // namespace

Problem decode_problem(const json& doc_in, const fs::path& base, ArrayValues given) {
    if (!doc_in.is_object()) {
        throw InputError("problem: expected a JSON object, got " + type_name(doc_in));
    }
    json doc = doc_in;
    const auto& fields = problem_fields();
    for (const auto& [key, value] : doc.items()) {
        if (std::find(fields.begin(), fields.end(), key) == fields.end()) {
            throw InputError("problem: unknown field '" + shown(key) + "'");
        }
    }
    auto has = [&](const char* f) {
        return (doc.contains(f) && !doc[f].is_null()) || given.count(f) != 0;
    };

    // Presets: explicit fields win.
    std::string variant;
    if (has("variant")) {
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
    if (variant == "masked-self" && !has("causal") && !has("mask") && !has("bias")) {
        doc["causal"] = true;
    }
    if (projected_variant && !has("params") && !has("init")) {
        throw InputError("variant: '" + variant +
                         "' needs projection weights: give params or init");
    }
    if (variant == "cross" && !has("context") && !has("key")) {
        throw InputError("variant: 'cross' needs context (the key/value source)");
    }

    Problem p;
    if (has("id")) {
        p.id = doc["id"];
    }
    // Precision first: it decides how the arrays are read.
    if (has("precision")) {
        const json& pr = doc["precision"];
        if (pr == "f64") {
            p.precision = Precision::f64;
        } else if (pr != "f32") {
            throw InputError("precision: expected \"f32\" or \"f64\", got " + shown(pr));
        }
    }
    if (p.precision == Precision::f64) {
        p.exact.emplace();
    }
    const Precision prec = p.precision;
    // An array field: handed over already read (stdin), or loaded from the document.
    const auto load = [&](const char* field, ArrayKind kind, std::optional<Tensor>* rank4) {
        if (const auto it = given.find(field); it != given.end()) {
            Array a = std::move(it->second);
            record_source(p.sources, field, {}, a, kind);
            return a;
        }
        return load_array(doc[field], field, kind, base, p.sources, prec, rank4);
    };

    // Sources.
    if (has("query") && has("input")) {
        throw InputError("query: give either query or input as the query source, not both");
    }
    if (!has("query") && !has("input")) {
        throw InputError("problem: no query source: give query (with key and value) or input");
    }
    if (has("context") && (has("key") || has("value"))) {
        throw InputError("context: give either context or key/value as the key/value source");
    }
    if (has("key") != has("value")) {
        throw InputError(std::string(has("key") ? "value" : "key") +
                         ": missing (key and value come together)");
    }
    if (has("query") && !has("key") && !has("context")) {
        throw InputError("key: missing (query needs key and value, or context)");
    }
    const char* q_field = has("query") ? "query" : "input";
    std::optional<Tensor> q_t, k_t, v_t; // rank-4 .npy inputs, read straight into tensors
    Array q_arr = load(q_field, ArrayKind::numeric, &q_t);

    if (q_arr.shape.size() == 4) {
        // Direct heads: [B, H, L, D].
        if (!has("key")) {
            throw InputError(std::string(q_field) +
                             ": a rank-4 [B, H, L, D] query needs rank-4 key and value");
        }
        if (has("params") || has("init")) {
            throw InputError("params: projections apply to rank-2/3 inputs, not to rank-4 "
                             "[B, H, L, D] heads");
        }
        Array k_arr = load("key", ArrayKind::numeric, &k_t);
        Array v_arr = load("value", ArrayKind::numeric, &v_t);
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
        if (has("num_heads") && positive_int(doc["num_heads"], "num_heads") != qs[1]) {
            throw InputError("num_heads: " + shown(doc["num_heads"]) + " disagrees with query " +
                             shape_string(qs) + " (" + std::to_string(qs[1]) + " heads)");
        }
        if (has("num_kv_heads") && positive_int(doc["num_kv_heads"], "num_kv_heads") != ks[1]) {
            throw InputError("num_kv_heads: " + shown(doc["num_kv_heads"]) +
                             " disagrees with key " + shape_string(ks) + " (" +
                             std::to_string(ks[1]) + " heads)");
        }
        p.direct_heads = true;
        p.batched = true;
        p.q4 = q_t ? std::move(*q_t) : to_tensor4(q_arr);
        p.k4 = k_t ? std::move(*k_t) : to_tensor4(k_arr);
        p.v4 = v_t ? std::move(*v_t) : to_tensor4(v_arr);
        if (p.exact) {
            p.exact->q4 = exact_tensor<BasicTensor<double>>(q_arr, p.q4.shape());
            p.exact->k4 = exact_tensor<BasicTensor<double>>(k_arr, p.k4.shape());
            p.exact->v4 = exact_tensor<BasicTensor<double>>(v_arr, p.v4.shape());
        }
        p.num_heads = qs[1];
        p.num_kv_heads = ks[1];
        p.batch = qs[0];
        p.lq = qs[2];
        p.lk = ks[2];
    } else {
        p.query_src = to_tensor3(q_arr, q_field, "[L, E]");
        p.batched = q_arr.shape.size() == 3;
        if (p.exact) {
            p.exact->query_src = exact_tensor<BasicTensor3<double>>(q_arr, p.query_src.shape());
        }
        if (has("key")) {
            Array k_arr = load("key", ArrayKind::numeric, nullptr);
            p.key_src = to_tensor3(k_arr, "key", "[L, E]");
            Array v_arr = load("value", ArrayKind::numeric, nullptr);
            p.value_src = to_tensor3(v_arr, "value", "[L, E]");
            if (p.exact) {
                p.exact->key_src = exact_tensor<BasicTensor3<double>>(k_arr, p.key_src.shape());
                p.exact->value_src = exact_tensor<BasicTensor3<double>>(v_arr, p.value_src.shape());
            }
        } else if (has("context")) {
            Array c_arr = load("context", ArrayKind::numeric, nullptr);
            p.key_src = to_tensor3(c_arr, "context", "[Lk, Ec]");
            p.value_src = p.key_src;
            if (p.exact) {
                p.exact->key_src = exact_tensor<BasicTensor3<double>>(c_arr, p.key_src.shape());
                p.exact->value_src = p.exact->key_src;
            }
        } else {
            p.key_src = p.query_src;
            p.value_src = p.query_src;
            if (p.exact) {
                p.exact->key_src = p.exact->query_src;
                p.exact->value_src = p.exact->query_src;
            }
        }
        p.batch = p.query_src.shape()[0];
        p.lq = p.query_src.shape()[1];
        p.lk = p.key_src.shape()[1];
        for (const auto* src : {&p.key_src, &p.value_src}) {
            const char* name = has("key") ? (src == &p.key_src ? "key" : "value") : "context";
            if (src->shape()[0] != p.batch && src->shape()[0] != 1) {
                throw InputError::shape(name, {p.batch, kAnyDim, kAnyDim}, shape_of(*src));
            }
        }
        if (p.value_src.shape()[0] != p.key_src.shape()[0] ||
            p.value_src.shape()[1] != p.key_src.shape()[1]) {
            throw InputError::shape(
                "value", {p.key_src.shape()[0], p.lk, kAnyDim}, shape_of(p.value_src));
        }
        p.num_heads = has("num_heads") ? positive_int(doc["num_heads"], "num_heads") : 1;
        p.num_kv_heads =
            has("num_kv_heads") ? positive_int(doc["num_kv_heads"], "num_kv_heads") : p.num_heads;
        if (p.num_heads % p.num_kv_heads != 0) {
            throw InputError("num_kv_heads: " + std::to_string(p.num_kv_heads) +
                             " does not divide num_heads " + std::to_string(p.num_heads));
        }

        if (has("params") && has("init")) {
            throw InputError("init: give either params or init, not both");
        }
        if (has("params")) {
            decode_params(doc["params"], base, p);
            if (!has("num_kv_heads") && is_checkpoint_params(doc["params"])) {
                // Llama-style GQA: the checkpoint's k_proj rows give the key/value heads.
                p.num_kv_heads = implied_num_kv_heads(*p.projections, p.num_heads);
            }
        } else if (has("init")) {
            const json& init = doc["init"];
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
                    throw InputError("init: unknown field '" + shown(key) +
                                     "' (expected seed, dim, output_projection, bias)");
                }
            }
            check_init_fits(p.query_src.shape()[2],
                            p.key_src.shape()[2],
                            p.value_src.shape()[2],
                            dim,
                            p.num_heads,
                            p.num_kv_heads,
                            output_projection);
            p.projections = random_projections(seed,
                                               p.query_src.shape()[2],
                                               p.key_src.shape()[2],
                                               p.value_src.shape()[2],
                                               dim,
                                               p.num_heads,
                                               p.num_kv_heads,
                                               output_projection,
                                               bias);
            if (p.exact) {
                p.exact->projections = random_projections<double>(seed,
                                                                  p.query_src.shape()[2],
                                                                  p.key_src.shape()[2],
                                                                  p.value_src.shape()[2],
                                                                  dim,
                                                                  p.num_heads,
                                                                  p.num_kv_heads,
                                                                  output_projection,
                                                                  bias);
            }
        }
    }

    // Scale, causal, masks.
    if (has("scale")) {
        const json& s = doc["scale"];
        if (!s.is_number() || !std::isfinite(s.get<double>())) {
            throw InputError("scale: expected a finite number or null, got " + shown(s));
        }
        p.scale = s.get<float>();
        if (p.exact) {
            p.exact->scale = s.get<double>();
        }
    }
    if (has("causal")) {
        p.causal = decode_causal(doc["causal"]);
    }
    // mask_convention (attn/io/mask_convention.hpp): additive masks join the bias.
    const MaskConvention convention = has("mask_convention")
                                          ? decode_mask_convention(doc["mask_convention"])
                                          : MaskConvention::keep;
    if (has("mask")) {
        const Array a = load("mask", mask_array_kind(convention), nullptr);
        const Shape s = pair_shape(a, "mask", p.batch, p.num_heads, p.lq, p.lk);
        DecodedMask m = decode_mask(a, s, convention, "mask");
        p.mask = std::move(m.keep);
        if (m.bias) {
            add_bias(p.bias, *m.bias, p.lq, p.lk, "mask");
            if (p.exact) {
                add_bias64(p.exact->bias, exact_tensor<BasicTensor<double>>(a, s), p.lq, p.lk);
            }
        }
    }
    if (has("bias")) {
        const Array a = load("bias", ArrayKind::numeric, nullptr);
        const Shape s = pair_shape(a, "bias", p.batch, p.num_heads, p.lq, p.lk);
        Tensor t = Tensor::from_shape(s);
        std::copy(a.values.begin(), a.values.end(), t.begin());
        if (p.exact) {
            add_bias64(p.exact->bias, exact_tensor<BasicTensor<double>>(a, s), p.lq, p.lk);
        }
        if (p.bias) {
            add_bias(p.bias, t, p.lq, p.lk, "bias");
        } else {
            p.bias = std::move(t);
        }
    }
    if (has("key_padding_mask")) {
        const Array a = load("key_padding_mask", mask_array_kind(convention), nullptr);
        Shape s{};
        if (a.shape.size() == 1 && a.shape[0] == p.lk) {
            s = {1, 1, 1, p.lk};
        } else if (a.shape.size() == 2 && (a.shape[0] == p.batch || a.shape[0] == 1) &&
                   a.shape[1] == p.lk) {
            s = {a.shape[0], 1, 1, p.lk};
        } else {
            throw InputError("key_padding_mask: expected shape " + shape_string({p.batch, p.lk}) +
                             " or " + shape_string({p.lk}) + ", got " + shape_string(a.shape));
        }
        DecodedMask m = decode_mask(a, s, convention, "key_padding_mask");
        p.key_padding = std::move(m.keep);
        if (m.bias) {
            add_bias(p.bias, *m.bias, p.lq, p.lk, "key_padding_mask");
            if (p.exact) {
                add_bias64(p.exact->bias, exact_tensor<BasicTensor<double>>(a, s), p.lq, p.lk);
            }
        }
    }

    // Score features: window, softcap, ALiBi, sinks, per-row diagnostics.
    const std::size_t n_heads = p.direct_heads ? p.q4.shape()[1] : p.num_heads;
    if (has("window")) {
        p.window = decode_window(doc["window"]);
    }
    if (has("window_align")) {
        const json& a = doc["window_align"];
        if (a == "top-left") {
            p.window_align = Align::top_left;
        } else if (a == "bottom-right") {
            p.window_align = Align::bottom_right;
        } else {
            throw InputError("window_align: expected \"top-left\" or \"bottom-right\", got " +
                             shown(a));
        }
    }
    if (has("softcap") && !doc["softcap"].is_null()) {
        const json& c = doc["softcap"];
        if (!c.is_number() || !std::isfinite(c.get<double>()) || c.get<double>() <= 0.0) {
            throw InputError("softcap: expected a finite number > 0 or null, got " + shown(c));
        }
        p.softcap = c.get<float>();
        if (p.exact) {
            p.exact->softcap = c.get<double>();
        }
    }
    if (has("alibi")) {
        const json& a = doc["alibi"];
        if (a.is_boolean()) {
            if (a.get<bool>()) {
                p.alibi_slopes = alibi_default_slopes(n_heads);
                if (p.exact) {
                    p.exact->alibi_slopes = alibi_default_slopes<double>(n_heads);
                }
            }
        } else if (a.is_array()) {
            p.alibi_slopes = decode_per_head<float>(a, "alibi", n_heads);
            if (p.exact) {
                p.exact->alibi_slopes = decode_per_head<double>(a, "alibi", n_heads);
            }
        } else {
            throw InputError("alibi: expected true, false or a list of " + std::to_string(n_heads) +
                             " slopes, got " + shown(a));
        }
    }
    if (has("sinks")) {
        p.sinks = decode_per_head<float>(doc["sinks"], "sinks", n_heads);
        if (p.exact) {
            p.exact->sinks = decode_per_head<double>(doc["sinks"], "sinks", n_heads);
        }
    }
    if (has("top_k") && !has("return")) {
        throw InputError("top_k: needs \"return\": [\"top_k\"]");
    }
    if (has("return")) {
        const json& r = doc["return"];
        if (!r.is_array()) {
            throw InputError("return: expected a list of \"lse\", \"entropy\", \"argmax\", "
                             "\"top_k\", got " +
                             shown(r));
        }
        for (const json& x : r) {
            if (x == "lse") {
                p.return_lse = true;
            } else if (x == "entropy") {
                p.return_entropy = true;
            } else if (x == "argmax") {
                p.return_argmax = true;
            } else if (x == "top_k") {
                if (!has("top_k")) {
                    throw InputError("return: \"top_k\" needs \"top_k\": K");
                }
                p.top_k = positive_int(doc["top_k"], "top_k");
            } else {
                throw InputError("return: expected \"lse\", \"entropy\", \"argmax\" or "
                                 "\"top_k\", got " +
                                 shown(x));
            }
        }
    }

    // Labels.
    if (has("tokens")) {
        if (has("query_tokens") || has("key_tokens")) {
            throw InputError("tokens: give either tokens or query_tokens/key_tokens");
        }
        if (p.lq != p.lk) {
            throw InputError("tokens: queries (" + std::to_string(p.lq) + ") and keys (" +
                             std::to_string(p.lk) +
                             ") differ in length: use query_tokens and key_tokens");
        }
        p.query_tokens = decode_tokens(doc["tokens"], "tokens", p.lq);
        p.key_tokens = p.query_tokens;
    }
    if (has("query_tokens")) {
        p.query_tokens = decode_tokens(doc["query_tokens"], "query_tokens", p.lq);
    }
    if (has("key_tokens")) {
        p.key_tokens = decode_tokens(doc["key_tokens"], "key_tokens", p.lk);
    }
    return p;
}

} // namespace attn::problem

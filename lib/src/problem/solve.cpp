// Solving a decoded problem (the core's layer or attend() in the problem's precision) and
// writing the result document.
#include "attn/problem/solve.hpp"

#include "attn/huge_pages.hpp"
#include "attn/io/limits.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/layer_analysis.hpp"
#include "attn/problem/result_read.hpp"
#include "attn/problem/selection.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <vector>

namespace attn::problem {

using io::Array;
using io::encode_json_array;
using nlohmann::json;

namespace {

/// JSON text of a value we echo back; invalid UTF-8 is replaced rather than thrown on.
std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

/// A result tensor as an Array; a float64 one keeps its exact values in values64 and their
/// float32 rounding in values (for heatmaps and float32 files).
template <class T> Array to_array(const T& t, std::vector<std::size_t> shape) {
    Array a;
    a.shape = std::move(shape);
    if constexpr (std::is_same_v<typename T::value_type, double>) {
        a.values64.assign(t.begin(), t.end());
        a.values.resize(a.values64.size());
        std::transform(a.values64.begin(), a.values64.end(), a.values.begin(), [](double x) {
            return static_cast<float>(x);
        });
        a.dtype = "float64";
    } else {
        a.values.reserve(t.size()); // untouched until the copy: huge pages can still back it
        advise_huge_pages(a.values.data(), t.size() * sizeof(float));
        a.values.assign(t.begin(), t.end());
        a.dtype = "float32";
    }
    return a;
}

/// The spec of a problem in precision T, pointing into its inputs in T for the bias.
template <class T> BasicAttentionSpec<T> make_spec(const Problem& p, const SolveOptions& options) {
    const BasicInputs<T>& in = p.inputs<T>();
    return {.scale = in.scale,
            .causal = p.causal,
            .keep_mask = p.mask ? &*p.mask : nullptr,
            .bias = in.bias ? &*in.bias : nullptr,
            .key_padding = p.key_padding ? &*p.key_padding : nullptr,
            .want_weights = options.want_weights,
            .threads = options.threads,
            .simd = options.simd,
            .window = p.window,
            .align = p.window_align,
            .varlen = p.varlen,
            .softcap = in.softcap,
            .alibi_slopes = in.alibi_slopes,
            .sinks = in.sinks,
            .want_lse = p.return_lse,
            .want_entropy = p.return_entropy,
            .want_argmax = p.return_argmax,
            .top_k = p.top_k};
}

/// make_spec, with the caller's weights destination for a float32 problem.
template <class T>
BasicAttentionSpec<T> spec_with_destination(const Problem& p, const SolveOptions& options) {
    BasicAttentionSpec<T> spec = make_spec<T>(p, options);
    if constexpr (std::is_same_v<T, float>) {
        ATTN_ASSERT(options.weights_to == nullptr || weights_direct(p));
        ATTN_ASSERT(options.pooled_to == nullptr || (pooled_direct(p) && !options.want_weights));
        spec.weights_to = options.weights_to;
        spec.pooled_to = options.pooled_to;
    }
    return spec;
}

/// Weights [B, H, Lq, Lk] averaged over heads into [B, 1, Lq, Lk] (nn.MultiheadAttention's
/// average_attn_weights=True), summed in double in head order: the same for any threads.
template <class T> xt::xtensor<T, 4> average_heads(const xt::xtensor<T, 4>& w) {
    const auto& s = w.shape();
    const std::size_t plane = s[2] * s[3];
    xt::xtensor<T, 4> out = xt::xtensor<T, 4>::from_shape({s[0], 1, s[2], s[3]});
    std::vector<double> sum(plane);
    for (std::size_t b = 0; b < s[0]; ++b) {
        std::fill(sum.begin(), sum.end(), 0.0);
        for (std::size_t h = 0; h < s[1]; ++h) {
            const T* src = w.data() + (b * s[1] + h) * plane;
            for (std::size_t x = 0; x < plane; ++x) {
                sum[x] += static_cast<double>(src[x]);
            }
        }
        T* dst = out.data() + b * plane;
        for (std::size_t x = 0; x < plane; ++x) {
            dst[x] = static_cast<T>(sum[x] / static_cast<double>(s[1]));
        }
    }
    return out;
}

} // namespace

WeightsAxes weights_axes(const Problem& p) {
    return {.batch = p.batched,
            .heads = p.direct_heads ||
                     (!p.average_heads && (p.num_heads > 1 || !p.select_heads.empty()))};
}

namespace {

/// The weights and diagnostics of a result in the contract's shapes, into s.
template <class T>
void finish_solution(const Problem& p,
                     std::optional<xt::xtensor<T, 4>> weights,
                     const BasicRowDiagnostics<T>& diagnostics,
                     Solution& s) {
    // The one rule for the shapes of weights and diagnostics: rank-4 inputs and selected
    // heads keep H whatever it is, others drop a single head; an unbatched problem drops B.
    const auto result_shape = [&p](std::vector<std::size_t> shape) {
        if (shape[1] == 1 && !p.direct_heads && p.select_heads.empty()) {
            shape.erase(shape.begin() + 1);
        }
        if (!p.batched) {
            shape.erase(shape.begin());
        }
        return shape;
    };
    // Diagnostics [B, H, Lq, 1|K]: the selected heads and rows ("select_heads",
    // "query_rows"); the trailing 1 goes, B and H go as for weights.
    const auto diag_array = [&result_shape, &p](const std::optional<xt::xtensor<T, 4>>& t,
                                                bool per_key) {
        std::optional<Array> a;
        if (t) {
            const Selection select(p, t->shape()[1], t->shape()[2]);
            std::optional<xt::xtensor<T, 4>> sliced;
            if (select.partial()) {
                sliced = select.slice(*t);
            }
            const xt::xtensor<T, 4>& kept = sliced ? *sliced : *t;
            std::vector<std::size_t> shape = shape_of(kept);
            if (!per_key) {
                shape.pop_back();
            }
            a = to_array(kept, result_shape(shape));
        }
        return a;
    };
    s.lse = diag_array(diagnostics.lse, false);
    s.entropy = diag_array(diagnostics.entropy, false);
    s.argmax = diag_array(diagnostics.argmax, false);
    s.top_k_indices = diag_array(diagnostics.top_k_indices, true);
    s.top_k_weights = diag_array(diagnostics.top_k_weights, true);
    if (weights) {
        if (p.average_heads) {
            weights = average_heads(*weights);
        }
        // weights_axes(): the same rule, said once for the weights' readers.
        std::vector<std::size_t> shape = shape_of(*weights);
        const WeightsAxes axes = weights_axes(p);
        ATTN_ASSERT(axes.heads || shape[1] == 1);
        if (!axes.heads) {
            shape.erase(shape.begin() + 1);
        }
        if (!axes.batch) {
            shape.erase(shape.begin());
        }
        s.weights = to_array(*weights, shape);
    }
}

template <class T>
Solution
solve_heads(const Problem& p, const BasicAttentionSpec<T>& spec, LayerAnalysis<T>& analysis);

/// Computes the problem in precision T, from its inputs in T.
template <class T> Solution solve_in(const Problem& p, const SolveOptions& options) {
    const BasicInputs<T>& in = p.inputs<T>();
    // "head_stats", "rollout": this layer's (solve()'s own rollout when no stack has one).
    std::optional<Rollout> own_rollout;
    if (p.return_rollout && options.rollout == nullptr) {
        own_rollout.emplace(p.rollout_fusion, p.batch, p.lq);
    }
    LayerAnalysis<T> analysis(p, nullptr, own_rollout ? &*own_rollout : options.rollout);
    const BasicAttentionSpec<T> spec = analysis.spec(spec_with_destination<T>(p, options));
    Solution s;
    if (!p.direct_heads) {
        BasicLayerSpec<T> ls;
        ls.num_heads = p.num_heads;
        ls.num_kv_heads = p.num_kv_heads;
        ls.projections = in.projections ? &*in.projections : nullptr;
        ls.attention = spec;
        ls.norm = in.norm ? &*in.norm : nullptr;
        ls.rope = p.rope ? &*p.rope : nullptr;
        ls.rope_positions = p.rope_positions;
        BasicLayerResult<T> r = attend_layer(in.query_src, in.key_src, in.value_src, ls);
        analysis.after(r.weights);
        s = layer_solution(p, std::move(r));
    } else {
        s = solve_heads(p, spec, analysis);
    }
    analysis.into(s);
    if (own_rollout) {
        s.rollout = own_rollout->result(p.batched, p.precision == Precision::f64);
    }
    return s;
}

/// A rank-4 problem ([B, H, L, D] given): RoPE when asked, then attend().
template <class T>
Solution
solve_heads(const Problem& p, const BasicAttentionSpec<T>& spec, LayerAnalysis<T>& analysis) {
    const BasicInputs<T>& in = p.inputs<T>();
    std::optional<BasicTensor<T>> q_rot, k_rot; // rotated copies ("rope")
    if (p.rope) {
        q_rot = in.q4.copy();
        k_rot = in.k4.copy();
        apply_rope(*q_rot, *k_rot, *p.rope, p.rope_positions);
    }
    BasicAttentionResult<T> r;
    attend_into(q_rot ? BasicTensorView<T>(*q_rot) : in.q4.view(),
                k_rot ? BasicTensorView<T>(*k_rot) : in.k4.view(),
                in.v4.view(),
                spec,
                r);
    analysis.after(r.weights);
    Solution s;
    s.output = to_array(r.output, shape_of(r.output));
    s.rows_fully_masked = r.rows_fully_masked;
    finish_solution(p, std::move(r.weights), r.diagnostics, s);
    return s;
}

} // namespace

template <class T>
BasicAttentionSpec<T> attention_spec(const Problem& p, const SolveOptions& options) {
    return spec_with_destination<T>(p, options);
}

bool weights_direct(const Problem& p) {
    return p.precision == Precision::f32 && !p.average_heads;
}

bool pooled_direct(const Problem& p) {
    return weights_direct(p) && !p.mask && !p.bias && !p.return_entropy && p.top_k == 0 &&
           !p.return_head_stats && !p.return_rollout && p.select_heads.empty() && !p.query_rows;
}

WeightsDestination<float>
weights_slot(const WeightsDestination<float>& all, std::size_t index, std::size_t count) {
    const std::size_t size = all.size / count;
    const std::size_t offset = index * size;
    WeightsDestination<float> slot{.size = size};
    if (all.store) {
        slot.store = [store = all.store,
                      offset](std::size_t first, const float* values, std::size_t n) {
            store(offset + first, values, n);
        };
    }
    return slot;
}

template <class T> Solution layer_solution(const Problem& p, BasicLayerResult<T> r) {
    Solution s;
    std::vector<std::size_t> shape = shape_of(r.output);
    if (!p.batched) {
        shape.erase(shape.begin());
    }
    s.output = to_array(r.output, shape);
    s.rows_fully_masked = r.rows_fully_masked;
    finish_solution(p, std::move(r.weights), r.diagnostics, s);
    return s;
}

template Solution layer_solution<float>(const Problem&, BasicLayerResult<float>);
template Solution layer_solution<double>(const Problem&, BasicLayerResult<double>);

template <class T> Array result_array(const BasicTensor3<T>& t, std::vector<std::size_t> shape) {
    return to_array(t, std::move(shape));
}
template Array result_array<float>(const BasicTensor3<float>&, std::vector<std::size_t>);
template Array result_array<double>(const BasicTensor3<double>&, std::vector<std::size_t>);

template AttentionSpec attention_spec<float>(const Problem&, const SolveOptions&);
template BasicAttentionSpec<double> attention_spec<double>(const Problem&, const SolveOptions&);

Solution solve(const Problem& p, const SolveOptions& options) {
    check_memory(p,
                 options.want_weights || p.return_rollout, // rollout keeps a layer's weights
                 options.max_memory != 0 ? options.max_memory : io::memory_limit(),
                 options.threads,
                 options.weights_to != nullptr && weights_direct(p));
    return p.precision == Precision::f64 ? solve_in<double>(p, options)
                                         : solve_in<float>(p, options);
}

std::string fully_masked_warning(const Solution& s, bool stacked) {
    if (s.rows_fully_masked <= 0) {
        return {};
    }
    return fully_masked_text(std::to_string(s.rows_fully_masked) + " query row(s) (over all " +
                             (stacked ? "layers, " : "") + "batches and heads)") +
           " (before any output projection)";
}

std::string result_document(const Problem& p, const Solution& s, bool with_weights) {
    std::string out = "{";
    if (p.id) {
        out += "\"id\":" + dump(*p.id) + ",";
    }
    out += "\"output\":" + encode_json_array(s.output);
    if (s.weights && with_weights) {
        out += ",\"weights\":" + encode_json_array(*s.weights);
    }
    // The "return" diagnostics (lse, entropy, argmax, top-k).
    const auto add = [&out](const char* key, const std::optional<Array>& a) {
        if (a) {
            out += std::string(",\"") + key + "\":" + encode_json_array(*a);
        }
    };
    add("lse", s.lse);
    add("entropy", s.entropy);
    add("argmax", s.argmax);
    if (s.top_k_indices && s.top_k_weights) {
        out += ",\"top_k\":{\"indices\":" + encode_json_array(*s.top_k_indices) +
               ",\"weights\":" + encode_json_array(*s.top_k_weights) + "}";
    }
    add("hidden_states", s.hidden_states);
    if (s.head_stats) {
        std::string stats;
        for (const auto& [name, a] : *s.head_stats) {
            stats += (stats.empty() ? "{\"" : ",\"") + name + "\":" + encode_json_array(a);
        }
        out += ",\"head_stats\":" + stats + "}";
    }
    add("rollout", s.rollout);
    if (p.query_tokens) {
        out += ",\"query_tokens\":" + dump(json(*p.query_tokens));
    }
    if (p.key_tokens) {
        out += ",\"key_tokens\":" + dump(json(*p.key_tokens));
    }
    if (p.text_tokens) {
        out += ",\"tokens\":" +
               dump(p.text_batched ? json(*p.text_tokens) : json(p.text_tokens->front()));
    }
    out += "}";
    return out;
}

} // namespace attn::problem

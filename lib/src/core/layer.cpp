// The attention layer (projections -> heads -> attend -> merge -> output projection)
// and the reproducible random weights of the `init` field.
#include "attn/layer.hpp"

#include "attn/error.hpp"
#include "attn/norm.hpp"
#include "attn/projection.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace attn {

namespace {

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and easy to reproduce in numpy.
class SplitMix64 {
  public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        state_ += 0x9E3779B97F4A7C15ULL;
        std::uint64_t z = state_;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    /// (2u - 1) / sqrt(fan_in) with u = top 24 bits / 2^24, in double (the float32
    /// weights round this once).
    double uniform_linear(std::size_t fan_in) {
        const double u = static_cast<double>(next() >> 40) / 16777216.0;
        const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
        return (2.0 * u - 1.0) * bound;
    }

  private:
    std::uint64_t state_;
};

template <class T>
xt::xtensor<T, 2> random_matrix(SplitMix64& rng, std::size_t out, std::size_t in) {
    auto w = xt::xtensor<T, 2>::from_shape({out, in});
    for (auto& x : w) {
        x = static_cast<T>(rng.uniform_linear(in));
    }
    return w;
}

template <class T>
xt::xtensor<T, 1> random_vector(SplitMix64& rng, std::size_t out, std::size_t in) {
    auto b = xt::xtensor<T, 1>::from_shape({out});
    for (auto& x : b) {
        x = static_cast<T>(rng.uniform_linear(in));
    }
    return b;
}

} // namespace

template <class T> BasicProjections<T> random_projections(const RandomInit& init) {
    const auto& [seed, e_q, e_k, e_v, dim, num_heads, num_kv_heads, output_projection, bias] = init;
    if (num_heads == 0 || dim % num_heads != 0) {
        throw InputError("init: dim " + std::to_string(dim) + " is not divisible by num_heads " +
                         std::to_string(num_heads));
    }
    const std::size_t kv_dim = dim / num_heads * num_kv_heads;
    SplitMix64 rng(seed);
    BasicProjections<T> p;
    p.w_q = random_matrix<T>(rng, dim, e_q);
    p.w_k = random_matrix<T>(rng, kv_dim, e_k);
    p.w_v = random_matrix<T>(rng, kv_dim, e_v);
    if (output_projection) {
        p.w_o = random_matrix<T>(rng, e_q, dim);
    }
    if (bias) {
        p.b_q = random_vector<T>(rng, dim, e_q);
        p.b_k = random_vector<T>(rng, kv_dim, e_k);
        p.b_v = random_vector<T>(rng, kv_dim, e_v);
        if (output_projection) {
            p.b_o = random_vector<T>(rng, e_q, dim);
        }
    }
    return p;
}

template Projections random_projections<float>(const RandomInit&);
template BasicProjections<double> random_projections<double>(const RandomInit&);

namespace {

/// One projection's weight: float (w), as stored (stored), or absent (both empty).
template <class T> struct Weight {
    const std::optional<xt::xtensor<T, 2>>& w;
    const std::optional<StoredWeight>& stored;
};

template <class T>
xt::xtensor<T, 3> project(const xt::xtensor<T, 3>& x,
                          Weight<T> weight,
                          const std::optional<xt::xtensor<T, 1>>& b,
                          const char* w_name,
                          const char* b_name,
                          const BasicAttentionSpec<T>& run) {
    static const xt::xtensor<T, 2> none;
    if (weight.w || weight.stored) {
        return linear_of(x,
                         weight.w ? *weight.w : none,
                         weight.stored,
                         b ? &*b : nullptr,
                         w_name,
                         run.threads,
                         run.simd);
    }
    if (b) {
        // A bias without a weight: identity projection plus the bias.
        if (b->shape()[0] != x.shape()[2]) {
            throw InputError::shape(b_name, {x.shape()[2]}, shape_of(*b));
        }
        xt::xtensor<T, 3> y = x;
        for (std::size_t r = 0; r < y.size() / x.shape()[2]; ++r) {
            for (std::size_t j = 0; j < x.shape()[2]; ++j) {
                y.data()[r * x.shape()[2] + j] += (*b)(j);
            }
        }
        return y;
    }
    return x;
}

/// The sizes of one optional weight/bias, for linear_features().
template <class T> struct LinearShape {
    std::optional<std::vector<std::size_t>> w;
    std::optional<std::size_t> b;
    LinearShape(Weight<T> weight, const std::optional<xt::xtensor<T, 1>>& bias) {
        if (weight.w) {
            w = shape_of(*weight.w);
        } else if (weight.stored) {
            w = std::vector<std::size_t>{weight.stored->rows, weight.stored->cols};
        }
        if (bias) {
            b = bias->shape()[0];
        }
    }
    std::size_t features(std::size_t in, const char* w_name, const char* b_name) const {
        return linear_features(in, w ? &*w : nullptr, b ? &*b : nullptr, w_name, b_name);
    }
};

template <class T>
BasicLayerResult<T> attend_layer_impl(const xt::xtensor<T, 3>& query,
                                      const xt::xtensor<T, 3>& key,
                                      const xt::xtensor<T, 3>& value,
                                      const BasicLayerSpec<T>& spec) {
    static const BasicProjections<T> none;
    const BasicProjections<T>& p = spec.projections != nullptr ? *spec.projections : none;
    const LayerPlan plan = plan_layer<T>(
        {query.shape(), key.shape(), value.shape(), spec.num_heads, spec.num_kv_heads},
        spec.projections);
    plan.check();
    // The pre-attention norm: of each source (the same hidden state for self-attention).
    const unsigned threads = spec.attention.threads;
    const NormedOrSame<T> nq(query, spec.norm, threads);
    const NormedOrSame<T> nk(key, &key == &query ? nullptr : spec.norm, threads);
    const NormedOrSame<T> nv(value, &value == &query ? nullptr : spec.norm, threads);
    const xt::xtensor<T, 3>& key_in = &key == &query ? *nq : *nk;
    const xt::xtensor<T, 3>& value_in = &value == &query ? *nq : *nv;
    const BasicAttentionSpec<T>& run = spec.attention; // the GEMMs' threads and SIMD target
    // The q/k norms (Qwen3, OLMo 2, ...): over each head's features or the whole projection.
    const auto qk_normed = [&spec,
                            threads](xt::xtensor<T, 3> x, const BasicNorm<T>* n, std::size_t h) {
        if (n == nullptr) {
            return x;
        }
        return spec.qk_norm_scope == QkNormScope::head ? apply_head_norm(x, *n, h, threads)
                                                       : apply_norm(x, *n, threads);
    };
    const xt::xtensor<T, 3> q = qk_normed(
        project(*nq, Weight<T>{p.w_q, p.stored_q}, p.b_q, "w_q", "b_q", run), spec.q_norm, plan.h);
    const xt::xtensor<T, 3> k =
        qk_normed(project(key_in, Weight<T>{p.w_k, p.stored_k}, p.b_k, "w_k", "b_k", run),
                  spec.k_norm,
                  plan.hkv);
    const xt::xtensor<T, 3> v =
        project(value_in, Weight<T>{p.w_v, p.stored_v}, p.b_v, "w_v", "b_v", run);
    xt::xtensor<T, 4> qh = split_heads(q, plan.h, "input", threads);
    xt::xtensor<T, 4> kh = split_heads(k, plan.hkv, "input", threads);
    const xt::xtensor<T, 4> vh = split_heads(v, plan.hkv, "input", threads);
    if (spec.rope != nullptr) {
        apply_rope(qh, kh, *spec.rope, spec.rope_positions, spec.attention.threads);
    }

    BasicAttentionResult<T> r = attend(qh, kh, vh, spec.attention);
    BasicLayerResult<T> out;
    out.output = merge_heads(r.output, threads);
    if (p.w_o || p.stored_o || p.b_o) {
        out.output = project(out.output, Weight<T>{p.w_o, p.stored_o}, p.b_o, "w_o", "b_o", run);
    }
    out.weights = std::move(r.weights);
    out.rows_fully_masked = r.rows_fully_masked;
    out.diagnostics = std::move(r.diagnostics);
    return out;
}

} // namespace

void LayerPlan::check() const {
    if (error) {
        throw *error;
    }
}

template <class T>
LayerPlan plan_layer(const LayerShapes& shapes, const BasicProjections<T>* projections) {
    const auto& query = shapes.query;
    const auto& key = shapes.key;
    const auto& value = shapes.value;
    LayerPlan plan;
    const auto fail = [&plan](InputError e) {
        if (!plan.error) {
            plan.error = std::move(e);
        }
    };
    // A size whose check fails keeps `fallback` and records the first error.
    const auto size = [&fail](const auto& sized, std::size_t fallback) {
        try {
            return sized();
        } catch (const InputError& e) {
            fail(e);
            return fallback;
        }
    };
    plan.h = shapes.num_heads;
    plan.hkv = shapes.num_kv_heads == 0 ? shapes.num_heads : shapes.num_kv_heads;
    if (plan.h == 0) {
        fail(InputError("num_heads: must be at least 1"));
    }
    if (plan.hkv == 0 || plan.h % plan.hkv != 0) {
        fail(InputError("num_kv_heads: " + std::to_string(plan.hkv) +
                        " does not divide num_heads " + std::to_string(plan.h)));
    }
    if (key[0] != value[0] || key[1] != value[1]) {
        fail(InputError::shape("value", {key[0], key[1], kAnyDim}, {value.begin(), value.end()}));
    }
    if (key[0] != query[0] && key[0] != 1) {
        fail(InputError::shape("key", {query[0], kAnyDim, kAnyDim}, {key.begin(), key.end()}));
    }
    plan.b = query[0];
    plan.bk = key[0];
    plan.lq = query[1];
    plan.lk = key[1];
    plan.eq = query[2];
    plan.ek = key[2];
    plan.ev = value[2];

    static const BasicProjections<T> none;
    const BasicProjections<T>& w = projections != nullptr ? *projections : none;
    const auto features = [&size](Weight<T> weight,
                                  const std::optional<xt::xtensor<T, 1>>& bias,
                                  std::size_t in,
                                  const char* w_name,
                                  const char* b_name) {
        const LinearShape<T> shape(weight, bias);
        return size([&] { return shape.features(in, w_name, b_name); },
                    shape.w ? (*shape.w)[0] : in);
    };
    plan.pq = features({w.w_q, w.stored_q}, w.b_q, plan.eq, "w_q", "b_q");
    plan.pk = features({w.w_k, w.stored_k}, w.b_k, plan.ek, "w_k", "b_k");
    plan.pv = features({w.w_v, w.stored_v}, w.b_v, plan.ev, "w_v", "b_v");
    const bool projected = projections != nullptr;
    const auto split = [&size](std::size_t f, std::size_t heads, const char* what) {
        return size([&] { return head_dim(f, heads, what); }, f / std::max<std::size_t>(heads, 1));
    };
    plan.d = split(plan.pq, plan.h, projected ? "w_q (projected query)" : "query");
    const std::size_t dk = split(plan.pk, plan.hkv, projected ? "w_k (projected key)" : "key");
    plan.dv = split(plan.pv, plan.hkv, projected ? "w_v (projected value)" : "value");
    if (dk != plan.d) {
        fail(InputError(std::string(projected ? "w_k" : "key") + ": key features " +
                        std::to_string(plan.pk) + " split into " + std::to_string(plan.hkv) +
                        " key/value heads give head dim " + std::to_string(dk) +
                        ", but the query's head dim is " + std::to_string(plan.d) +
                        " (query features " + std::to_string(plan.pq) + " / " +
                        std::to_string(plan.h) + " heads)"));
    }
    plan.merged = plan.h * plan.dv;
    plan.eo = features({w.w_o, w.stored_o}, w.b_o, plan.merged, "w_o", "b_o");
    return plan;
}

template <class T>
BasicLayerResult<T> attend_layer(const BasicTensor3<T>& query,
                                 const BasicTensor3<T>& key,
                                 const BasicTensor3<T>& value,
                                 const std::type_identity_t<BasicLayerSpec<T>>& spec) {
    return attend_layer_impl(query, key, value, spec);
}

template LayerPlan plan_layer<float>(const LayerShapes&, const Projections*);
template LayerPlan plan_layer<double>(const LayerShapes&, const BasicProjections<double>*);
template LayerResult
attend_layer<float>(const Tensor3&, const Tensor3&, const Tensor3&, const LayerSpec&);
template BasicLayerResult<double> attend_layer<double>(const BasicTensor3<double>&,
                                                       const BasicTensor3<double>&,
                                                       const BasicTensor3<double>&,
                                                       const BasicLayerSpec<double>&);

} // namespace attn

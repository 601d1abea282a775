// The attention layer (projections -> heads -> attend -> merge -> output projection)
// and the reproducible random weights of the `init` field.
#include "attn/layer.hpp"

#include "attn/error.hpp"
#include "attn/projection.hpp"

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

template <class T>
BasicProjections<T> random_projections(std::uint64_t seed,
                                       std::size_t e_q,
                                       std::size_t e_k,
                                       std::size_t e_v,
                                       std::size_t dim,
                                       std::size_t num_heads,
                                       std::size_t num_kv_heads,
                                       bool output_projection,
                                       bool bias) {
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

template Projections random_projections<float>(std::uint64_t,
                                               std::size_t,
                                               std::size_t,
                                               std::size_t,
                                               std::size_t,
                                               std::size_t,
                                               std::size_t,
                                               bool,
                                               bool);
template BasicProjections<double> random_projections<double>(std::uint64_t,
                                                             std::size_t,
                                                             std::size_t,
                                                             std::size_t,
                                                             std::size_t,
                                                             std::size_t,
                                                             std::size_t,
                                                             bool,
                                                             bool);

namespace {

template <class T>
xt::xtensor<T, 3> project(const xt::xtensor<T, 3>& x,
                          const std::optional<xt::xtensor<T, 2>>& w,
                          const std::optional<xt::xtensor<T, 1>>& b,
                          const char* w_name,
                          const char* b_name) {
    if (w) {
        return linear(x, *w, b ? &*b : nullptr, w_name);
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

template <class T>
BasicLayerResult<T> attend_layer_impl(const xt::xtensor<T, 3>& query,
                                      const xt::xtensor<T, 3>& key,
                                      const xt::xtensor<T, 3>& value,
                                      const BasicLayerSpec<T>& spec) {
    const std::size_t n_h = spec.num_heads;
    const std::size_t n_hkv = spec.num_kv_heads == 0 ? n_h : spec.num_kv_heads;
    if (n_h == 0) {
        throw InputError("num_heads: must be at least 1");
    }
    if (n_hkv == 0 || n_h % n_hkv != 0) {
        throw InputError("num_kv_heads: " + std::to_string(n_hkv) + " does not divide num_heads " +
                         std::to_string(n_h));
    }
    if (key.shape()[0] != value.shape()[0] || key.shape()[1] != value.shape()[1]) {
        throw InputError::shape(
            "value", {key.shape()[0], key.shape()[1], kAnyDim}, shape_of(value));
    }
    if (key.shape()[0] != query.shape()[0] && key.shape()[0] != 1) {
        throw InputError::shape("key", {query.shape()[0], kAnyDim, kAnyDim}, shape_of(key));
    }

    static const BasicProjections<T> none;
    const BasicProjections<T>& p = spec.projections != nullptr ? *spec.projections : none;
    const xt::xtensor<T, 3> q = project(query, p.w_q, p.b_q, "w_q", "b_q");
    const xt::xtensor<T, 3> k = project(key, p.w_k, p.b_k, "w_k", "b_k");
    const xt::xtensor<T, 3> v = project(value, p.w_v, p.b_v, "w_v", "b_v");

    const bool projected = spec.projections != nullptr;
    const xt::xtensor<T, 4> qh = split_heads(q, n_h, projected ? "w_q (projected query)" : "query");
    const xt::xtensor<T, 4> kh = split_heads(k, n_hkv, projected ? "w_k (projected key)" : "key");
    const xt::xtensor<T, 4> vh =
        split_heads(v, n_hkv, projected ? "w_v (projected value)" : "value");
    if (kh.shape()[3] != qh.shape()[3]) {
        throw InputError(std::string(projected ? "w_k" : "key") + ": key features " +
                         std::to_string(k.shape()[2]) + " split into " + std::to_string(n_hkv) +
                         " key/value heads give head dim " + std::to_string(kh.shape()[3]) +
                         ", but the query's head dim is " + std::to_string(qh.shape()[3]) +
                         " (query features " + std::to_string(q.shape()[2]) + " / " +
                         std::to_string(n_h) + " heads)");
    }

    BasicAttentionResult<T> r = attend(qh, kh, vh, spec.attention);
    BasicLayerResult<T> out;
    out.output = merge_heads(r.output);
    if (p.w_o) {
        out.output = linear(out.output, *p.w_o, p.b_o ? &*p.b_o : nullptr, "w_o");
    } else if (p.b_o) {
        out.output = project<T>(out.output, std::nullopt, p.b_o, "w_o", "b_o");
    }
    out.weights = std::move(r.weights);
    out.rows_fully_masked = r.rows_fully_masked;
    out.diagnostics = std::move(r.diagnostics);
    return out;
}

} // namespace

LayerResult attend_layer(const Tensor3& query,
                         const Tensor3& key,
                         const Tensor3& value,
                         const LayerSpec& spec) {
    return attend_layer_impl(query, key, value, spec);
}

BasicLayerResult<double> attend_layer(const BasicTensor3<double>& query,
                                      const BasicTensor3<double>& key,
                                      const BasicTensor3<double>& value,
                                      const BasicLayerSpec<double>& spec) {
    return attend_layer_impl(query, key, value, spec);
}

} // namespace attn

// The attention layer: projections, head split, attend(), head merge and the output
// projection composed the way nn.MultiheadAttention composes them. The variants of the
// contract (self, cross, multihead, GQA) are all this one function with different
// sources and weights.
#pragma once

#include "attn/attention.hpp"
#include "attn/tensor.hpp"

#include <cstdint>
#include <optional>

namespace attn {

/// nn.Linear-layout projection weights ([out, in]); an absent weight is the identity
/// (no projection), an absent bias is zero. w_o absent: no output projection.
/// T: float (Projections) or double (BasicProjections<double>, precision f64).
template <class T> struct BasicProjections {
    std::optional<xt::xtensor<T, 2>> w_q, w_k, w_v, w_o;
    std::optional<xt::xtensor<T, 1>> b_q, b_k, b_v, b_o;
};
using Projections = BasicProjections<float>;

/// Reproducible nn.Linear-style weights, uniform in [-1/sqrt(in), 1/sqrt(in)).
/// Generator: splitmix64 seeded with `seed`; each value takes the top 24 bits of one
/// draw, u = bits / 2^24, w = (2u - 1) / sqrt(in). Draw order: w_q, w_k, w_v, then w_o
/// (if output_projection), then b_q, b_k, b_v, b_o (if bias), each row-major.
/// Shapes: w_q [dim, e_q], w_k [kv_dim, e_k], w_v [kv_dim, e_v], w_o [e_q, dim] where
/// kv_dim = dim / num_heads * num_kv_heads.
/// T = double: the same weights not rounded through float32, w = (2u - 1) / sqrt(in)
/// exactly as double arithmetic gives it (float rounds that to float32).
template <class T = float>
BasicProjections<T> random_projections(std::uint64_t seed,
                                       std::size_t e_q,
                                       std::size_t e_k,
                                       std::size_t e_v,
                                       std::size_t dim,
                                       std::size_t num_heads,
                                       std::size_t num_kv_heads,
                                       bool output_projection,
                                       bool bias);

template <class T> struct BasicLayerSpec {
    std::size_t num_heads = 1;
    std::size_t num_kv_heads = 0;                     ///< 0: num_heads
    const BasicProjections<T>* projections = nullptr; ///< null: the sources are Q, K, V
    BasicAttentionSpec<T> attention; ///< scale, masks ([B|1, H|1, Lq, Lk]), threads
};
using LayerSpec = BasicLayerSpec<float>;

template <class T> struct BasicLayerResult {
    xt::xtensor<T, 3> output;                 ///< [B, Lq, E_out]
    std::optional<xt::xtensor<T, 4>> weights; ///< [B, H, Lq, Lk] iff attention.want_weights
    std::int64_t rows_fully_masked = 0;
    BasicRowDiagnostics<T> diagnostics{}; ///< [B, H, Lq, 1 or K], as attend() returns them
};
using LayerResult = BasicLayerResult<float>;

/// Multi-head attention over rank-3 sources.
///   query: [B, Lq, Eq]   key: [Bk, Lk, Ek]   value: [Bk, Lk, Ev]   (Bk in {1, B})
/// Q = query·w_qᵀ + b_q (likewise K, V), split into num_heads (Q) and num_kv_heads (K, V)
/// heads along the features, attend(), merge, then ·w_oᵀ + b_o when w_o is given.
/// The default scale is 1/sqrt(head dim of Q).
/// Throws InputError naming the weight or source whose shape does not fit.
LayerResult
attend_layer(const Tensor3& query, const Tensor3& key, const Tensor3& value, const LayerSpec& spec);

/// The float64 layer (precision f64): dgemm projections and the float64 attend().
BasicLayerResult<double> attend_layer(const BasicTensor3<double>& query,
                                      const BasicTensor3<double>& key,
                                      const BasicTensor3<double>& value,
                                      const BasicLayerSpec<double>& spec);

} // namespace attn

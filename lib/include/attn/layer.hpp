// The attention layer: projections, head split, attend(), head merge and the output
// projection composed the way nn.MultiheadAttention composes them. The variants of the
// contract (self, cross, multihead, GQA) are all this one function with different
// sources and weights.
#pragma once

#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/norm.hpp"
#include "attn/rope.hpp"
#include "attn/stored_weight.hpp"
#include "attn/tensor.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace attn {

/// nn.Linear-layout projection weights ([out, in]); an absent weight is the identity
/// (no projection), an absent bias is zero. w_o absent: no output projection.
/// T: float (Projections) or double (BasicProjections<double>, precision f64).
/// Eq, Ek, Ev: the query, key and value sources' features; H, Hkv: query and key/value
/// heads; D, Dv: query/key and value head dims; Eo: the output's features (LayerPlan):
///   w_q  [H·D, Eq]     b_q  [H·D]
///   w_k  [Hkv·D, Ek]   b_k  [Hkv·D]
///   w_v  [Hkv·Dv, Ev]  b_v  [Hkv·Dv]
///   w_o  [Eo, H·Dv]    b_o  [Eo]
/// A bias without its weight has the source's features (b_q [Eq], ...; b_o [H·Dv]).
/// stored_q, ... (float32 runs of a model file): the same weight as its file stores it,
/// multiplied there (attn/stored_weight.hpp); set instead of w_q, ..., never with it.
template <class T> struct BasicProjections {
    std::optional<xt::xtensor<T, 2>> w_q, w_k, w_v, w_o;
    std::optional<xt::xtensor<T, 1>> b_q, b_k, b_v, b_o;
    std::optional<StoredWeight> stored_q, stored_k, stored_v, stored_o;
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
/// What random_projections draws: the seed, the sources' widths, the projected dim and
/// the heads, and which optional weights exist. Its shapes, as BasicProjections names them:
///   w_q  [dim, e_q]     b_q  [dim]
///   w_k  [kv_dim, e_k]  b_k  [kv_dim]
///   w_v  [kv_dim, e_v]  b_v  [kv_dim]
///   w_o  [e_q, dim]     b_o  [e_q]
struct RandomInit {
    std::uint64_t seed = 0;
    std::size_t e_q = 0, e_k = 0, e_v = 0; ///< widths of the query, key and value sources
    std::size_t dim = 0;
    std::size_t num_heads = 1, num_kv_heads = 1;
    bool output_projection = false;
    bool bias = false;
};

template <class T = float> BasicProjections<T> random_projections(const RandomInit& init);

/// The shapes of one layer, resolved the way attend_layer() composes them:
///   sources [B, Lq, Eq], [Bk, Lk, Ek], [Bk, Lk, Ev]  ->  projected features Pq, Pk, Pv
///   -> heads [B, H, Lq, D], [Bk, Hkv, Lk, D], [Bk, Hkv, Lk, Dv]  ->  merged [B, Lq, H·Dv]
///   -> output [B, Lq, Eo] (Eo = H·Dv without w_o).
struct LayerPlan {
    std::size_t b = 1, bk = 1, lq = 0, lk = 0, h = 1, hkv = 1, d = 0, dv = 0;
    std::size_t eq = 0, ek = 0, ev = 0; ///< source features
    std::size_t pq = 0, pk = 0, pv = 0; ///< projected features (= source without weights)
    std::size_t merged = 0, eo = 0;     ///< H·Dv, and the output's features after w_o
    /// The first shape the layer refuses; the sizes above then go on as far as they can
    /// (a weight's rows, features / heads rounded down), for estimates.
    std::optional<InputError> error;

    /// Throws `error`, if any.
    void check() const;
};

/// What plan_layer() resolves: the sources' shapes and the heads.
struct LayerShapes {
    std::array<std::size_t, 3> query{}, key{}, value{}; ///< [B, Lq, Eq], [Bk, Lk, Ek], [Bk, Lk, Ev]
    std::size_t num_heads = 1;
    std::size_t num_kv_heads = 0; ///< 0: num_heads
};

/// The layer's shape plan: every check attend_layer() makes before it computes, in its
/// order and with its messages (num_heads, num_kv_heads, the sources' batch and length,
/// each projection, the head split, the query/key head dims, w_o). Never throws: a shape
/// that does not fit is LayerPlan::error, naming the weight or source (attend_layer()
/// throws it). projections null: the sources are Q, K, V.
template <class T>
LayerPlan plan_layer(const LayerShapes& shapes, const BasicProjections<T>* projections);

/// What a q/k norm normalizes: each head's D features (Qwen3, Gemma 3, StableLM, Phi) or
/// the whole projection's H·D (OLMo 2).
enum class QkNormScope { head, projection };

/// How attend_layer() composes one layer. Its tensors (B, Bk, Lq, Lk, H, Eq, Ek, Ev as
/// attend_layer() names them):
///   projections                  as BasicProjections
///   attention.keep_mask, .bias   [B|1, H|1, Lq|1, Lk]
///   attention.key_padding        [B|1, 1, 1, Lk]
///   norm                         weight, bias [Eq]: every source goes through it, so
///                                Eq = Ek = Ev
///   rope_positions               query [Lq] or [B·Lq], key [Lk] or [Bk·Lk]
template <class T> struct BasicLayerSpec {
    std::size_t num_heads = 1;
    std::size_t num_kv_heads = 0;                     ///< 0: num_heads
    const BasicProjections<T>* projections = nullptr; ///< null: the sources are Q, K, V
    BasicAttentionSpec<T> attention; ///< scale, masks ([B|1, H|1, Lq, Lk]), threads
    /// The pre-attention norm (GPT-2 ln_1, llama input_layernorm), applied to each source
    /// before the projections. null: none.
    const BasicNorm<T>* norm = nullptr;
    /// Rotary embeddings applied to the query and key heads after the head split (Hugging
    /// Face order: project, split, rotate, attend). null: none.
    const RopeSpec* rope = nullptr;
    RopePositions rope_positions; ///< empty lists: rope_positions(Lq, Lk)'s defaults
    /// Norms of the projected Q and K (before RoPE), over qk_norm_scope: weight [D] or
    /// [H·D] (K: [Hkv·D]; apply_head_norm). null: none.
    const BasicNorm<T>* q_norm = nullptr;
    const BasicNorm<T>* k_norm = nullptr;
    QkNormScope qk_norm_scope = QkNormScope::head;
};
using LayerSpec = BasicLayerSpec<float>;

/// attend_layer()'s result (Eo: the output's features, H·Dv without w_o; K: top_k):
///   output       [B, Lq, Eo]
///   weights      [B, H, Lq, Lk]      iff attention.want_weights
///   diagnostics  [B, H, Lq, 1 or K]  as attend() returns them
template <class T> struct BasicLayerResult {
    xt::xtensor<T, 3> output;
    std::optional<xt::xtensor<T, 4>> weights;
    std::int64_t rows_fully_masked = 0;
    BasicRowDiagnostics<T> diagnostics{};
};
using LayerResult = BasicLayerResult<float>;

/// Multi-head attention over rank-3 sources.
///   query: [B, Lq, Eq]   key: [Bk, Lk, Ek]   value: [Bk, Lk, Ev]   (Bk in {1, B})
/// Each source goes through spec.norm first (when set); Q = query·w_qᵀ + b_q (likewise K,
/// V), Q and K through spec.q_norm and k_norm (when set), split into num_heads (Q) and num_kv_heads
/// (K, V) heads along the features, Q and K rotated by spec.rope (when set), attend(), merge, then
/// ·w_oᵀ + b_o when w_o is given. The default scale is 1/sqrt(head dim of Q). T = float (sgemm
/// projections, the float attend()) or double (precision f64: dgemm projections, the float64
/// attend()). Throws InputError naming the weight or source whose shape does not fit.
template <class T>
BasicLayerResult<T> attend_layer(const BasicTensor3<T>& query,
                                 const BasicTensor3<T>& key,
                                 const BasicTensor3<T>& value,
                                 const std::type_identity_t<BasicLayerSpec<T>>& spec);

} // namespace attn

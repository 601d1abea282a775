// The attention kernels behind attend(), exposed so tests and benchmarks can call each
// one directly. Both assume attend_check() passed. Legend: B batch, H query heads,
// Hkv key/value heads, Lq queries, Lk keys, D query/key features, Dv value features.
#pragma once

#include "attn/attention.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn {

/// attend_materialized into a caller-owned result (see attend_into(): storage of the right
/// shape is kept, every element overwritten). T is float or double.
template <class T>
void attend_materialized_into(BasicTensorView<T> q,
                              BasicTensorView<T> k,
                              BasicTensorView<T> v,
                              const BasicAttentionSpec<T>& spec,
                              BasicAttentionResult<T>& result);
template <class T>
void attend_materialized_into(const BasicTensor<T>& q,
                              const BasicTensor<T>& k,
                              const BasicTensor<T>& v,
                              const BasicAttentionSpec<T>& spec,
                              BasicAttentionResult<T>& result) {
    attend_materialized_into(
        BasicTensorView<T>(q), BasicTensorView<T>(k), BasicTensorView<T>(v), spec, result);
}

/// Scores a block of 64 queries against all visible keys with blocked GEMMs (Q·Kᵀ, then
/// P·V) and a vectorised softmax per row, and keeps the weights when spec.want_weights.
/// Memory: output (+ weights) + a packed copy of K + one 64×Lk buffer per thread.
/// Shapes, broadcasting and the fully-masked-row rule are those of attend().
///
/// T = double is the float64 kernel behind attend(): per (batch, head, block of 64
/// queries) one dgemm for the scores against all keys, a scalar double softmax with every
/// feature and diagnostic, one dgemm for P·V. Weights are written into the result when
/// spec.want_weights, else into a per-thread 64×Lk buffer (no Lq×Lk matrix). Every output
/// row is computed by one thread: bit-identical for every thread count. spec.simd is ignored.
template <class T>
BasicAttentionResult<T> attend_materialized(const BasicTensor<T>& q,
                                            const BasicTensor<T>& k,
                                            const BasicTensor<T>& v,
                                            const BasicAttentionSpec<T>& spec) {
    BasicAttentionResult<T> result;
    attend_materialized_into(q, k, v, spec, result);
    return result;
}

/// Streams over blocks of keys with an online softmax (FlashAttention-style) and never
/// forms the Lq×Lk matrix: memory is the output plus O((G·D + KB)·64) floats per thread,
/// where G = H / Hkv. Ignores spec.want_weights (returns no weights). Agrees with
/// attend_materialized within float32 tolerance; bit-identical for every thread count.
/// Blocks of keys that the causal rule or the key-padding mask hides from every query of a
/// block are skipped, so causal attention costs about half.
///
/// Example:
///   auto r = attend_streaming(q, k, v, {.causal = Causal::top_left, .threads = 2});
AttentionResult
attend_streaming(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec);

/// attend_streaming into a caller-owned result (see attend_into()).
void attend_streaming_into(
    TensorView q, TensorView k, TensorView v, const AttentionSpec& spec, AttentionResult& result);

/// The working memory a kernel allocates beyond its inputs and its result, in bytes
/// (saturating at 2^64 - 1): the memory estimate adds it instead of knowing block sizes.
struct Workspace {
    std::uint64_t shared = 0;     ///< once per call (the float kernel's packed Kᵀ)
    std::uint64_t per_thread = 0; ///< per worker thread (score blocks, running sums)
    std::uint64_t total(unsigned threads) const;
};

/// attend_materialized's workspace in precision T for q [B, H, Lq, D], k [Bk, Hkv, Lk, D],
/// v [Bk, Hkv, Lk, Dv]: float packs Kᵀ (the size of K); without weights, or with weights
/// going to spec.weights_to, each thread scores into one QB x Lk block; top-k sorts a row's
/// keys.
template <class T>
Workspace materialized_workspace(const Shape& q,
                                 const Shape& k,
                                 const Shape& v,
                                 const BasicAttentionSpec<T>& spec);

/// attend_streaming's workspace: per thread the group's scaled Qᵀ blocks, one KB x QB score
/// block and a running max, sum and argmax per query row (independent of Lq and Lk).
Workspace streaming_workspace(const Shape& q, const Shape& k, const Shape& v);

/// The workspace of the kernel attend() runs for these shapes and this spec.
template <class T>
Workspace
attend_workspace(const Shape& q, const Shape& k, const Shape& v, const BasicAttentionSpec<T>& spec);

namespace detail {

/// One query row through the score pipeline (lib/src/core/kernel_score-inl.h), the one
/// definition of the per-score transform and the row statistics that every kernel
/// instantiates; for tests. Query i of (batch b, head h) of a call with Lq queries and
/// raw.size() keys, raw[j] = q_i·k_j unscaled: `scores` the final scores (scale, softcap,
/// bias, ALiBi; -inf where blocked), `weights` and `lse` the softmax with the sink (the
/// scalar feature row in T); all zeros and lse = -inf when the row sees no key. The spec's
/// operands must cover (b, h, i) as attend_check() requires.
template <class T> struct ScoreRow {
    std::vector<T> scores;
    std::vector<T> weights;
    T lse{};
};
template <class T>
ScoreRow<T> score_row(const std::vector<T>& raw,
                      T scale,
                      const BasicAttentionSpec<T>& spec,
                      std::size_t b,
                      std::size_t h,
                      std::size_t i,
                      std::size_t lq);

} // namespace detail

/// The Highway target `simd` resolves to on this CPU ("AVX3", "AVX2", "NEON", "SCALAR", ...;
/// "unknown" for a value no compiled target has), for reports and --version.
const char* simd_name(Simd simd);

} // namespace attn

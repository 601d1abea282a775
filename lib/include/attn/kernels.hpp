// The attention kernels behind attend(), exposed so tests and benchmarks can call each
// one directly. Both assume attend_check() passed. Legend: B batch, H query heads,
// Hkv key/value heads, Lq queries, Lk keys, D query/key features, Dv value features.
#pragma once

#include "attn/attention.hpp"

namespace attn {

/// Scores a block of 64 queries against all visible keys with blocked GEMMs (Q·Kᵀ, then
/// P·V) and a vectorised softmax per row, and keeps the weights when spec.want_weights.
/// Memory: output (+ weights) + a packed copy of K + one 64×Lk buffer per thread.
/// Shapes, broadcasting and the fully-masked-row rule are those of attend().
AttentionResult
attend_materialized(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec);

/// The float64 kernel behind attend(const Tensor64&, ...): per (batch, head, block of 64
/// queries) one dgemm for the scores against all keys, a scalar double softmax with every
/// feature and diagnostic, one dgemm for P·V. Weights are written into the result when
/// spec.want_weights, else into a per-thread 64×Lk buffer (no Lq×Lk matrix). Every output
/// row is computed by one thread: bit-identical for every thread count. spec.simd is ignored.
AttentionResult64 attend_materialized(const Tensor64& q,
                                      const Tensor64& k,
                                      const Tensor64& v,
                                      const AttentionSpec64& spec);

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

/// The Highway target `simd` resolves to on this CPU ("AVX3", "AVX2", "NEON", "SCALAR", ...;
/// "unknown" for a value no compiled target has), for reports and --version.
const char* simd_name(Simd simd);

} // namespace attn

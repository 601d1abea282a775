// The attention kernels behind attend(), exposed so tests and benchmarks can call each
// one directly. Both assume attend_check() passed. Legend: B batch, H query heads,
// Hkv key/value heads, Lq queries, Lk keys, D query/key features, Dv value features.
#pragma once

#include "attn/attention.hpp"

namespace attn {

/// Scores a block of queries against all keys with BLAS (Q·Kᵀ and P·V) and keeps the
/// weights when spec.want_weights. Memory: output (+ weights) + one block×Lk buffer
/// per thread.
AttentionResult attend_materialized(const Tensor& q,
                                    const Tensor& k,
                                    const Tensor& v,
                                    const AttentionSpec& spec);

}  // namespace attn

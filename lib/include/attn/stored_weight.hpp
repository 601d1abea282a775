// A weight matrix that stays as its model file stores it (a GGUF's Q4_0 blocks, a BF16
// shard) and is multiplied where it lies: the core knows it by its shape and its product
// y = x·Wᵀ only. The model layer makes them (model::stored_weight); the bytes, their
// types and the kernels that read them are not the core's business.
#pragma once

#include "attn/attention.hpp"

#include <cstddef>
#include <functional>
#include <span>

namespace attn {

/// W [rows, cols] in nn.Linear's layout ([out, in]) behind its product.
struct StoredWeight {
    std::size_t rows = 0; ///< out features
    std::size_t cols = 0; ///< in features
    /// y [n, rows] = x [n, cols] · Wᵀ, both row-major float32, y overwritten, on `threads`
    /// threads (0: every hardware thread) and SIMD target `simd`; y is bit-identical for
    /// any thread count. Holds (shares) whatever W's bytes live in.
    std::function<void(
        std::span<const float> x, std::size_t n, std::span<float> y, unsigned threads, Simd simd)>
        multiply;
};

} // namespace attn

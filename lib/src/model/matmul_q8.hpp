// The integer path of the stored-type products (matmul_q8.cpp): activations rounded to
// Q8_0 as ggml's quantize_row_q8_0 does, multiplied with Q8_0 or Q4_0 weights in exact
// int32 block sums (quant_dot-inl.h, per SIMD target). matmul.cpp calls it for
// MatmulOptions::activations == Activations::q8_0.
#pragma once

#include "attn/model/matmul.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace attn::model::detail {

/// Rows of activations rounded to Q8_0: per 32-block of a row, d = amax / 127 (stored as
/// binary16, as ggml stores it, here widened back to float), q = round(x · (1 / d)) with
/// the unrounded d (ggml's reference rule; 0 for an all-zero block), and Σ q. A block
/// holding a NaN or an infinity gets d = NaN (so its products are NaN, as the float32
/// products' would be non-finite).
struct Q8Rows {
    std::size_t blocks = 0;        ///< per row
    std::vector<std::int8_t> q;    ///< [rows, blocks · 32]
    std::vector<float> d;          ///< [rows, blocks]
    std::vector<std::int32_t> sum; ///< [rows, blocks]
};

/// x [rows, k] (k a multiple of 32) rounded to Q8_0, rows shared among `threads`.
Q8Rows
quantize_q8_0_rows(std::span<const float> x, std::size_t rows, std::size_t k, unsigned threads);

/// Whether the integer path multiplies ggml type `type` (Q8_0, Q4_0).
bool q8_supports(std::uint32_t type);

/// y = x · Wᵀ with x rounded to Q8_0: stored_matmul's integer path (shapes checked there,
/// rows_x, w.rows and w.cols nonzero, `row_bytes` the bytes of one stored row).
void q8_matmul(std::span<const float> x,
               std::size_t rows_x,
               const StoredMatrix& w,
               std::size_t row_bytes,
               std::span<float> y,
               const MatmulOptions& options);

} // namespace attn::model::detail

// The integer path of the stored-type products (matmul_q8.cpp): activations rounded to
// Q8_0 (ggml's quantize_row_q8_0) for Q8_0 and Q4_0 weights, or to Q8_K (ggml's
// quantize_row_q8_K_ref) for Q4_K, Q5_K and Q6_K, multiplied in exact int32 block sums
// (quant_dot-inl.h and quant_dot_k-inl.h, per SIMD target). matmul.cpp calls it where
// input_rounding says so. input_rounding is also the rule of the BF16 pair products
// (matmul_bf16.hpp): which weights each --activations choice reaches, in one place.
#pragma once

#include "attn/model/matmul.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace attn::model::detail {

struct MatmulOps; // model/matmul_ops.hpp

/// What a product's activations are rounded to (none: the f32 products): Q8_0 or Q8_K for
/// the integer path, BF16 for the BF16 pair products (matmul_bf16.hpp).
enum class Rounding { none, q8_0, q8_k, bf16 };

/// The one rule of which weights take a path other than the f32 products: ggml type `type`
/// under `activations` (q8_0: Q8_0 and Q4_0 to Q8_0; q8: those, and Q4_K, Q5_K, Q6_K to
/// Q8_K; bf16: BF16 to BF16). Every other type keeps the f32 products.
Rounding input_rounding(std::uint32_t type, Activations activations);

/// Whether ggml type `type`'s products round their inputs under `activations`.
inline bool rounds_inputs(std::uint32_t type, Activations activations) {
    return input_rounding(type, activations) != Rounding::none;
}

/// Rows of activations rounded to Q8_0 or Q8_K.
/// Q8_0: per 32-block of a row, d = amax / 127 (stored as binary16, as ggml stores it, here
/// widened back to float), q = round(x · (1 / d)) with the unrounded d (ggml's reference
/// rule, ties away from zero; 0 for an all-zero block), and Σ q per block.
/// Q8_K: per 256-block, iscale = −127 / x_max (x_max the first element of largest
/// magnitude), q = min(127, round(iscale · x)) with ties to even (ggml's nearest_int),
/// d = 1 / iscale (float32, negative when x_max > 0; 0 for an all-zero block), and Σ q
/// per 16 (ggml's bsums).
/// A block holding a NaN or an infinity gets d = NaN (so its products are NaN, as the
/// float32 products' would be non-finite).
/// The vectors may be longer than the rows need (quantize_rows).
struct Q8Rows {
    std::size_t blocks = 0;        ///< per row (of 32 for Q8_0, of 256 for Q8_K)
    std::vector<std::int8_t> q;    ///< [rows, k]
    std::vector<float> d;          ///< [rows, blocks]
    std::vector<std::int32_t> sum; ///< Q8_0: [rows, blocks]; Q8_K: [rows, k / 16]
    /// Q8_K: [rows, k / 32] the sums per 16 again, two a lane as int16 (low: the first).
    std::vector<std::int32_t> pair;
};

/// x [rows, k] rounded to Q8_K (`super`; k a multiple of 256) or Q8_0 (k a multiple of 32)
/// by `ops`'s target into `out`'s first elements (its vectors grown as needed, never
/// shrunk: a buffer reused across calls), rows shared among `threads`.
void quantize_rows(std::span<const float> x,
                   std::size_t rows,
                   std::size_t k,
                   bool super,
                   unsigned threads,
                   const MatmulOps& ops,
                   Q8Rows& out);

/// y = x · Wᵀ with x rounded as input_rounding(w.type, options.activations) says (not none):
/// stored_matmul's integer path (shapes checked there, rows_x, w.rows and w.cols nonzero,
/// `row_bytes` the bytes of one stored row).
void q8_matmul(std::span<const float> x,
               std::size_t rows_x,
               const StoredMatrix& w,
               std::size_t row_bytes,
               std::span<float> y,
               const MatmulOptions& options);

} // namespace attn::model::detail

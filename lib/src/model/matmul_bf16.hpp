// The BF16 pair products (--activations bf16) of BF16 weights: the activations rounded to
// BF16 once per call, then y = x · Wᵀ as AVX512_BF16's vdpbf16ps computes it, by that
// instruction (bf16_dot-inl.h; AVX3_DL on a CPU that has it, not by default on Intel's,
// where it measured slower) or by float32 FMAs in its pair order (the core's micro-GEMM),
// with the same bits; or, for Simd::best on a CPU with AMX-BF16, on AMX's tiles
// (matmul_amx.hpp: TDPBF16PS's order, other last bits). matmul.cpp calls it where
// input_rounding (matmul_q8.hpp) says bf16. It reads no file and checks no shapes.
#pragma once

#include "attn/model/matmul.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace attn::model::detail {

/// x rounded to BF16 as the products read it: to nearest, ties to even (ggml's
/// GGML_FP32_TO_BF16), a NaN kept a NaN (quieted), a result whose exponent field is 0
/// (a BF16 subnormal, |v| < 2⁻¹²⁶) a zero of its sign (vdpbf16ps reads such inputs as 0).
std::uint16_t bf16_rounded(float x);

/// y = x · Wᵀ for BF16 W with x rounded by bf16_rounded: stored_matmul's BF16 pair path
/// (shapes checked there, rows_x, w.rows and w.cols nonzero, `row_bytes` the bytes of one
/// stored row). Per output, along k in pairs (2i, 2i + 1; a zero pairs an odd k's last):
/// acc = fma(x[2i+1], w[2i+1], acc), then acc = fma(x[2i], w[2i], acc), with subnormal
/// weights read as zeros and sums below 2⁻¹²⁶ in magnitude flushed to zeros of their sign
/// (MXCSR FTZ and DAZ on x86 while the fallback runs); AMX's order where bf16_products says
/// "AMX" (amx_dot_bf16). Bit-identical for any thread count,
/// and across the x86 targets with FMA (AVX3_DL's vdpbf16ps, AVX3, AVX2); SSE4, SSSE3 and
/// the scalar target (no FMA: a multiply, then an add) agree wherever no product is below
/// 2⁻¹²⁶ in magnitude.
void bf16_matmul(std::span<const float> x,
                 std::size_t rows_x,
                 const StoredMatrix& w,
                 std::size_t row_bytes,
                 std::span<float> y,
                 const MatmulOptions& options);

} // namespace attn::model::detail

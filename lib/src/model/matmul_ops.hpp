// The per-target part of the stored-type matrix products (matmul.cpp drives it): one table
// per SIMD target compiled into matmul_hwy.cpp, picked once per call.
#pragma once

#include "attn/attention.hpp"
#include "attn/model/matmul.hpp"
#include "attn/model/quants.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

namespace attn::model::detail {

/// W rows per panel (one task) of every path (float32, integer, BF16 pairs): a fixed
/// partition of y's columns; for the float32 path one register tile of the micro-GEMM on
/// AVX-512 (4 vectors of 16), four on AVX2.
constexpr std::size_t kPanelRows = 64;

/// `v` rounded up to a multiple of `to` (> 0): a layout padded to whole tiles or blocks.
constexpr std::size_t round_up(std::size_t v, std::size_t to) {
    return (v + to - 1) / to * to;
}

/// `v` (a std::vector) holds at least n elements: grown (value-initialised) where it is
/// shorter, never shrunk, so a per-thread buffer the products reuse across calls of
/// different sizes is not refilled with zeros before every write (each call writes the
/// elements it reads).
template <class Vector> void hold(Vector& v, std::size_t n) {
    if (v.size() < n) {
        v.resize(n);
    }
}

/// Where W's rows m0 .. m0 + mc (mc <= kPanelRows) are stored, `row_bytes` a row (the row
/// map applied); entries past mc are null.
inline std::array<const std::uint8_t*, kPanelRows>
panel_rows(const StoredMatrix& w, std::size_t row_bytes, std::size_t m0, std::size_t mc) {
    std::array<const std::uint8_t*, kPanelRows> out{};
    for (std::size_t j = 0; j < mc; ++j) {
        const std::size_t row = w.row_of.empty() ? m0 + j : w.row_of[m0 + j];
        out[j] = w.bytes.data() + row * row_bytes;
    }
    return out;
}

/// One call of the integer products (quant_dot-inl.h, quant_dot_k-inl.h): y[n, m] for
/// n < `n`, m < `m` of the activations rounded to Q8_0 or Q8_K (matmul_q8.hpp's Q8Rows:
/// `qx` [n, k] int8, `dx` [n, blocks] their scales, `sx` each block's Σ qx [n, blocks] for
/// Q8_0, Σ qx per 16 [n, k / 16] for Q8_K) and the weight rows `w_rows[m]`, each `blocks`
/// blocks of `type` (Q8_0 or Q4_0 with Q8_0; Q4_K, Q5_K or Q6_K with Q8_K).
struct DotQ8Args {
    std::uint32_t type = 0;
    const std::uint8_t* const* w_rows = nullptr;
    std::size_t m = 0;
    const std::int8_t* qx = nullptr;
    const float* dx = nullptr;
    const std::int32_t* sx = nullptr;
    const std::int32_t* px = nullptr; ///< Q8_K: Q8Rows::pair, [n, k / 32]
    std::size_t n = 0;
    std::size_t blocks = 0;
    float* y = nullptr;
    std::size_t ldy = 0;
};

/// One call of the BF16 pair products (bf16_dot-inl.h) on one chunk of a packed panel:
/// y[n, m] for n < `n`, m < `m` (<= 64), set (or, with `accumulate`, continued) by the
/// chunk's `pairs` pairs. `x` [n, ldx] holds the rounded activations' BF16 pairs from the
/// chunk's first one (low half: the even k); `w` [pairs, 64] the panel's, one weight row a
/// lane (zeros past `m`).
struct DotBf16Args {
    const std::uint32_t* x = nullptr;
    std::size_t ldx = 0;
    const std::uint32_t* w = nullptr;
    std::size_t pairs = 0;
    std::size_t n = 0;
    std::size_t m = 0;
    float* y = nullptr;
    std::size_t ldy = 0;
    bool accumulate = false;
};

struct MatmulOps {
    /// Dequantizes n_blocks blocks of ggml type `type` (one attn dequantizes; `traits` its
    /// traits) from src to dst: quant_blocks-inl.h compiled for this target, bit-exact with
    /// dequantize_ggml.
    void (*dequantize)(std::uint32_t type,
                       const GgmlTypeTraits& traits,
                       const std::uint8_t* src,
                       std::size_t n_blocks,
                       float* dst);
    /// dst[c, r] = src[r, c] for a dequantized panel src [rows, cols] (panel_transpose-inl.h):
    /// the float32 path's micro-GEMM B operand.
    void (*transpose)(const float* src, std::size_t rows, std::size_t cols, float* dst);
    /// For F32 and BF16 both steps in one pass: dst[c, r] = the value of element c of
    /// rows[r] (the chunk's first), r < n_rows, c < cols; false for any other type.
    bool (*pack_transposed)(std::uint32_t type,
                            const std::uint8_t* const* rows,
                            std::size_t n_rows,
                            std::size_t cols,
                            float* dst);
    /// The integer products of one panel (DotQ8Args), bit-identical on every target:
    /// Q8_0 and Q4_0 weights with Q8_0 activations ...
    void (*dot_q8)(const DotQ8Args& args);
    /// ... and Q4_K, Q5_K and Q6_K weights with Q8_K activations.
    void (*dot_q8_k)(const DotQ8Args& args);
    /// One row of `blocks` blocks of 32 values rounded to Q8_0 as ggml's
    /// quantize_row_q8_0_ref rounds them (quant_round-inl.h): q, d as binary16's value,
    /// Σ q per block; the same bits on every target.
    void (*round_q8_0)(
        const float* x, std::size_t blocks, std::int8_t* q, float* d, std::int32_t* sum);
    /// The same for Q8_K (quantize_row_q8_K_ref), blocks of 256: q, d, Σ q per 16 and
    /// those sums as int16 pairs (Q8Rows's pair).
    void (*round_q8_k)(const float* x,
                       std::size_t blocks,
                       std::int8_t* q,
                       float* d,
                       std::int32_t* sums,
                       std::int32_t* pairs);
    /// Whether this target multiplies BF16 pairs with AVX512_BF16's vdpbf16ps (AVX3_DL on a
    /// CPU that has it); elsewhere matmul_bf16.cpp computes the same chain in float32 FMAs.
    bool (*bf16_pairs)();
    /// The BF16 pair products of one chunk (DotBf16Args), where bf16_pairs() (else null).
    void (*dot_bf16)(const DotBf16Args& args);
    /// dot_q8 and dot_q8_k with the VNNI instructions a CPU may have beyond this target
    /// (AVX2: AVX-VNNI's _mm256_dpbusd_avx_epi32; AVX3: AVX512_VNNI's _mm512_dpbusd_epi32;
    /// null elsewhere): the same values, where vnni_cpu() says this CPU has them.
    void (*dot_q8_vnni)(const DotQ8Args& args);
    void (*dot_q8_k_vnni)(const DotQ8Args& args);
    bool (*vnni_cpu)();
    /// The instruction, as int8_products names it: dot_q8's ("AVX512-VNNI", "maddubs",
    /// "portable") and dot_q8_vnni's ("AVX-VNNI", "AVX512-VNNI"; null without it).
    const char* int8_products;
    const char* int8_products_vnni;
};

/// Whether `ops`'s target has a VNNI pass and this CPU runs it (q8_matmul takes it unless
/// MatmulOptions::vnni is false; int8_products names it).
inline bool vnni_runs(const MatmulOps& ops) {
    return ops.dot_q8_vnni != nullptr && ops.vnni_cpu();
}

/// The table of `simd`'s target (the best this CPU runs for Simd::best). Throws
/// InputError for a target that is not compiled in or that this CPU lacks.
const MatmulOps& matmul_ops(Simd simd);

} // namespace attn::model::detail

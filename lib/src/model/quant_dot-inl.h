// The integer products of Q8_0 and Q4_0 weights with activations rounded to Q8_0 (ggml's
// quantize_row_q8_0; q8_activations.hpp), for one SIMD target: y[n, m] = Σ_b
// fma(dw[m, b] · dx[n, b], isum[n, m, b], ·) along the 32-blocks b in order, where isum is
// the exact int32 sum of the block's 32 products of int8 weights (Q4_0: nibble − 8) and
// int8 activations. The int32 sums are exact on every target and the float accumulation is
// the same chain of single-rounded FMAs on every target, so y is bit-identical across
// targets (and thread counts). x86 AVX2 and AVX-512 targets multiply a tile of 4
// activation rows × 4 weight rows with _mm256_maddubs_epi16 (or AVX-512 VNNI's
// _mm256_dpbusd_epi32) and reduce the 16 block sums with horizontal adds; the remainder of
// the tiles and every other target take the portable loop, one pair at a time.
// Included per target by matmul_hwy.cpp (Highway's -inl.h convention). It checks nothing:
// matmul_q8.cpp has.
#if defined(ATTN_MODEL_QUANT_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_MODEL_QUANT_DOT_INL_H_
#undef ATTN_MODEL_QUANT_DOT_INL_H_
#else
#define ATTN_MODEL_QUANT_DOT_INL_H_
#endif

#include "model/matmul_ops.hpp"
#include "model/quant_blocks-inl.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <hwy/highway.h>

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attn::model::detail::HWY_NAMESPACE {
namespace {

/// The exact int32 sum of one block's 32 products (portable; every target).
std::int32_t block_isum(std::uint32_t type, const std::uint8_t* w, const std::int8_t* q) {
    std::int32_t sum = 0;
    if (type == t_q4_0) {
        const std::uint8_t* qs = w + 2;
        for (std::size_t j = 0; j < 16; ++j) {
            sum += ((qs[j] & 0x0F) - 8) * q[j] + ((qs[j] >> 4) - 8) * q[j + 16];
        }
    } else { // Q8_0
        const auto* qs = reinterpret_cast<const std::int8_t*>(w + 2);
        for (std::size_t j = 0; j < 32; ++j) {
            sum += qs[j] * q[j];
        }
    }
    return sum;
}

/// y[n, m] for one pair: the portable loop, the definition every target computes.
float dot_pair(const DotQ8Args& a, std::size_t n, std::size_t m, const float* f16) {
    const std::size_t bb = a.type == t_q4_0 ? 18 : 34;
    const std::uint8_t* w = a.w_rows[m];
    const std::int8_t* q = a.qx + n * a.blocks * 32;
    const float* dx = a.dx + n * a.blocks;
    float acc = 0.0F;
    for (std::size_t b = 0; b < a.blocks; ++b) {
        const float scale = f16_at(f16, w + b * bb) * dx[b];
        const auto isum = static_cast<float>(block_isum(a.type, w + b * bb, q + b * 32));
        acc = std::fma(scale, isum, acc);
    }
    return acc;
}

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define ATTN_HAVE_DOT_TILE 1

/// Σ of 4 adjacent u8 · i8 products per int32 lane (|u| <= 128, |s| <= 127: no int16
/// saturation in maddubs, whose pair sums stay within ±32512).
inline __m256i dot_u8_i8(__m256i u, __m256i s) {
#if HWY_TARGET == HWY_AVX3_DL
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

/// One weight block as the tile multiplies it: `u` unsigned bytes and whether the
/// activations take its signs (Q8_0: |w| and sign(x, w)) or it is Q4_0's nibbles (0..15,
/// the −8 applied afterwards as −8 · Σx).
inline __m256i weight_bytes(std::uint32_t type, const std::uint8_t* w, __m256i& sign) {
    if (type == t_q4_0) {
        const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 2));
        const __m256i both = _mm256_set_m128i(_mm_srli_epi16(qs, 4), qs);
        return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
    }
    sign = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2));
    return _mm256_sign_epi8(sign, sign);
}

/// [Σ P0, Σ P1, Σ P2, Σ P3] of each 128-bit half of four int32 vectors.
inline __m256i reduce4(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
}

/// y[n0 .. n0 + 4, m0 .. m0 + 4]: per block, the 16 exact block sums as two vectors
/// [row n, m0..m0+3 | row n+1, m0..m0+3], then the same FMA chain as dot_pair, lane-wise.
void dot_tile(const DotQ8Args& a, std::size_t n0, std::size_t m0, const float* f16) {
    const std::size_t bb = a.type == t_q4_0 ? 18 : 34;
    const bool q4 = a.type == t_q4_0;
    __m256 acc01 = _mm256_setzero_ps();
    __m256 acc23 = _mm256_setzero_ps();
    const std::uint8_t* w[4] = {a.w_rows[m0], a.w_rows[m0 + 1], a.w_rows[m0 + 2], a.w_rows[m0 + 3]};
    const std::size_t row = a.blocks * 32;
    const std::int8_t* q = a.qx + n0 * row;
    const float* dx = a.dx + n0 * a.blocks;
    const std::int32_t* sx = a.sx + n0 * a.blocks;
    const std::size_t nb = a.blocks;
    for (std::size_t b = 0; b < a.blocks; ++b) {
        __m256i sg[4] = {};
        __m256i u[4];
        for (std::size_t j = 0; j < 4; ++j) {
            u[j] = weight_bytes(a.type, w[j] + b * bb, sg[j]);
        }
        __m256i rows[4];
        for (std::size_t i = 0; i < 4; ++i) {
            const __m256i x =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i * row + b * 32));
            __m256i p[4];
            for (std::size_t j = 0; j < 4; ++j) {
                p[j] = dot_u8_i8(u[j], q4 ? x : _mm256_sign_epi8(x, sg[j]));
            }
            rows[i] = reduce4(p[0], p[1], p[2], p[3]);
        }
        __m256i s01 = _mm256_add_epi32(_mm256_permute2x128_si256(rows[0], rows[1], 0x20),
                                       _mm256_permute2x128_si256(rows[0], rows[1], 0x31));
        __m256i s23 = _mm256_add_epi32(_mm256_permute2x128_si256(rows[2], rows[3], 0x20),
                                       _mm256_permute2x128_si256(rows[2], rows[3], 0x31));
        if (q4) { // Σ (u − 8) x = Σ u x − 8 Σ x
            s01 = _mm256_sub_epi32(
                s01, _mm256_set_m128i(_mm_set1_epi32(8 * sx[nb + b]), _mm_set1_epi32(8 * sx[b])));
            s23 = _mm256_sub_epi32(s23,
                                   _mm256_set_m128i(_mm_set1_epi32(8 * sx[3 * nb + b]),
                                                    _mm_set1_epi32(8 * sx[2 * nb + b])));
        }
        const __m128 dw4 = _mm_setr_ps(f16_at(f16, w[0] + b * bb),
                                       f16_at(f16, w[1] + b * bb),
                                       f16_at(f16, w[2] + b * bb),
                                       f16_at(f16, w[3] + b * bb));
        const __m256 dw = _mm256_set_m128(dw4, dw4);
        const __m256 d01 = _mm256_set_m128(_mm_set1_ps(dx[nb + b]), _mm_set1_ps(dx[b]));
        const __m256 d23 =
            _mm256_set_m128(_mm_set1_ps(dx[3 * nb + b]), _mm_set1_ps(dx[2 * nb + b]));
        acc01 = _mm256_fmadd_ps(_mm256_mul_ps(dw, d01), _mm256_cvtepi32_ps(s01), acc01);
        acc23 = _mm256_fmadd_ps(_mm256_mul_ps(dw, d23), _mm256_cvtepi32_ps(s23), acc23);
    }
    alignas(32) float out[16];
    _mm256_store_ps(out, acc01);
    _mm256_store_ps(out + 8, acc23);
    for (std::size_t i = 0; i < 4; ++i) {
        for (std::size_t j = 0; j < 4; ++j) {
            a.y[(n0 + i) * a.ldy + m0 + j] = out[i * 4 + j];
        }
    }
}
#endif

/// y[n, m] for every n < a.n, m < a.m: tiles of 4 × 4 where this target has them, the
/// portable pair loop for the rest.
void dot_q8(const DotQ8Args& a) {
    const float* f16 = f16_table();
    std::size_t n_tiled = 0;
    std::size_t m_tiled = 0;
#ifdef ATTN_HAVE_DOT_TILE
    n_tiled = a.n / 4 * 4;
    m_tiled = a.m / 4 * 4;
    for (std::size_t n0 = 0; n0 < n_tiled; n0 += 4) {
        for (std::size_t m0 = 0; m0 < m_tiled; m0 += 4) {
            dot_tile(a, n0, m0, f16);
        }
    }
#undef ATTN_HAVE_DOT_TILE
#endif
    for (std::size_t n = 0; n < a.n; ++n) {
        for (std::size_t m = n < n_tiled ? m_tiled : 0; m < a.m; ++m) {
            a.y[n * a.ldy + m] = dot_pair(a, n, m, f16);
        }
    }
}

} // namespace
} // namespace attn::model::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // include guard

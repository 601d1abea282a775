// The BF16 pair products of BF16 weights with activations rounded to BF16 (matmul_bf16.cpp)
// on AVX512_BF16, for the AVX3_DL target: one _mm512_dpbf16_ps per 16 weight rows and pair
// of k, y = x[2i+1] · w[2i+1] + x[2i] · w[2i] added to the float32 accumulator in that order,
// each step rounded to nearest even, denormal inputs and sums read and written as zeros.
// A tile is 6 activation rows x the panel's 64 weight rows (4 vectors, 24 accumulators),
// the packed panel chunk streamed from L2 for every tile. (__builtin_bit_cast, not
// std::bit_cast: a template outside the target's attributes cannot return an __m512bh.) Every other
// target (and AVX3_DL on a CPU without AVX512_BF16) has no kernel here: matmul_bf16.cpp feeds the
// core's micro-GEMM the same values instead. Included per target by matmul_hwy.cpp (Highway's
// -inl.h convention). It checks nothing: matmul_bf16.cpp has.
#if defined(ATTN_MODEL_BF16_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_MODEL_BF16_DOT_INL_H_
#undef ATTN_MODEL_BF16_DOT_INL_H_
#else
#define ATTN_MODEL_BF16_DOT_INL_H_
#endif

#include "attn/cpuid.hpp"
#include "model/matmul_ops.hpp"

#include <cstddef>
#include <cstdint>
#include <hwy/highway.h>

#if HWY_TARGET == HWY_AVX3_DL
#include <algorithm>
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attn::model::detail::HWY_NAMESPACE {
namespace {

#if HWY_TARGET == HWY_AVX3_DL
/// AVX512_BF16: CPUID leaf 7, sub-leaf 1, EAX bit 5 (Highway 1.0's AVX3_DL does not ask for
/// it: Ice Lake has AVX3_DL without it, Cooper Lake it without AVX3_DL).
bool bf16_pairs() {
    static const bool has = (attn::detail::cpuid(7, 1)[0] & (1U << 5U)) != 0;
    return has;
}

// The target's attributes plus AVX512_BF16, in place of HWY_BEFORE_NAMESPACE's (as
// quant_dot-inl.h adds VNNI).
HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR ",avx512bf16")

constexpr std::size_t kBf16Rows = 6; // activation rows per tile
constexpr std::size_t kBf16Vecs = 4; // vectors of 16 weight rows: the panel's 64

/// y[n0 .. n0 + R, 0 .. m] over the chunk's pairs: lane l of vector v is weight row
/// 16 v + l; each step broadcasts one activation row's pair to all lanes.
template <std::size_t R> void bf16_tile(const DotBf16Args& a, std::size_t n0) {
    __mmask16 mask[kBf16Vecs];
    for (std::size_t v = 0; v < kBf16Vecs; ++v) {
        const std::size_t lanes = a.m > 16 * v ? std::min<std::size_t>(16, a.m - 16 * v) : 0;
        mask[v] = static_cast<__mmask16>((1U << lanes) - 1U);
    }
    __m512 acc[R][kBf16Vecs];
    for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t v = 0; v < kBf16Vecs; ++v) {
            acc[r][v] = a.accumulate
                            ? _mm512_maskz_loadu_ps(mask[v], a.y + (n0 + r) * a.ldy + 16 * v)
                            : _mm512_setzero_ps();
        }
    }
    const std::uint32_t* x = a.x + n0 * a.ldx;
    for (std::size_t p = 0; p < a.pairs; ++p) {
        const std::uint32_t* w = a.w + p * 16 * kBf16Vecs;
        __m512bh b[kBf16Vecs];
        for (std::size_t v = 0; v < kBf16Vecs; ++v) {
            b[v] = __builtin_bit_cast(__m512bh, _mm512_loadu_si512(w + 16 * v));
        }
        for (std::size_t r = 0; r < R; ++r) {
            const __m512bh xr = __builtin_bit_cast(
                __m512bh, _mm512_set1_epi32(static_cast<std::int32_t>(x[r * a.ldx + p])));
            for (std::size_t v = 0; v < kBf16Vecs; ++v) {
                acc[r][v] = _mm512_dpbf16_ps(acc[r][v], xr, b[v]);
            }
        }
    }
    for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t v = 0; v < kBf16Vecs; ++v) {
            _mm512_mask_storeu_ps(a.y + (n0 + r) * a.ldy + 16 * v, mask[v], acc[r][v]);
        }
    }
}

/// Every activation row: tiles of kBf16Rows, then one tile of the rows left.
void dot_bf16(const DotBf16Args& a) {
    std::size_t n0 = 0;
    for (; n0 + kBf16Rows <= a.n; n0 += kBf16Rows) {
        bf16_tile<kBf16Rows>(a, n0);
    }
    switch (a.n - n0) {
    case 5:
        bf16_tile<5>(a, n0);
        break;
    case 4:
        bf16_tile<4>(a, n0);
        break;
    case 3:
        bf16_tile<3>(a, n0);
        break;
    case 2:
        bf16_tile<2>(a, n0);
        break;
    case 1:
        bf16_tile<1>(a, n0);
        break;
    default:
        break;
    }
}
constexpr auto kDotBf16 = &dot_bf16;

HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR) // HWY_BEFORE_NAMESPACE's again, for HWY_AFTER_NAMESPACE
#else
bool bf16_pairs() {
    return false;
}
constexpr void (*kDotBf16)(const DotBf16Args&) = nullptr;
#endif

} // namespace
} // namespace attn::model::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // include guard

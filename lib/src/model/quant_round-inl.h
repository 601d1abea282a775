// The integer path's activations rounded to Q8_0 and Q8_K (ggml's quantize_row_q8_0_ref and
// quantize_row_q8_K_ref) per SIMD target, in up to 16 lanes. Only IEEE operations (abs,
// max, divisions, products, adds, truncation; no contraction: matmul_hwy.cpp is built with
// -ffp-contract=off), so every target gives the reference loops' bits. Included per target
// by matmul_hwy.cpp (Highway's -inl.h convention).
#if defined(ATTN_MODEL_QUANT_ROUND_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_MODEL_QUANT_ROUND_INL_H_
#undef ATTN_MODEL_QUANT_ROUND_INL_H_
#else
#define ATTN_MODEL_QUANT_ROUND_INL_H_
#endif

#include "attn/half.hpp"
#include "model/quant_blocks-inl.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace attn::model::detail::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

/// max |x| over x[0, N) (N a multiple of `df`'s lanes), or -1 when one of them is a NaN or
/// an infinity.
template <std::size_t N, class D> float block_amax(D df, const float* x) {
    auto amax = hn::Zero(df);
    auto finite = hn::IsFinite(hn::LoadU(df, x));
    for (std::size_t j = 0; j < N; j += hn::Lanes(df)) {
        const auto v = hn::LoadU(df, x + j);
        amax = hn::Max(amax, hn::Abs(v));
        finite = hn::And(finite, hn::IsFinite(v));
    }
    return hn::AllTrue(df, finite) ? hn::GetLane(hn::MaxOfLanes(df, amax)) : -1.0F;
}

/// One row of `blocks` blocks of 32 values rounded to Q8_0: d = amax / 127 (its binary16's
/// value kept), id = 1 / d, q = roundf(x · id), Σ q per block. roundf (ties away from zero)
/// without a libm call: v + (1/2 − 2^-25) · sign(v), truncated, is roundf(v) for every float
/// |v| < 2^23 (checked on all of them). A block holding a NaN or an infinity gets q = 0,
/// d = NaN, Σ = 0. Where 1 / d overflows (d subnormal) x · id is ±inf or NaN (0 · inf;
/// ggml's q are undefined there): q is clamped to ±127 and NaN taken as -127, which keeps
/// the conversion defined; d's binary16 is 0 there, so no product depends on them.
void round_q8_0(const float* x, std::size_t blocks, std::int8_t* q, float* d, std::int32_t* sum) {
    const hn::CappedTag<float, 16> df;
    const hn::RebindToSigned<decltype(df)> di;
    const hn::Rebind<std::int8_t, decltype(di)> d8;
    constexpr std::size_t kBlock = 32;
    const std::size_t n = hn::Lanes(df);
    const auto hi = hn::Set(df, 127.0F);
    const auto lo = hn::Set(df, -127.0F);
    const auto half = hn::Set(df, 0.49999997F); // 1/2 - 2^-25
    for (std::size_t b = 0; b < blocks; ++b, x += kBlock, q += kBlock) {
        const float amax = block_amax<kBlock>(df, x);
        if (amax < 0.0F) {
            for (std::size_t j = 0; j < kBlock; ++j) {
                q[j] = 0;
            }
            d[b] = std::nanf("");
            sum[b] = 0;
            continue;
        }
        const float scale = amax / 127.0F;
        const float inverse = scale != 0.0F ? 1.0F / scale : 0.0F;
        d[b] = half_to_float(float_to_half(scale));
        const auto id = hn::Set(df, inverse);
        auto total = hn::Zero(di);
        for (std::size_t j = 0; j < kBlock; j += n) {
            const auto v = hn::Mul(hn::LoadU(df, x + j), id);
            const auto s = hn::Add(v, hn::CopySign(half, v));
            const auto r = hn::IfThenElse(hn::IsNaN(s), lo, hn::Min(hi, hn::Max(lo, s)));
            const auto qi = hn::ConvertTo(di, r);
            total = hn::Add(total, qi);
            hn::StoreU(hn::DemoteTo(d8, qi), d8, q + j);
        }
        sum[b] = hn::GetLane(hn::SumOfLanes(di, total));
    }
}

/// One row of `blocks` super-blocks of 256 values rounded to Q8_K as ggml's
/// quantize_row_q8_K_ref rounds them: iscale = -127 / x_max (x_max the first element of
/// largest magnitude, with its sign), q = min(127, nearest_int(iscale · x)) (ties to even:
/// v + 1.5 · 2^23 lies in [2^23, 2^24) for |v| < 2^22, where float32's spacing is 1, so
/// v + 1.5 · 2^23 − 1.5 · 2^23 is v rounded in the default mode, exactly; |iscale · x| <=
/// 127 · (1 + 2^-24)^2, so min(127, ·) never changes a finite one), d = 1 / iscale, `sums` Σ q per
/// 16, `pairs` the same sums as 8 int16 pairs a block. A block holding a NaN or an infinity: q = 0,
/// d = NaN; all zeros, or an iscale that overflows: q = 0, d = 0 (ggml's q come out 0 there: its
/// nearest_int of ±inf wraps to 0 in int8).
void round_q8_k(const float* x,
                std::size_t blocks,
                std::int8_t* q,
                float* d,
                std::int32_t* sums,
                std::int32_t* pairs) {
    const hn::CappedTag<float, 16> df;
    const hn::RebindToSigned<decltype(df)> di;
    const hn::Rebind<std::int8_t, decltype(di)> d8;
    constexpr std::size_t kSuper = 256;
    constexpr std::size_t kSum = 16;
    const std::size_t n = hn::Lanes(df);
    const auto magic = hn::Set(df, 12582912.0F);
    const auto hi = hn::Set(df, 127.0F);
    for (std::size_t b = 0; b < blocks; ++b, x += kSuper, q += kSuper) {
        std::int32_t* block_sums = sums + b * (kSuper / kSum);
        std::int32_t* block_pairs = pairs + b * (kSuper / 32);
        const float found = block_amax<kSuper>(df, x);
        const bool all_finite = found >= 0.0F;
        const float amax = all_finite ? found : 0.0F;
        float max = 0.0F;
        for (std::size_t j = 0; j < kSuper && amax != 0.0F; j += n) {
            const auto v = hn::LoadU(df, x + j);
            const intptr_t at = hn::FindFirstTrue(df, hn::Eq(hn::Abs(v), hn::Set(df, amax)));
            if (at >= 0) {
                max = x[j + static_cast<std::size_t>(at)];
                break;
            }
        }
        const float iscale = amax != 0.0F ? -127.0F / max : 0.0F;
        if (!all_finite || iscale == 0.0F || !std::isfinite(iscale)) {
            for (std::size_t j = 0; j < kSuper; ++j) {
                q[j] = 0;
            }
            for (std::size_t i = 0; i < kSuper / kSum; ++i) {
                block_sums[i] = 0;
            }
            for (std::size_t i = 0; i < kSuper / 32; ++i) {
                block_pairs[i] = 0;
            }
            d[b] = all_finite ? 0.0F : std::nanf("");
            continue;
        }
        const auto scale = hn::Set(df, iscale);
        for (std::size_t g = 0; g < kSuper; g += kSum) {
            auto total = hn::Zero(di);
            for (std::size_t j = g; j < g + kSum; j += n) {
                const auto p = hn::Mul(scale, hn::LoadU(df, x + j));
                const auto qi = hn::ConvertTo(di, hn::Min(hi, hn::Sub(hn::Add(p, magic), magic)));
                total = hn::Add(total, qi);
                hn::StoreU(hn::DemoteTo(d8, qi), d8, q + j);
            }
            block_sums[g / kSum] = hn::GetLane(hn::SumOfLanes(di, total));
        }
        for (std::size_t i = 0; i < kSuper / 32; ++i) { // |Σ| <= 16 · 127: int16
            block_pairs[i] = pair16(block_sums[2 * i], block_sums[2 * i + 1]);
        }
        d[b] = 1.0F / iscale;
    }
}

} // namespace
} // namespace attn::model::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // ATTN_MODEL_QUANT_ROUND_INL_H_ toggle

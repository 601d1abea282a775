// The integer path's activations rounded to Q8_0 (ggml's quantize_row_q8_0_ref) per SIMD
// target: amax, d = amax / 127, id = 1 / d, q = roundf(x · id) (ties away from zero) and
// Σ q, a block of 32 in up to 16 lanes. Only IEEE operations (abs, max, a division, a
// product, an add, truncation; no contraction: matmul_hwy.cpp is built with
// -ffp-contract=off), so every target gives the scalar loop's bits. Included per target
// by matmul_hwy.cpp (Highway's -inl.h convention).
#if defined(ATTN_MODEL_QUANT_ROUND_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_MODEL_QUANT_ROUND_INL_H_
#undef ATTN_MODEL_QUANT_ROUND_INL_H_
#else
#define ATTN_MODEL_QUANT_ROUND_INL_H_
#endif

#include "attn/half.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace attn::model::detail::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

/// One row of `blocks` blocks of 32 values rounded to Q8_0: q, d (the value of d's
/// binary16), Σ q per block. A block holding a NaN or an infinity gets q = 0, d = NaN,
/// Σ = 0. Where 1 / d overflows (d subnormal) x · id is ±inf or NaN (0 · inf): q is
/// clamped to ±127, NaN to -127, as the scalar loop's min(127, max(-127, ·)) gives; d's
/// binary16 is 0 there, so no product depends on them.
void round_q8_0(const float* x, std::size_t blocks, std::int8_t* q, float* d, std::int32_t* sum) {
    const hn::CappedTag<float, 16> df;
    const hn::RebindToSigned<decltype(df)> di;
    const hn::Rebind<std::int8_t, decltype(di)> d8;
    constexpr std::size_t kBlock = 32;
    const std::size_t n = hn::Lanes(df);
    const auto hi = hn::Set(df, 127.0F);
    const auto lo = hn::Set(df, -127.0F);
    const auto half = hn::Set(df, 0.49999997F); // (1/2 - 2^-25): roundf by truncation
    for (std::size_t b = 0; b < blocks; ++b, x += kBlock, q += kBlock) {
        auto amax = hn::Zero(df);
        auto finite = hn::IsFinite(hn::LoadU(df, x));
        for (std::size_t j = 0; j < kBlock; j += n) {
            const auto v = hn::LoadU(df, x + j);
            amax = hn::Max(amax, hn::Abs(v));
            finite = hn::And(finite, hn::IsFinite(v));
        }
        if (!hn::AllTrue(df, finite)) {
            for (std::size_t j = 0; j < kBlock; ++j) {
                q[j] = 0;
            }
            d[b] = std::nanf("");
            sum[b] = 0;
            continue;
        }
        const float scale = hn::GetLane(hn::MaxOfLanes(df, amax)) / 127.0F;
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

} // namespace
} // namespace attn::model::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // ATTN_MODEL_QUANT_ROUND_INL_H_ toggle

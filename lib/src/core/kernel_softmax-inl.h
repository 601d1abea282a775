// The softmax operations of the kernel operations for one SIMD target: the streaming
// kernel's online-softmax step over a transposed score block (KernelOps::online_softmax) and
// the weights row (KernelOps::softmax_row). Included per target by kernel_ops_hwy.cpp
// (Highway's -inl.h convention).
#if defined(ATTN_CORE_KERNEL_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_CORE_KERNEL_SOFTMAX_INL_H_
#undef ATTN_CORE_KERNEL_SOFTMAX_INL_H_
#else
#define ATTN_CORE_KERNEL_SOFTMAX_INL_H_
#endif

#include "core/kernel_ops.hpp"
#include "core/kernel_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attn::detail::HWY_NAMESPACE {
namespace {

/// online_softmax on the `count` columns from `col` (count = Lanes unless kFull is false).
template <bool kFull>
HWY_INLINE bool online_softmax_columns(float* st,
                                       std::size_t kb,
                                       float* m,
                                       float* l,
                                       float* alpha,
                                       std::size_t col,
                                       std::size_t count) {
    const D d;
    const auto load = [&](const float* p) HWY_ATTR {
        if constexpr (kFull) {
            return hn::LoadU(d, p);
        } else {
            return load_part(d, p, count);
        }
    };
    const auto store = [&](V v, float* p) HWY_ATTR {
        if constexpr (kFull) {
            hn::StoreU(v, d, p);
        } else {
            store_part(d, v, p, count);
        }
    };
    const V neg_inf = hn::Set(d, -__builtin_inff());
    // pass 1: the block's column max (NaN ignored, -inf if every key is masked). Four
    // running maxima, so the loop is not one chain of dependent max latencies; neither
    // holds a NaN, so combining them is exact in any order.
    V bmax = neg_inf;
    V bmax1 = neg_inf;
    V bmax2 = neg_inf;
    V bmax3 = neg_inf;
    std::size_t j = 0;
    for (; j + 3 < kb; j += 4) {
        const float* p0 = st + j * kScoreStride + col;
        bmax = max_ignoring_nan(load(p0), bmax);
        bmax1 = max_ignoring_nan(load(p0 + kScoreStride), bmax1);
        bmax2 = max_ignoring_nan(load(p0 + 2 * kScoreStride), bmax2);
        bmax3 = max_ignoring_nan(load(p0 + 3 * kScoreStride), bmax3);
    }
    for (; j < kb; ++j) {
        bmax = max_ignoring_nan(load(st + j * kScoreStride + col), bmax);
    }
    bmax = hn::Max(hn::Max(bmax, bmax1), hn::Max(bmax2, bmax3));
    const V m_old = load(m + col);
    const V m_new = hn::Max(bmax, m_old); // neither is NaN
    // alpha = exp(m_old - m_new) only where the max grew: elsewhere exactly 1, which
    // also avoids (-inf) - (-inf) = NaN while a column has seen no key yet.
    const auto grew = hn::Gt(m_new, m_old);
    const V a = hn::IfThenElse(grew, exp_nonpositive(d, hn::Sub(m_old, m_new)), hn::Set(d, 1.0f));
    // A column that has seen only masked keys subtracts 0, not -inf: exp(-inf - 0)
    // is exactly 0 for masked keys and a NaN score stays NaN.
    const V m_safe = hn::IfThenZeroElse(hn::Eq(m_new, neg_inf), m_new);
    // pass 2: probabilities (unnormalised) and their column sums, two rows at a time.
    V sum0 = hn::Zero(d);
    V sum1 = hn::Zero(d);
    for (j = 0; j + 1 < kb; j += 2) {
        float* p0 = st + j * kScoreStride + col;
        float* p1 = p0 + kScoreStride;
        const V e0 = exp_nonpositive(d, hn::Sub(load(p0), m_safe));
        const V e1 = exp_nonpositive(d, hn::Sub(load(p1), m_safe));
        store(e0, p0);
        store(e1, p1);
        sum0 = hn::Add(sum0, e0);
        sum1 = hn::Add(sum1, e1);
    }
    if (j < kb) {
        float* p0 = st + j * kScoreStride + col;
        const V e0 = exp_nonpositive(d, hn::Sub(load(p0), m_safe));
        store(e0, p0);
        sum0 = hn::Add(sum0, e0);
    }
    store(hn::MulAdd(load(l + col), a, hn::Add(sum0, sum1)), l + col);
    store(m_new, m + col);
    store(a, alpha + col);
    return !hn::AllFalse(d, grew);
}

bool online_softmax(float* st, std::size_t kb, float* m, float* l, float* alpha) {
    const std::size_t lanes = hn::Lanes(D());
    bool any_grew = false;
    std::size_t col = 0;
    for (; col + lanes <= kScoreColumns; col += lanes) {
        any_grew = online_softmax_columns<true>(st, kb, m, l, alpha, col, lanes) || any_grew;
    }
    if (col < kScoreColumns) { // vectors whose length does not divide 64 (some SVE CPUs)
        any_grew = online_softmax_columns<false>(st, kb, m, l, alpha, col, kScoreColumns - col) ||
                   any_grew;
    }
    return any_grew;
}

/// Keep-lanes of `count` uint8 flags at p (lanes past count: not kept).
HWY_INLINE hn::Mask<D> nonzero_bytes(const std::uint8_t* p, std::size_t count) {
    const D d;
    const hn::Rebind<std::uint8_t, D> d8;
    const hn::RebindToSigned<D> di;
    const auto wide = hn::PromoteTo(di, load_part(d8, p, count));
    return hn::RebindMask(d, hn::Ne(wide, hn::Zero(di)));
}

bool softmax_row(float* s,
                 std::size_t n,
                 float scale,
                 const float* bias,
                 const std::uint8_t* mask,
                 const std::uint8_t* pad) {
    const D d;
    const std::size_t lanes = hn::Lanes(d);
    const V neg_inf = hn::Set(d, -__builtin_inff());
    const V vscale = hn::Set(d, scale);
    // pass 1: x = s·scale + bias, blocked keys (masks, a -inf bias) -> -inf (even if x is
    // NaN); row max.
    V vmax = neg_inf;
    bool seen = false;
    for (std::size_t j = 0; j < n; j += lanes) {
        const std::size_t count = min_size(lanes, n - j);
        V x = hn::Mul(load_part(d, s + j, count), vscale);
        auto keep = hn::FirstN(d, count);
        if (bias != nullptr) {
            const V b = load_part(d, bias + j, count);
            x = hn::Add(x, b);
            keep = hn::And(keep, hn::Ne(b, neg_inf));
        }
        if (mask != nullptr) {
            keep = hn::And(keep, nonzero_bytes(mask + j, count));
        }
        if (pad != nullptr) {
            keep = hn::And(keep, nonzero_bytes(pad + j, count));
        }
        x = hn::IfThenElse(keep, x, neg_inf);
        seen = seen || !hn::AllTrue(d, hn::Eq(x, neg_inf)); // NaN counts as seen
        vmax = max_ignoring_nan(x, vmax);
        store_part(d, x, s + j, count);
    }
    if (!seen) {
        return false;
    }
    float row_max = hn::GetLane(hn::MaxOfLanes(d, vmax));
    if (row_max == -__builtin_inff()) {
        row_max = 0.0f; // only NaN scores are visible: exp(NaN - 0) keeps them NaN
    }
    // pass 2: e = exp(x - max), exactly 0 for masked keys; the sum, per lane then double.
    const V vm = hn::Set(d, row_max);
    V vsum = hn::Zero(d);
    for (std::size_t j = 0; j < n; j += lanes) {
        const std::size_t count = min_size(lanes, n - j);
        const V e = exp_nonpositive(d, hn::Sub(load_part(d, s + j, count), vm));
        vsum = hn::Add(vsum, hn::IfThenElseZero(hn::FirstN(d, count), e));
        store_part(d, e, s + j, count);
    }
    HWY_ALIGN float partial[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(vsum, d, partial);
    double sum = 0.0;
    for (std::size_t i = 0; i < lanes; ++i) {
        sum += static_cast<double>(partial[i]);
    }
    // pass 3: normalise (sum >= 1 here: the max's own term is exp(0) = 1, or NaN).
    const V inv = hn::Set(d, static_cast<float>(1.0 / sum));
    for (std::size_t j = 0; j < n; j += lanes) {
        const std::size_t count = min_size(lanes, n - j);
        store_part(d, hn::Mul(load_part(d, s + j, count), inv), s + j, count);
    }
    return true;
}

} // namespace
} // namespace attn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // ATTN_CORE_KERNEL_SOFTMAX_INL_H_

// The softmax operations of the kernel operations for one SIMD target: the streaming
// kernel's online-softmax step over a transposed score block (KernelOps::online_softmax) and
// the weights row (KernelOps::softmax_row). Their loops are here; what each step computes
// is the score pipeline's (kernel_score-inl.h) on this target's vectors (VectorLanes).
// Included per target by kernel_ops_hwy.cpp (Highway's -inl.h convention).
#if defined(ATTN_CORE_KERNEL_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_CORE_KERNEL_SOFTMAX_INL_H_
#undef ATTN_CORE_KERNEL_SOFTMAX_INL_H_
#else
#define ATTN_CORE_KERNEL_SOFTMAX_INL_H_
#endif

#include "core/kernel_ops.hpp"
#include "core/kernel_score-inl.h"
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
    using L = VectorLanes;
    const V neg_inf = L::neg_inf();
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
        bmax = L::max_ignoring_nan(load(p0), bmax);
        bmax1 = L::max_ignoring_nan(load(p0 + kScoreStride), bmax1);
        bmax2 = L::max_ignoring_nan(load(p0 + 2 * kScoreStride), bmax2);
        bmax3 = L::max_ignoring_nan(load(p0 + 3 * kScoreStride), bmax3);
    }
    for (; j < kb; ++j) {
        bmax = L::max_ignoring_nan(load(st + j * kScoreStride + col), bmax);
    }
    bmax = L::max(L::max(bmax, bmax1), L::max(bmax2, bmax3));
    // The running base grows to the block's max: alpha = exp(m_old - m_new) where it grew,
    // exactly 1 elsewhere.
    const BaseStep<L> step = raise_base<L>(load(m + col), bmax);
    // A column that has seen only masked keys subtracts 0, not -inf: exp(-inf - 0)
    // is exactly 0 for masked keys and a NaN score stays NaN.
    const V base = exp_base<L>(step.base);
    // pass 2: probabilities (unnormalised) and their column sums, two rows at a time.
    V sum0 = hn::Zero(d);
    V sum1 = hn::Zero(d);
    for (j = 0; j + 1 < kb; j += 2) {
        float* p0 = st + j * kScoreStride + col;
        float* p1 = p0 + kScoreStride;
        const V e0 = exp_weight<L>(load(p0), base);
        const V e1 = exp_weight<L>(load(p1), base);
        store(e0, p0);
        store(e1, p1);
        sum0 = hn::Add(sum0, e0);
        sum1 = hn::Add(sum1, e1);
    }
    if (j < kb) {
        float* p0 = st + j * kScoreStride + col;
        const V e0 = exp_weight<L>(load(p0), base);
        store(e0, p0);
        sum0 = hn::Add(sum0, e0);
    }
    store(hn::MulAdd(load(l + col), step.alpha, hn::Add(sum0, sum1)), l + col);
    store(step.base, m + col);
    store(step.alpha, alpha + col);
    return !hn::AllFalse(d, step.grew);
}

bool online_softmax(float* st, std::size_t kb, float* m, float* l, float* alpha) {
    const std::size_t lanes = hn::Lanes(D());
    bool any_grew = false;
    std::size_t col = 0;
    for (; col + lanes <= kScoreColumns; col += lanes) {
        any_grew = online_softmax_columns<true>(st, kb, m, l, alpha, col, lanes) || any_grew;
    }
    // Vectors whose length does not divide 64 (some SVE CPUs); on a target whose vectors
    // always do, the partial columns' code is not compiled at all.
    if constexpr (HWY_HAVE_SCALABLE || kScoreColumns % hn::MaxLanes(D()) != 0) {
        if (col < kScoreColumns) {
            any_grew =
                online_softmax_columns<false>(st, kb, m, l, alpha, col, kScoreColumns - col) ||
                any_grew;
        }
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

/// softmax_row's pass 1 on the `count` scores at s (count = Lanes when kFull): their final
/// scores through the pipeline (blocked keys -inf, lanes past count too), stored back.
template <bool kFull>
HWY_INLINE V row_scores(float* s,
                        const float* bias,
                        const std::uint8_t* mask,
                        const std::uint8_t* pad,
                        const ScoreSteps<V>& steps,
                        std::size_t count) {
    using L = VectorLanes;
    const D d;
    const auto load = [&](const float* p) HWY_ATTR {
        if constexpr (kFull) {
            return hn::LoadU(d, p);
        } else {
            return load_part(d, p, count);
        }
    };
    auto keep = hn::FirstN(d, count);
    V b = L::zero();
    if (bias != nullptr) {
        b = load(bias);
        keep = keep_unless_bias_blocks<L>(keep, true, b);
    }
    if (mask != nullptr) {
        keep = hn::And(keep, nonzero_bytes(mask, count));
    }
    if (pad != nullptr) {
        keep = hn::And(keep, nonzero_bytes(pad, count));
    }
    const V x = final_score<L>(load(s), steps, b, L::zero(), keep);
    if constexpr (kFull) {
        hn::StoreU(x, d, s);
    } else {
        store_part(d, x, s, count);
    }
    return x;
}

bool softmax_row(float* s,
                 std::size_t n,
                 float scale,
                 const float* bias,
                 const std::uint8_t* mask,
                 const std::uint8_t* pad) {
    using L = VectorLanes;
    const D d;
    const std::size_t lanes = hn::Lanes(d);
    // The pipeline's steps this row takes: the scale and the bias (the scalar feature row
    // takes the others).
    ScoreSteps<V> steps;
    steps.scale = true;
    steps.scale_by = hn::Set(d, scale);
    steps.bias = bias != nullptr;
    // pass 1: final scores (blocked keys -inf, even if the score was NaN); row max.
    V vmax = L::neg_inf();
    bool seen = false;
    const auto at = [](const auto* p, std::size_t j) { return p != nullptr ? p + j : nullptr; };
    std::size_t at_j = 0; // full vectors first, then the ragged end
    for (; at_j + lanes <= n; at_j += lanes) {
        const V x =
            row_scores<true>(s + at_j, at(bias, at_j), at(mask, at_j), at(pad, at_j), steps, lanes);
        seen = seen || L::any_visible(x);
        vmax = L::max_ignoring_nan(x, vmax);
    }
    if (at_j < n) {
        const V x = row_scores<false>(
            s + at_j, at(bias, at_j), at(mask, at_j), at(pad, at_j), steps, n - at_j);
        seen = seen || L::any_visible(x);
        vmax = L::max_ignoring_nan(x, vmax);
    }
    if (!seen) {
        return false;
    }
    const float base = exp_base<ScalarLanes<float>>(hn::GetLane(hn::MaxOfLanes(d, vmax)));
    // pass 2: e = exp(x - base), exactly 0 for masked keys; the sum, per lane then double.
    const V vbase = hn::Set(d, base);
    V vsum = hn::Zero(d);
    for (std::size_t j = 0; j < n; j += lanes) {
        const std::size_t count = min_size(lanes, n - j);
        const V e = exp_weight<L>(load_part(d, s + j, count), vbase);
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
    const V inv = hn::Set(d, inverse_sum<float>(sum));
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

// The score pipeline, written once: the per-score transform (scale -> softcap -> bias ->
// ALiBi -> blocked keys) and the row statistics (max, the exponent's base, the sink, the sum
// and the log-sum-exp) of every kernel. The loops around them are each kernel's own; the
// semantics are here (the ggml way: an op's meaning once, its loops per backend).
//
// Written over "lanes" L, the numbers one step works on:
//   ScalarLanes<T>  one score in T = float or double (std::exp, std::tanh). The scalar
//                   loops (kernel_common.hpp's feature row, the streaming kernel's score
//                   pass and its row end) include this file outside foreach_target, so it
//                   compiles for Highway's static target: plain scalar code.
//   VectorLanes     this SIMD target's float vector (exp_nonpositive; softcap lane by lane
//                   through std::tanh), for kernel_softmax-inl.h's loops, per target.
// Included per target (Highway's -inl.h convention) by kernel_softmax-inl.h, and once by
// kernel_common.hpp. Nothing here loads, stores or loops over memory.
#if defined(ATTN_CORE_KERNEL_SCORE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_CORE_KERNEL_SCORE_INL_H_
#undef ATTN_CORE_KERNEL_SCORE_INL_H_
#else
#define ATTN_CORE_KERNEL_SCORE_INL_H_
#endif

#include "core/kernel_simd-inl.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace attn::detail::HWY_NAMESPACE {
namespace {

/// One score in T: the scalar instantiation (the float64 kernel, the scalar feature rows).
template <class T> struct ScalarLanes {
    using N = T;    // scores
    using K = bool; // "keep this key"
    static N neg_inf() { return -std::numeric_limits<T>::infinity(); }
    static N zero() { return T{0}; }
    static N one() { return T{1}; }
    static N add(N a, N b) { return a + b; }
    static N sub(N a, N b) { return a - b; }
    static N mul(N a, N b) { return a * b; }
    static N tanh(N x) { return std::tanh(x); }
    static N div(N a, N b) { return a / b; }
    static N exp(N x) { return std::exp(x); }
    static K ne(N a, N b) { return a != b; }
    static K eq(N a, N b) { return a == b; }
    static K gt(N a, N b) { return a > b; }
    static K both(K a, K b) { return a && b; }
    static N select(K keep, N a, N b) { return keep ? a : b; }
    static N zero_if(K k, N x) { return k ? T{0} : x; }
    /// The larger of two numbers that are not NaN.
    static N max(N a, N b) { return a > b ? a : b; }
    /// max(x, running) for a running max that is never NaN; a NaN x keeps `running`.
    static N max_ignoring_nan(N x, N running) { return x > running ? x : running; }
    /// Whether x is a visible score: anything but -inf (a NaN counts: it propagates).
    static bool any_visible(N x) { return x != neg_inf(); }
};

/// This target's float vector: the vectorised loops' instantiation.
struct VectorLanes {
    using N = V;
    using K = hn::Mask<D>;
    static HWY_INLINE N neg_inf() { return hn::Set(D(), -__builtin_inff()); }
    static HWY_INLINE N zero() { return hn::Zero(D()); }
    static HWY_INLINE N one() { return hn::Set(D(), 1.0f); }
    static HWY_INLINE N add(N a, N b) { return hn::Add(a, b); }
    static HWY_INLINE N sub(N a, N b) { return hn::Sub(a, b); }
    static HWY_INLINE N mul(N a, N b) { return hn::Mul(a, b); }
    static HWY_INLINE N div(N a, N b) { return hn::Div(a, b); }
    /// Lane by lane through std::tanh: the scalar rounding (no kernel loop needs it fast).
    static HWY_INLINE N tanh(N x) {
        const D d;
        HWY_ALIGN float lanes[HWY_MAX_BYTES / sizeof(float)];
        hn::Store(x, d, lanes);
        for (std::size_t i = 0; i < hn::Lanes(d); ++i) {
            lanes[i] = std::tanh(lanes[i]);
        }
        return hn::Load(d, lanes);
    }
    /// exp(x) for x <= 0 (every exponent here is a score minus its row max).
    static HWY_INLINE N exp(N x) { return exp_nonpositive(D(), x); }
    static HWY_INLINE K ne(N a, N b) { return hn::Ne(a, b); }
    static HWY_INLINE K eq(N a, N b) { return hn::Eq(a, b); }
    static HWY_INLINE K gt(N a, N b) { return hn::Gt(a, b); }
    static HWY_INLINE K both(K a, K b) { return hn::And(a, b); }
    static HWY_INLINE N select(K keep, N a, N b) { return hn::IfThenElse(keep, a, b); }
    static HWY_INLINE N zero_if(K k, N x) { return hn::IfThenZeroElse(k, x); }
    static HWY_INLINE N max(N a, N b) { return hn::Max(a, b); }
    static HWY_INLINE N max_ignoring_nan(N x, N running) {
        return attn::detail::HWY_NAMESPACE::max_ignoring_nan(x, running);
    }
    /// Whether any lane is a visible score (not -inf; NaN counts).
    static HWY_INLINE bool any_visible(N x) { return !hn::AllTrue(D(), hn::Eq(x, neg_inf())); }
};

// ---------------------------------------------------------------------------------------
// The per-score transform.

/// The steps a row's scores take; the same for every key of the row. A step that is off
/// costs nothing (the loops are compiled with these known where a kernel never takes one).
template <class N> struct ScoreSteps {
    bool scale = false; ///< false where the scale is already in the raw scores (streaming)
    N scale_by{};
    bool softcap = false;
    N cap{};
    bool bias = false;
    bool alibi = false;
};

/// The final score of a key (or a vector of keys) of one row, the one definition:
///   x = raw·scale               (Q·Kᵀ·scale; skipped where Q was scaled first)
///   x = cap·tanh(x / cap)       (softcap: Gemma 2, FlashAttention `softcap`)
///   x = x + bias                (the additive bias, SDPA's float attn_mask)
///   x = x + alibi               (alibi_term(): -slope·|j - diagonal|)
///   x = -inf unless `keep`      (blocked: key rule, keep-mask, padding, a -inf bias), even
///                               when x is NaN: a blocked key contributes exactly nothing.
/// The order fixes the rounding; every kernel rounds these steps alike.
template <class L>
HWY_INLINE typename L::N final_score(typename L::N raw,
                                     const ScoreSteps<typename L::N>& steps,
                                     typename L::N bias,
                                     typename L::N alibi,
                                     typename L::K keep) {
    typename L::N x = raw;
    if (steps.scale) {
        x = L::mul(x, steps.scale_by);
    }
    if (steps.softcap) {
        x = L::mul(steps.cap, L::tanh(L::div(x, steps.cap)));
    }
    if (steps.bias) {
        x = L::add(x, bias);
    }
    if (steps.alibi) {
        x = L::add(x, alibi);
    }
    return L::select(keep, x, L::neg_inf());
}

/// `keep` (the key rule, the keep-mask and the padding let the key through) and a bias
/// that is not -inf: a -inf bias blocks like a mask, even a NaN or +inf score.
template <class L>
HWY_INLINE typename L::K
keep_unless_bias_blocks(typename L::K keep, bool has_bias, typename L::N bias) {
    return has_bias ? L::both(keep, L::ne(bias, L::neg_inf())) : keep;
}

/// ALiBi's term for a row whose diagonal key is `diag` (= i + s) and key j:
/// -slope·|j - diag|, as FlashAttention's alibi_slopes and llama.cpp's ALiBi mask (for keys
/// at or left of the diagonal, the paper's causal slope·(j - diag)).
template <class T> HWY_INLINE T alibi_term(T slope, std::int64_t diag, std::size_t j) {
    const std::int64_t d = static_cast<std::int64_t>(j) - diag;
    return -slope * static_cast<T>(d < 0 ? -d : d);
}

// ---------------------------------------------------------------------------------------
// The row statistics: softmax_j(x_j) with an optional sink logit σ in the denominator,
//   w_j = exp(x_j - m) / (exp(σ - m) + sum_k exp(x_k - m)),   lse = m + log(denominator),
// m the row's max (NaN ignored). A row with no visible key gets zeros and lse = -inf (a
// sink alone does not make a row visible): the caller's test, any_visible() or a sum of 0.

/// Argmax's rule: a strictly larger final score wins, so ties keep the first key (keys come
/// in order) and a NaN never wins; `best_key` -1 means no visible key yet.
template <class T>
HWY_INLINE void take_if_larger(T x, std::size_t j, T& best, std::int64_t& best_key) {
    if (x > best) {
        best = x;
        best_key = static_cast<std::int64_t>(j);
    }
}

/// The base the exponentials subtract: the row max, or 0 when it is -inf (only NaN scores
/// were visible: exp(NaN - 0) keeps them NaN, and exp(-inf - 0) is exactly 0).
template <class L> HWY_INLINE typename L::N exp_base(typename L::N row_max) {
    return L::zero_if(L::eq(row_max, L::neg_inf()), row_max);
}

/// The unnormalised weight of a score against its base: exp(x - base), exactly 0 for -inf.
template <class L> HWY_INLINE typename L::N exp_weight(typename L::N x, typename L::N base) {
    return L::exp(L::sub(x, base));
}

/// A base raised to `candidate` (a block's max or a sink; never NaN): the new base and the
/// factor exp(base - base') for what was summed against the old one, exactly 1 where the
/// base did not grow (which also keeps (-inf) - (-inf) = NaN out).
template <class L> struct BaseStep {
    typename L::N base;
    typename L::N alpha;
    typename L::K grew;
};
template <class L> HWY_INLINE BaseStep<L> raise_base(typename L::N base, typename L::N candidate) {
    BaseStep<L> out;
    out.base = L::max(candidate, base);
    out.grew = L::gt(out.base, base);
    out.alpha = L::select(out.grew, L::exp(L::sub(base, out.base)), L::one());
    return out;
}

/// The sink's term in the denominator against base `base`: exp(σ - base).
template <class L> HWY_INLINE typename L::N sink_weight(typename L::N sink, typename L::N base) {
    return L::exp(L::sub(sink, base));
}

/// log of the denominator: base + log(sum), in double (the sum may be a double already).
template <class T> HWY_INLINE T log_sum_exp(T base, double sum) {
    return static_cast<T>(static_cast<double>(base) + std::log(sum));
}

/// The weights' factor 1 / sum for a whole row whose sum accumulated in double.
template <class T> HWY_INLINE T inverse_sum(double sum) {
    return static_cast<T>(1.0 / sum);
}

} // namespace
} // namespace attn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // ATTN_CORE_KERNEL_SCORE_INL_H_

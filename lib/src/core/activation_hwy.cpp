// The float32 MLP's sigmoid-form activations (KernelOps::swish): SiLU and the tanh forms of
// GELU, each x·sigmoid(β·(x + γ·x³)) = x / (1 + exp(-β·(x + γ·x³))), computed in double
// on this target's vectors (Highway's Exp, within 1 ulp of double) and rounded once to
// float, as block.cpp's scalar definitions compute them with std::exp. Its own translation
// unit, compiled once per SIMD target through hwy/foreach_target.h like kernel_ops_hwy.cpp
// (same targets: attn/hwy_targets.hpp), whose table names this target's function: the
// double-precision exp stays out of the kernels' compile.
#include "attn/hwy_targets.hpp" // the targets, before Highway's own headers

#include <cstddef>
#include <cstring>
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/activation_hwy.cpp"
#include <hwy/foreach_target.h> // IWYU pragma: keep
#include <hwy/highway.h>
// Highway's math functions, per target like the file including them.
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace attn::detail::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

namespace {

/// |β·(x + γ·x³)| past which the exp is not evaluated: its argument stays in the range
/// where Highway's Exp is exact to 1 ulp. Beyond it the quotient is x itself (z >= 700:
/// exp(-z) < 2^-1000, and 1 + it is 1 in double) or, for z <= -700, |x| / e^700, below
/// half the smallest float subnormal: x·0 (-0 for finite x, NaN for -inf as
/// -inf / (1 + inf) is).
constexpr double kExpEdge = 700.0;

/// One vector of floats at p: df's lanes, as many as a full vector of doubles has. Without
/// kCubic, z = β·x (γ = 0: no 0·x³, which is NaN for an infinite x).
template <bool kCubic, class DF>
HWY_INLINE void swish_vector(DF df, float* p, double beta, double gamma) {
    const hn::Rebind<double, DF> dd;
    const auto x = hn::PromoteTo(dd, hn::LoadU(df, p));
    auto z = x;
    if constexpr (kCubic) {
        // x + ((γ·x)·x)·x: block.cpp's order of the cubic term.
        z = hn::Add(x, hn::Mul(hn::Mul(hn::Mul(hn::Set(dd, gamma), x), x), x));
    }
    z = hn::Mul(hn::Set(dd, beta), z);
    const auto edge = hn::Set(dd, kExpEdge);
    const auto zc = hn::Min(hn::Max(z, hn::Neg(edge)), edge);
    const auto e = hn::Exp(dd, hn::Neg(zc));
    auto r = hn::Div(x, hn::Add(hn::Set(dd, 1.0), e));
    r = hn::IfThenElse(hn::Le(z, hn::Neg(edge)), hn::Mul(x, hn::Zero(dd)), r);
    hn::StoreU(hn::DemoteTo(df, r), df, p);
}

/// swish (below) for one form.
template <bool kCubic> void swish_of(float* x, std::size_t n, double beta, double gamma) {
    const hn::ScalableTag<double> dd_full;
    const hn::Rebind<float, decltype(dd_full)> df;
    const std::size_t lanes = hn::Lanes(df);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        swish_vector<kCubic>(df, x + i, beta, gamma);
    }
    if (i < n) {
        HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(double)] = {};
        std::memcpy(buf, x + i, (n - i) * sizeof(float));
        swish_vector<kCubic>(df, buf, beta, gamma);
        std::memcpy(x + i, buf, (n - i) * sizeof(float));
    }
}

} // namespace

/// x[i] = x[i] / (1 + exp(-β·(x[i] + γ·x[i]³))) in double, rounded to float, for i < n:
/// whole vectors in place, the last partial one through a staging buffer (every element
/// takes the same path wherever it sits).
void swish(float* x, std::size_t n, double beta, double gamma) {
    if (gamma == 0.0) {
        swish_of<false>(x, n, beta, gamma);
    } else {
        swish_of<true>(x, n, beta, gamma);
    }
}

} // namespace attn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

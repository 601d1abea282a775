// Per-target helpers of the kernel operations: the vector type, partial loads and
// stores, the L2 prefetch, the exp and the NaN-ignoring max. Included once per SIMD target
// (Highway's -inl.h convention: the guard flips with HWY_TARGET_TOGGLE) by the other
// kernel_*-inl.h parts, which kernel_ops_hwy.cpp includes under hwy/foreach_target.h.
#if defined(ATTN_CORE_KERNEL_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_CORE_KERNEL_SIMD_INL_H_
#undef ATTN_CORE_KERNEL_SIMD_INL_H_
#else
#define ATTN_CORE_KERNEL_SIMD_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace attn::detail::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

constexpr std::size_t kLine = 64; // bytes per prefetched cache line

// Whether MaskedLoad/BlendedStore of 4-byte (kWide) or 1-byte lanes leave the masked-off
// lanes' memory untouched on this target (AVX-512 and SVE: always; AVX2: 4-byte lanes).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_SVE ||                \
    HWY_TARGET == HWY_SVE2 || HWY_TARGET == HWY_SVE_256 || HWY_TARGET == HWY_SVE2_128
constexpr bool kMaskedWide = true;
constexpr bool kMaskedBytes = true;
#elif HWY_TARGET == HWY_AVX2
constexpr bool kMaskedWide = true;
constexpr bool kMaskedBytes = false;
#else
constexpr bool kMaskedWide = false;
constexpr bool kMaskedBytes = false;
#endif

inline std::size_t min_size(std::size_t a, std::size_t b) {
    return a < b ? a : b;
}

/// The first `count` lanes (1 <= count <= Lanes) from p, zeros above; never reads past
/// p + count.
template <class DT>
HWY_INLINE hn::Vec<DT> load_part(DT dt, const hn::TFromD<DT>* p, std::size_t count) {
    using T = hn::TFromD<DT>;
    if (count == hn::Lanes(dt)) {
        return hn::LoadU(dt, p);
    }
    if constexpr (sizeof(T) == 4 ? kMaskedWide : kMaskedBytes) {
        return hn::MaskedLoad(hn::FirstN(dt, count), dt, p);
    } else {
        HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)] = {};
        std::memcpy(buf, p, count * sizeof(T));
        return hn::Load(dt, buf);
    }
}

/// Stores the first `count` lanes (1 <= count <= Lanes) of v; p + count onward untouched.
HWY_INLINE void store_part(D d, V v, float* p, std::size_t count) {
    if (count == hn::Lanes(d)) {
        hn::StoreU(v, d, p);
    } else if constexpr (kMaskedWide) {
        hn::BlendedStore(v, hn::FirstN(d, count), d, p);
    } else {
        HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
        hn::Store(v, d, buf);
        std::memcpy(p, buf, count * sizeof(float));
    }
}

/// Pulls one cache line toward L2 (a hint; no effect where the compiler has none).
HWY_INLINE void prefetch_l2(const char* p) {
#if HWY_COMPILER_GCC // GCC and clang: locality 2 = "keep in L2 and outer levels"
    __builtin_prefetch(p, 0, 2);
#else
    hwy::Prefetch(p);
#endif
}

/// exp(x) for x <= 0 (all the kernels need: scores minus their row max, and old max minus
/// new max), within 2 ulp on [-87, 0] where MulAdd is fused (AVX2, AVX-512; 1.99 ulp) and
/// 2.24 ulp where it is a multiply then an add (SSE4, SSSE3, scalar), checked against
/// double exp over 2·10⁶ points.
/// It is the streaming kernel's only work besides the two GEMMs, so it is kept short:
///   x < ln(FLT_MIN) (-inf included) -> exactly 0: masked keys get weight exactly 0, and
///                                      denormal results are flushed (they vanish next to
///                                      the row max's own exp(0) = 1 anyway);
///   NaN -> NaN: every step propagates it and the ordered compare never fires on it.
/// The same polynomial on every target (AVX-512 scales by 2^n with vscalefps, which rounds
/// as the product does), so only FMA contraction differs between them.
HWY_INLINE V exp_nonpositive(D d, V x) {
    const hn::RebindToUnsigned<D> du;
    // 1.5·2^23 + 127: adding it rounds |y| < 2^22 to a nearest integer (the FPU's own
    // rounding; an exact tie may go either way, both keep |r| <= ln(2)/2) and leaves
    // n + 127, the biased exponent of 2^n, in the low mantissa bits; subtracting it
    // again leaves n as a float.
    const V shifter = hn::Set(d, 12583039.0f);
    // n = round(x / ln 2); r = x - n·ln 2 in two steps (Cody-Waite), |r| <= ln(2)/2.
    const V t = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), shifter);
    const V n = hn::Sub(t, shifter);
    V r = hn::NegMulAdd(n, hn::Set(d, 0.693359375f), x);
    r = hn::NegMulAdd(n, hn::Set(d, -2.12194440e-4f), r);
    // exp(r) = 1 + r·q(r), q of degree 4: a relative-error minimax fit on |r| <= ln(2)/2
    // (about 1e-7, under 2 ulp once rounded in float32).
    V q = hn::Set(d, 8.290314115583897e-3f);
    q = hn::MulAdd(q, r, hn::Set(d, 4.189793020486832e-2f));
    q = hn::MulAdd(q, r, hn::Set(d, 1.666763573884964e-1f));
    q = hn::MulAdd(q, r, hn::Set(d, 4.999915063381195e-1f));
    q = hn::MulAdd(q, r, hn::Set(d, 9.999997019767761e-1f));
    const V p = hn::MulAdd(q, r, hn::Set(d, 1.0f));
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // AVX-512: p · 2^n in one vscalefps, which also zeroes the lanes below ln(FLT_MIN)
    // (masked off; NaN lanes stay in): 11 operations instead of 13. Exact scaling with
    // one rounding, like the product below for -126 <= n <= 0, so the same results.
    (void)du;
    const __mmask16 keep = _mm512_cmp_ps_mask(x.raw, _mm512_set1_ps(-87.33654475f), _CMP_NLT_UQ);
    return V{_mm512_maskz_scalef_ps(keep, p.raw, n.raw)};
#else
    // 2^n from t's own bits: t = 1.5·2^23 + (n + 127) keeps n + 127 in its low mantissa
    // bits, so bits(t) << 23 (mod 2^32) is exactly the float 2^n for -126 <= n <= 127.
    // Lanes below ln(FLT_MIN) (n < -126, garbage here) become 0; the product p · 2^n
    // rounds like the true result, denormals included.
    const V pow2n = hn::BitCast(d, hn::ShiftLeft<23>(hn::BitCast(du, t)));
    return hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, -87.33654475f)), hn::Mul(p, pow2n));
#endif
}

/// Max that ignores a NaN in `x` (keeps `running`): NaN scores must not become the row
/// max; they reach the output through exp instead.
HWY_INLINE V max_ignoring_nan(V x, V running) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
    return hn::Max(x, running); // (v)maxps returns its second operand when either is NaN
#else
    return hn::IfThenElse(hn::Gt(x, running), x, running);
#endif
}

} // namespace
} // namespace attn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // ATTN_CORE_KERNEL_SIMD_INL_H_

// The kernel operations, written once over Google Highway and compiled for every SIMD
// target Highway knows on the build machine's architecture (x86: AVX3_DL, AVX3 (AVX-512),
// AVX2, SSE4, SSSE3; Arm: SVE2, SVE, NEON; plus the scalar or emulated fallback). This
// file is included once per target by hwy/foreach_target.h; each pass fills one KernelOps
// table in its own namespace (N_AVX2, ...), and the HWY_ONCE part at the end picks a table
// per call: the best one the CPU supports, or the one spec.simd names.
//
// The operations: a register-blocked micro-GEMM (kRows x kVecs vectors of C per tile,
// sized per target: more accumulators with wider and more registers), a vectorised exp,
// the online-softmax step and the weights-row softmax. Blocking and masking are the
// drivers' (kernels_*.cpp). Ragged edges go through masked loads and stores (or a small
// staging buffer where the target's masked load may touch the masked-off lanes).
#include "attn/error.hpp"
#include "attn/kernels.hpp"
#include "kernel_ops.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

// Every target the compiler can emit, not only those above the baseline (-march): the
// scalar fallback included, so it is there to test and to name on every architecture.
// AVX3_DL (Ice Lake and later, Zen 4 and later) is compiled only on request.
#ifndef HWY_COMPILE_ALL_ATTAINABLE
#define HWY_COMPILE_ALL_ATTAINABLE 1
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL 1
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernel_ops_hwy.cpp"
#include <hwy/foreach_target.h> // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace attn::detail::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// Micro-tile shape: kRows rows of C by kVecs vectors, with kVecs B vectors and one
// broadcast of A live at once. 32 vector registers (AVX-512, NEON, SVE): 6 x 4 = 24
// accumulators; 16 (AVX2, SSE4, SSSE3): 6 x 2 = 12; the scalar fallback: 4 x 4.
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
constexpr std::size_t kRows = 4;
constexpr std::size_t kVecs = 4;
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3
constexpr std::size_t kRows = 6;
constexpr std::size_t kVecs = 2;
#else
constexpr std::size_t kRows = 6;
constexpr std::size_t kVecs = 4;
#endif
constexpr std::size_t kDepth = 256; // k per pass: a 256 x 64 B panel (64 KB) stays in L2
constexpr std::size_t kLine = 64;   // bytes per prefetched cache line

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

// The accumulators of a tile are named variables, not an array: SVE vectors are sizeless
// and cannot be array elements. ATTN_TILE(OP) applies OP(r, v) to every slot of the
// largest tile, row by row; `if constexpr` inside OP drops the slots outside R x NV.
// Row-major order matters in the k loop: one broadcast of A is live at a time (kRows x
// kVecs accumulators + kVecs B vectors + 1 broadcast fill the register file exactly);
// column-major order keeps all kRows broadcasts live and spills accumulators.
static_assert(kRows <= 6 && kVecs <= 4, "ATTN_TILE covers at most 6 x 4 slots");
// r and v are digits pasted into names (acc##r##v, b##v): they cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ATTN_TILE_ROW(OP, r) OP(r, 0) OP(r, 1) OP(r, 2) OP(r, 3)
#define ATTN_TILE(OP)                                                                              \
    ATTN_TILE_ROW(OP, 0)                                                                           \
    ATTN_TILE_ROW(OP, 1)                                                                           \
    ATTN_TILE_ROW(OP, 2) ATTN_TILE_ROW(OP, 3) ATTN_TILE_ROW(OP, 4) ATTN_TILE_ROW(OP, 5)
#define ATTN_DECLARE(r, v) V acc##r##v = hn::Zero(d);
#define ATTN_LOAD_C(r, v)                                                                          \
    if constexpr (r < R && v < NV) {                                                               \
        const float* cp = c + r * ldc + v * lanes;                                                 \
        V old = hn::Zero(d);                                                                       \
        if constexpr (v + 1 == NV && kPartial) {                                                   \
            old = load_part(d, cp, last);                                                          \
        } else {                                                                                   \
            old = hn::LoadU(d, cp);                                                                \
        }                                                                                          \
        acc##r##v = row_scale != nullptr ? hn::Mul(old, hn::Set(d, row_scale[r])) : old;           \
    }
#define ATTN_LOAD_B(v)                                                                             \
    V b##v = hn::Zero(d);                                                                          \
    if constexpr (v < NV) {                                                                        \
        if constexpr (v + 1 == NV && kPartial) {                                                   \
            b##v = load_part(d, bp + v * lanes, last);                                             \
        } else {                                                                                   \
            b##v = hn::LoadU(d, bp + v * lanes);                                                   \
        }                                                                                          \
    }
#define ATTN_FMA(r, v)                                                                             \
    if constexpr (v < NV) {                                                                        \
        acc##r##v = hn::MulAdd(a_r, b##v, acc##r##v);                                              \
    }
#define ATTN_ROW_FMA(r)                                                                            \
    if constexpr (r < R) {                                                                         \
        const V a_r = hn::Set(d, ap[r * a_row]);                                                   \
        ATTN_TILE_ROW(ATTN_FMA, r)                                                                 \
    }
#define ATTN_STORE_C(r, v)                                                                         \
    if constexpr (r < R && v < NV) {                                                               \
        float* cp = c + r * ldc + v * lanes;                                                       \
        if constexpr (v + 1 == NV && kPartial) {                                                   \
            store_part(d, acc##r##v, cp, last);                                                    \
        } else {                                                                                   \
            hn::StoreU(acc##r##v, d, cp);                                                          \
        }                                                                                          \
    }

// NOLINTEND(bugprone-macro-parentheses)

/// C tile [R, NV vectors] over k steps (with kPartial, the last vector holds only `last`
/// valid lanes): C = A·B, or C = diag(scale)·C + A·B when accumulating. Prefetches
/// `pf_lines` lines from `pf`, one per k step.
template <std::size_t R, std::size_t NV, bool kPartial>
void micro_tile(std::size_t k,
                const float* a,
                std::size_t a_row,
                std::size_t a_col,
                const float* b,
                std::size_t ldb,
                float* c,
                std::size_t ldc,
                std::size_t last,
                bool accumulate,
                const float* row_scale,
                const char* pf,
                std::size_t pf_lines) {
    const D d;
    const std::size_t lanes = hn::Lanes(d);
    ATTN_TILE(ATTN_DECLARE)
    if (accumulate) {
        ATTN_TILE(ATTN_LOAD_C)
    }
    const std::size_t pf_steps = min_size(pf_lines, k);
    std::size_t x = 0;
    // Two loops, so the one without prefetches has no test in it.
    for (; x < pf_steps; ++x) {
        prefetch_l2(pf + x * kLine);
        const float* bp = b + x * ldb;
        ATTN_LOAD_B(0)
        ATTN_LOAD_B(1)
        ATTN_LOAD_B(2)
        ATTN_LOAD_B(3)
        const float* ap = a + x * a_col;
        ATTN_ROW_FMA(0)
        ATTN_ROW_FMA(1)
        ATTN_ROW_FMA(2)
        ATTN_ROW_FMA(3)
        ATTN_ROW_FMA(4)
        ATTN_ROW_FMA(5)
    }
    for (; x < k; ++x) {
        const float* bp = b + x * ldb;
        ATTN_LOAD_B(0)
        ATTN_LOAD_B(1)
        ATTN_LOAD_B(2)
        ATTN_LOAD_B(3)
        const float* ap = a + x * a_col;
        ATTN_ROW_FMA(0)
        ATTN_ROW_FMA(1)
        ATTN_ROW_FMA(2)
        ATTN_ROW_FMA(3)
        ATTN_ROW_FMA(4)
        ATTN_ROW_FMA(5)
    }
    ATTN_TILE(ATTN_STORE_C)
}

#undef ATTN_TILE_ROW
#undef ATTN_TILE
#undef ATTN_DECLARE
#undef ATTN_LOAD_C
#undef ATTN_LOAD_B
#undef ATTN_FMA
#undef ATTN_ROW_FMA
#undef ATTN_STORE_C

using MicroTile = void (*)(std::size_t,
                           const float*,
                           std::size_t,
                           std::size_t,
                           const float*,
                           std::size_t,
                           float*,
                           std::size_t,
                           std::size_t,
                           bool,
                           const float*,
                           const char*,
                           std::size_t);

template <std::size_t R, bool kPartial> MicroTile tile_of_width(std::size_t nv) {
    if constexpr (kVecs >= 4) {
        if (nv >= 4) {
            return &micro_tile<R, 4, kPartial>;
        }
        if (nv == 3) {
            return &micro_tile<R, 3, kPartial>;
        }
    }
    return nv >= 2 ? &micro_tile<R, 2, kPartial> : &micro_tile<R, 1, kPartial>;
}

template <bool kPartial> MicroTile pick_tile_of(std::size_t rows, std::size_t nv) {
    static_assert(kRows == 4 || kRows == 6);
    switch (rows) {
    case 1:
        return tile_of_width<1, kPartial>(nv);
    case 2:
        return tile_of_width<2, kPartial>(nv);
    case 3:
        return tile_of_width<3, kPartial>(nv);
    case 4:
        return tile_of_width<4, kPartial>(nv);
    case 5:
        if constexpr (kRows >= 6) {
            return tile_of_width<5, kPartial>(nv);
        }
        [[fallthrough]];
    default:
        return tile_of_width<kRows, kPartial>(nv);
    }
}

/// The tile for `rows` x `nv` vectors whose last vector holds `last` of `lanes` lanes.
MicroTile pick_tile(std::size_t rows, std::size_t nv, std::size_t last, std::size_t lanes) {
    return last == lanes ? pick_tile_of<false>(rows, nv) : pick_tile_of<true>(rows, nv);
}

/// Blocked driver: k in passes of kDepth, n in tiles of kVecs vectors, m in kRows-row
/// tiles, so one B panel is reused from L1/L2 by every row tile. `pf_bytes` bytes at `pf`
/// are prefetched toward L2 along the way: each tile takes its share, a line per k step.
void gemm_prefetch(std::size_t m,
                   std::size_t n,
                   std::size_t k,
                   const float* a,
                   std::size_t a_row,
                   std::size_t a_col,
                   const float* b,
                   std::size_t ldb,
                   float* c,
                   std::size_t ldc,
                   bool accumulate,
                   const float* row_scale,
                   const void* pf,
                   std::size_t pf_bytes) {
    if (m == 0 || n == 0) {
        return;
    }
    const std::size_t lanes = hn::Lanes(D());
    const std::size_t width = kVecs * lanes; // columns per tile
    const auto* pf_next = static_cast<const char*>(pf);
    std::size_t pf_left = pf != nullptr ? (pf_bytes + kLine - 1) / kLine : 0; // cache lines
    const std::size_t tiles = ((m + kRows - 1) / kRows) * ((n + width - 1) / width) *
                              (k == 0 ? 1 : (k + kDepth - 1) / kDepth);
    const std::size_t pf_per_tile = (pf_left + tiles - 1) / tiles;
    std::size_t k0 = 0;
    do {
        const std::size_t kc = min_size(kDepth, k - k0);
        // The first pass applies the caller's accumulate/row_scale; later ones add.
        const bool acc = accumulate || k0 > 0;
        const float* rs = k0 == 0 ? row_scale : nullptr;
        for (std::size_t n0 = 0; n0 < n; n0 += width) {
            const std::size_t nc = min_size(width, n - n0);
            const std::size_t vectors = (nc + lanes - 1) / lanes;
            const std::size_t last = nc - (vectors - 1) * lanes;
            for (std::size_t m0 = 0; m0 < m; m0 += kRows) {
                const std::size_t mr = min_size(kRows, m - m0);
                std::size_t lines = min_size(pf_per_tile, pf_left);
                // More lines than k steps: the excess goes out before the tile.
                for (; lines > kc; --lines, --pf_left, pf_next += kLine) {
                    prefetch_l2(pf_next);
                }
                pick_tile(mr, vectors, last, lanes)(kc,
                                                    a + m0 * a_row + k0 * a_col,
                                                    a_row,
                                                    a_col,
                                                    b + k0 * ldb + n0,
                                                    ldb,
                                                    c + m0 * ldc + n0,
                                                    ldc,
                                                    last,
                                                    acc,
                                                    rs != nullptr ? rs + m0 : nullptr,
                                                    pf_next,
                                                    lines);
                pf_left -= lines;
                pf_next += lines * kLine;
            }
        }
        k0 += kc;
    } while (k0 < k);
}

void gemm(std::size_t m,
          std::size_t n,
          std::size_t k,
          const float* a,
          std::size_t a_row,
          std::size_t a_col,
          const float* b,
          std::size_t ldb,
          float* c,
          std::size_t ldc,
          bool accumulate,
          const float* row_scale) {
    gemm_prefetch(m, n, k, a, a_row, a_col, b, ldb, c, ldc, accumulate, row_scale, nullptr, 0);
}

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
    // pass 1: x = s·scale + bias, masked keys -> -inf (even if x is NaN); row max.
    V vmax = neg_inf;
    bool seen = false;
    for (std::size_t j = 0; j < n; j += lanes) {
        const std::size_t count = min_size(lanes, n - j);
        V x = hn::Mul(load_part(d, s + j, count), vscale);
        if (bias != nullptr) {
            x = hn::Add(x, load_part(d, bias + j, count));
        }
        auto keep = hn::FirstN(d, count);
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

/// This target's table (referenced by the HWY_ONCE part below).
extern const KernelOps kOps;
const KernelOps kOps{
    .gemm = &gemm,
    .gemm_prefetch = &gemm_prefetch,
    .online_softmax = &online_softmax,
    .softmax_row = &softmax_row,
};

} // namespace attn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace attn::detail {

namespace {

struct TargetOps {
    std::int64_t target;
    const KernelOps* ops;
};

/// Every target compiled into this file, best first (Highway's order: lower bit = better).
constexpr TargetOps kCompiled[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    {HWY_AVX3_DL, &N_AVX3_DL::kOps},
#endif
#if HWY_TARGETS & HWY_AVX3
    {HWY_AVX3, &N_AVX3::kOps},
#endif
#if HWY_TARGETS & HWY_AVX2
    {HWY_AVX2, &N_AVX2::kOps},
#endif
#if HWY_TARGETS & HWY_SSE4
    {HWY_SSE4, &N_SSE4::kOps},
#endif
#if HWY_TARGETS & HWY_SSSE3
    {HWY_SSSE3, &N_SSSE3::kOps},
#endif
#if HWY_TARGETS & HWY_SVE2_128
    {HWY_SVE2_128, &N_SVE2_128::kOps},
#endif
#if HWY_TARGETS & HWY_SVE_256
    {HWY_SVE_256, &N_SVE_256::kOps},
#endif
#if HWY_TARGETS & HWY_SVE2
    {HWY_SVE2, &N_SVE2::kOps},
#endif
#if HWY_TARGETS & HWY_SVE
    {HWY_SVE, &N_SVE::kOps},
#endif
#if HWY_TARGETS & HWY_NEON
    {HWY_NEON, &N_NEON::kOps},
#endif
#if HWY_TARGETS & HWY_EMU128
    {HWY_EMU128, &N_EMU128::kOps},
#endif
#if HWY_TARGETS & HWY_SCALAR
    {HWY_SCALAR, &N_SCALAR::kOps},
#endif
};

const TargetOps* find_compiled(Simd simd) {
    for (const TargetOps& t : kCompiled) {
        if (t.target == static_cast<std::int64_t>(simd)) {
            return &t;
        }
    }
    return nullptr;
}

bool cpu_supports(std::int64_t target) {
    return (hwy::SupportedTargets() & target) != 0;
}

std::string joined_names(const std::vector<Simd>& targets) {
    std::string out;
    for (const Simd t : targets) {
        out += (out.empty() ? "" : ", ") + std::string(simd_name(t));
    }
    return out;
}

/// The best compiled target this CPU runs (the fallback runs everywhere).
const TargetOps& best_target() {
    static const TargetOps& best = [&]() -> const TargetOps& {
        for (const TargetOps& t : kCompiled) {
            if (cpu_supports(t.target)) {
                return t;
            }
        }
        return kCompiled[sizeof(kCompiled) / sizeof(kCompiled[0]) - 1];
    }();
    return best;
}

} // namespace

const KernelOps& kernel_ops(Simd simd) {
    if (simd == Simd::best) {
        return *best_target().ops;
    }
    const TargetOps* t = find_compiled(simd);
    if (t == nullptr) {
        throw InputError(
            "simd: no such target in this build (compiled: " + joined_names(simd_compiled()) + ")");
    }
    if (!cpu_supports(t->target)) {
        throw InputError(std::string("simd: this CPU cannot run the ") + simd_name(simd) +
                         " target (it runs: " + joined_names(simd_supported()) + ")");
    }
    return *t->ops;
}

} // namespace attn::detail

namespace attn {

std::vector<Simd> simd_compiled() {
    std::vector<Simd> out;
    for (const detail::TargetOps& t : detail::kCompiled) {
        out.push_back(static_cast<Simd>(t.target));
    }
    return out;
}

std::vector<Simd> simd_supported() {
    std::vector<Simd> out;
    for (const detail::TargetOps& t : detail::kCompiled) {
        if (detail::cpu_supports(t.target)) {
            out.push_back(static_cast<Simd>(t.target));
        }
    }
    return out;
}

Simd simd_target(std::string_view name) {
    const auto same = [](std::string_view x, std::string_view y) {
        if (x.size() != y.size()) {
            return false;
        }
        for (std::size_t i = 0; i < x.size(); ++i) {
            const auto lower = [](char ch) {
                return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch;
            };
            if (lower(x[i]) != lower(y[i])) {
                return false;
            }
        }
        return true;
    };
    if (same(name, "best")) {
        return Simd::best;
    }
    for (const Simd t : simd_compiled()) {
        if (same(name, simd_name(t))) {
            detail::kernel_ops(t); // InputError unless this CPU runs it
            return t;
        }
    }
    throw InputError("simd: unknown target '" + std::string(name) +
                     "' (compiled: " + detail::joined_names(simd_compiled()) + ")");
}

const char* simd_name(Simd simd) {
    const auto target =
        simd == Simd::best ? detail::best_target().target : static_cast<std::int64_t>(simd);
    return detail::find_compiled(static_cast<Simd>(target)) != nullptr ? hwy::TargetName(target)
                                                                       : "unknown";
}

} // namespace attn

#endif // HWY_ONCE

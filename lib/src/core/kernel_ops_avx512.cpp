// The AVX-512 kernel operations: a register-blocked micro-GEMM (6 rows x 4 vectors of 16
// floats), a vectorised exp, the online-softmax step and the weights-row softmax. Compiled
// for AVX-512 through a target pragma (no -march needed) and used only when the CPU
// reports AVX-512 F/DQ/BW/VL at run time. It does not decide blocking or masking: the
// drivers (kernels_*.cpp) do.
//
// Everything between the target pragmas has internal linkage and calls no std:: template
// defined after them, so no AVX-512 code can leak into the rest of the program through a
// shared inline function.
#include "attn/kernels.hpp"
#include "kernel_ops.hpp"

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTN_HAVE_AVX512_OPS 1
#include <immintrin.h>
#endif

namespace attn::detail {

#if defined(ATTN_HAVE_AVX512_OPS)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"))),    \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,fma")
// GCC 12's own intrinsics initialise their "undefined" vectors from themselves
// (_mm512_undefined_ps), which -W(maybe-)uninitialized reports once inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// At -O0 _mm512_roundscale_ps is a macro that passes (__mmask16)-1 through a short.
#pragma GCC diagnostic ignored "-Wsign-conversion"
#endif

namespace {

constexpr std::size_t kRows = 6; // micro-tile rows: 6 x 4 accumulators + 4 B vectors + 1 broadcast
constexpr std::size_t kPanel = 64;  // micro-tile width: 4 vectors of 16 floats
constexpr std::size_t kDepth = 256; // k per pass: a 256 x 64 B panel (64 KB) stays in L2

inline std::size_t min_size(std::size_t a, std::size_t b) {
    return a < b ? a : b;
}

inline __mmask16 tail_mask(std::size_t n) {
    return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

/// exp(x) on 16 lanes for x <= 0 (all the kernels need: scores minus their row max, and
/// old max minus new max), within 2 ulp on [-87, 0] (checked against double exp over
/// 2·10⁶ points). It is the streaming kernel's only work besides the two GEMMs, so it is
/// kept to 11 vector operations:
///   x < ln(FLT_MIN) (-inf included) -> exactly 0: masked keys get weight exactly 0, and
///                                      denormal results are flushed (they vanish next to
///                                      the row max's own exp(0) = 1 anyway);
///   NaN -> NaN: every step propagates it and the ordered compare never fires on it.
inline __m512 exp16(__m512 x) {
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512 ln2_hi = _mm512_set1_ps(0.693359375f);
    const __m512 ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
    // 1.5·2^23: adding it rounds |y| < 2^22 to the nearest integer (the FPU's own
    // round-to-nearest-even); subtracting it again leaves that integer as a float.
    const __m512 shifter = _mm512_set1_ps(12582912.0f);
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654475f), _CMP_NLT_UQ);
    // n = round(x / ln 2); r = x - n·ln 2 in two steps (Cody-Waite), |r| <= ln(2)/2.
    const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, log2e, shifter), shifter);
    __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);
    r = _mm512_fnmadd_ps(n, ln2_lo, r);
    // exp(r) = 1 + r·q(r), q of degree 4: a relative-error minimax fit on |r| <= ln(2)/2
    // (about 1e-7, under 2 ulp once rounded in float32).
    __m512 q = _mm512_set1_ps(8.290314115583897e-3f);
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(4.189793020486832e-2f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.666763573884964e-1f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(4.999915063381195e-1f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(9.999997019767761e-1f));
    const __m512 p = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f));
    // p · 2^n with vscalefps (no integer exponent arithmetic to overflow); lanes below
    // ln(FLT_MIN) are zeroed by the same instruction.
    return _mm512_maskz_scalef_ps(keep, p, n);
}

/// Max that ignores a NaN in `x` (vmaxps returns its second operand when either is NaN):
/// NaN scores must not become the row max; they reach the output through exp instead.
inline __m512 max_ignoring_nan(__m512 x, __m512 running) {
    return _mm512_max_ps(x, running);
}

/// C tile [R, NV·16] (last vector masked by `last`) over k steps:
/// C = A·B, or C = diag(scale)·C + A·B when accumulating.
template <std::size_t R, std::size_t NV>
void micro_tile(std::size_t k,
                const float* a,
                std::size_t a_row,
                std::size_t a_col,
                const float* b,
                std::size_t ldb,
                float* c,
                std::size_t ldc,
                __mmask16 last,
                bool accumulate,
                const float* row_scale,
                const char* pf,
                std::size_t pf_lines) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
        const __m512 s = row_scale != nullptr ? _mm512_set1_ps(row_scale[r]) : _mm512_set1_ps(1.0f);
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            float* cp = c + r * ldc + v * 16;
            if (!accumulate) {
                acc[r][v] = _mm512_setzero_ps();
            } else {
                const __m512 old =
                    v == NV - 1 ? _mm512_maskz_loadu_ps(last, cp) : _mm512_loadu_ps(cp);
                acc[r][v] = row_scale != nullptr ? _mm512_mul_ps(old, s) : old;
            }
        }
    }
    for (std::size_t x = 0; x < k; ++x) {
        if (x < pf_lines) {
            _mm_prefetch(pf + x * 64, _MM_HINT_T1);
        }
        const float* bp = b + x * ldb;
        __m512 bv[NV];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            bv[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(last, bp + v * 16)
                                : _mm512_loadu_ps(bp + v * 16);
        }
        const float* ap = a + x * a_col;
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r) {
            const __m512 av = _mm512_set1_ps(ap[r * a_row]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) {
                acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
            }
        }
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            float* cp = c + r * ldc + v * 16;
            if (v == NV - 1) {
                _mm512_mask_storeu_ps(cp, last, acc[r][v]);
            } else {
                _mm512_storeu_ps(cp, acc[r][v]);
            }
        }
    }
}

using MicroTile = void (*)(std::size_t,
                           const float*,
                           std::size_t,
                           std::size_t,
                           const float*,
                           std::size_t,
                           float*,
                           std::size_t,
                           __mmask16,
                           bool,
                           const float*,
                           const char*,
                           std::size_t);

template <std::size_t R> constexpr MicroTile tile_of_width(std::size_t nv) {
    return nv == 1   ? &micro_tile<R, 1>
           : nv == 2 ? &micro_tile<R, 2>
           : nv == 3 ? &micro_tile<R, 3>
                     : &micro_tile<R, 4>;
}

MicroTile pick_tile(std::size_t rows, std::size_t nv) {
    switch (rows) {
    case 1:
        return tile_of_width<1>(nv);
    case 2:
        return tile_of_width<2>(nv);
    case 3:
        return tile_of_width<3>(nv);
    case 4:
        return tile_of_width<4>(nv);
    case 5:
        return tile_of_width<5>(nv);
    default:
        return tile_of_width<6>(nv);
    }
}

/// Blocked driver: k in passes of kDepth, n in 64-column panels, m in 6-row tiles, so
/// one B panel is reused from L1/L2 by every row tile. `pf_bytes` bytes at `pf` are
/// prefetched toward L2 along the way: each tile takes its share, a line per k step.
void gemm_prefetch_avx512(std::size_t m,
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
    const auto* pf_next = static_cast<const char*>(pf);
    std::size_t pf_left = pf != nullptr ? (pf_bytes + 63) / 64 : 0; // cache lines
    const std::size_t tiles = ((m + kRows - 1) / kRows) * ((n + kPanel - 1) / kPanel) *
                              (k == 0 ? 1 : (k + kDepth - 1) / kDepth);
    const std::size_t pf_per_tile = (pf_left + tiles - 1) / tiles;
    std::size_t k0 = 0;
    do {
        const std::size_t kc = min_size(kDepth, k - k0);
        // The first pass applies the caller's accumulate/row_scale; later ones add.
        const bool acc = accumulate || k0 > 0;
        const float* rs = k0 == 0 ? row_scale : nullptr;
        for (std::size_t n0 = 0; n0 < n; n0 += kPanel) {
            const std::size_t nc = min_size(kPanel, n - n0);
            const std::size_t vectors = (nc + 15) / 16;
            const __mmask16 last = tail_mask(nc - (vectors - 1) * 16);
            for (std::size_t m0 = 0; m0 < m; m0 += kRows) {
                const std::size_t mr = min_size(kRows, m - m0);
                std::size_t lines = min_size(pf_per_tile, pf_left);
                // More lines than k steps: the excess goes out before the tile.
                for (; lines > kc; --lines, --pf_left, pf_next += 64) {
                    _mm_prefetch(pf_next, _MM_HINT_T1);
                }
                pick_tile(mr, vectors)(kc,
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
                pf_next += lines * 64;
            }
        }
        k0 += kc;
    } while (k0 < k);
}

void gemm_avx512(std::size_t m,
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
    gemm_prefetch_avx512(
        m, n, k, a, a_row, a_col, b, ldb, c, ldc, accumulate, row_scale, nullptr, 0);
}

bool online_softmax_avx512(float* st, std::size_t kb, float* m, float* l, float* alpha) {
    constexpr std::size_t nv = kScoreColumns / 16;
    const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
    bool any_grew = false;
    for (std::size_t v = 0; v < nv; ++v) {
        const std::size_t col = v * 16;
        // pass 1: the block's column max (NaN ignored, -inf if every key is masked).
        __m512 bmax = neg_inf;
        for (std::size_t j = 0; j < kb; ++j) {
            bmax = max_ignoring_nan(_mm512_loadu_ps(st + j * kScoreStride + col), bmax);
        }
        const __m512 m_old = _mm512_loadu_ps(m + col);
        const __m512 m_new = _mm512_max_ps(bmax, m_old); // neither is NaN
        // alpha = exp(m_old - m_new) only where the max grew: elsewhere exactly 1, which
        // also avoids (-inf) - (-inf) = NaN while a column has seen no key yet.
        const __mmask16 grew = _mm512_cmp_ps_mask(m_new, m_old, _CMP_GT_OQ);
        const __m512 a =
            _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), grew, exp16(_mm512_sub_ps(m_old, m_new)));
        any_grew = any_grew || grew != 0;
        // A column that has seen only masked keys subtracts 0, not -inf: exp(-inf - 0)
        // is exactly 0 for masked keys and a NaN score stays NaN.
        const __m512 m_safe = _mm512_mask_mov_ps(
            m_new, _mm512_cmp_ps_mask(m_new, neg_inf, _CMP_EQ_OQ), _mm512_setzero_ps());
        // pass 2: probabilities (unnormalised) and their column sums.
        __m512 sum0 = _mm512_setzero_ps();
        __m512 sum1 = _mm512_setzero_ps();
        std::size_t j = 0;
        for (; j + 1 < kb; j += 2) {
            float* p0 = st + j * kScoreStride + col;
            float* p1 = p0 + kScoreStride;
            const __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(p0), m_safe));
            const __m512 e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(p1), m_safe));
            _mm512_storeu_ps(p0, e0);
            _mm512_storeu_ps(p1, e1);
            sum0 = _mm512_add_ps(sum0, e0);
            sum1 = _mm512_add_ps(sum1, e1);
        }
        if (j < kb) {
            float* p0 = st + j * kScoreStride + col;
            const __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(p0), m_safe));
            _mm512_storeu_ps(p0, e0);
            sum0 = _mm512_add_ps(sum0, e0);
        }
        const __m512 l_new =
            _mm512_fmadd_ps(_mm512_loadu_ps(l + col), a, _mm512_add_ps(sum0, sum1));
        _mm512_storeu_ps(m + col, m_new);
        _mm512_storeu_ps(l + col, l_new);
        _mm512_storeu_ps(alpha + col, a);
    }
    return any_grew;
}

/// Keep-lanes of 16 (or fewer, `valid`) uint8 flags: lane j is kept iff flag j != 0.
inline __mmask16 nonzero_bytes(const std::uint8_t* p, __mmask16 valid) {
    const __m128i bytes = _mm_maskz_loadu_epi8(valid, p);
    return _mm_test_epi8_mask(bytes, bytes);
}

bool softmax_row_avx512(float* s,
                        std::size_t n,
                        float scale,
                        const float* bias,
                        const std::uint8_t* mask,
                        const std::uint8_t* pad) {
    const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
    const __m512 vscale = _mm512_set1_ps(scale);
    // pass 1: x = s·scale + bias, masked keys -> -inf (even if x is NaN); row max.
    __m512 vmax = neg_inf;
    __mmask16 seen = 0;
    for (std::size_t j = 0; j < n; j += 16) {
        const __mmask16 valid = tail_mask(n - j);
        __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(valid, s + j), vscale);
        if (bias != nullptr) {
            x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(valid, bias + j));
        }
        __mmask16 keep = valid;
        if (mask != nullptr) {
            keep &= nonzero_bytes(mask + j, valid);
        }
        if (pad != nullptr) {
            keep &= nonzero_bytes(pad + j, valid);
        }
        x = _mm512_mask_mov_ps(neg_inf, keep, x);
        seen |= _mm512_mask_cmp_ps_mask(valid, x, neg_inf, _CMP_NEQ_UQ); // NaN counts as seen
        vmax = max_ignoring_nan(x, vmax);
        _mm512_mask_storeu_ps(s + j, valid, x);
    }
    if (seen == 0) {
        return false;
    }
    float row_max = _mm512_reduce_max_ps(vmax);
    if (row_max == -__builtin_inff()) {
        row_max = 0.0f; // only NaN scores are visible: exp(NaN - 0) keeps them NaN
    }
    // pass 2: e = exp(x - max), exactly 0 for masked keys; the sum, 16 lanes then double.
    const __m512 vm = _mm512_set1_ps(row_max);
    __m512 vsum = _mm512_setzero_ps();
    for (std::size_t j = 0; j < n; j += 16) {
        const __mmask16 valid = tail_mask(n - j);
        const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(valid, s + j), vm));
        vsum = _mm512_mask_add_ps(vsum, valid, vsum, e);
        _mm512_mask_storeu_ps(s + j, valid, e);
    }
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, vsum);
    double sum = 0.0;
    for (const float x : lanes) {
        sum += static_cast<double>(x);
    }
    // pass 3: normalise (sum >= 1 here: the max's own term is exp(0) = 1, or NaN).
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
    for (std::size_t j = 0; j < n; j += 16) {
        const __mmask16 valid = tail_mask(n - j);
        _mm512_mask_storeu_ps(
            s + j, valid, _mm512_mul_ps(_mm512_maskz_loadu_ps(valid, s + j), inv));
    }
    return true;
}

} // namespace

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

const KernelOps* kernel_ops_avx512() {
    // __builtin_cpu_init() first: this may run before main(), from a static initialiser.
    static const bool supported =
        (__builtin_cpu_init(), true) && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl");
    static const KernelOps ops{
        .gemm = &gemm_avx512,
        .gemm_prefetch = &gemm_prefetch_avx512,
        .online_softmax = &online_softmax_avx512,
        .softmax_row = &softmax_row_avx512,
    };
    return supported ? &ops : nullptr;
}

#else

const KernelOps* kernel_ops_avx512() {
    return nullptr;
}

#endif

const KernelOps& kernel_ops(Simd simd) {
    if (simd == Simd::best) {
        if (const KernelOps* ops = kernel_ops_avx512()) {
            return *ops;
        }
    }
    return kernel_ops_portable();
}

} // namespace attn::detail

namespace attn {

const char* simd_name(Simd simd) {
    return &detail::kernel_ops(simd) == &detail::kernel_ops_portable() ? "portable" : "avx512";
}

} // namespace attn

// The register-blocked micro-GEMM of the kernel operations (KernelOps::gemm), for one SIMD
// target: kRows x kVecs vectors of C per tile, sized per target, over k passes of kDepth.
// Included per target by kernel_ops_hwy.cpp (Highway's -inl.h convention).
#if defined(ATTN_CORE_KERNEL_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_CORE_KERNEL_GEMM_INL_H_
#undef ATTN_CORE_KERNEL_GEMM_INL_H_
#else
#define ATTN_CORE_KERNEL_GEMM_INL_H_
#endif

#include "core/kernel_ops.hpp"
#include "core/kernel_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attn::detail::HWY_NAMESPACE {
namespace {

// Micro-tile shape: kRows rows of C by kVecs vectors, with kVecs B vectors and one
// broadcast of A live at once. 32 vector registers (AVX-512, NEON, SVE): 6 x 4 = 24
// accumulators; 16 (AVX2, SSE4, SSSE3): 6 x 2 = 12; the scalar fallbacks, which have no
// registers to fill and which no CPU of ours runs unless a test forces them: 4 x 2, half
// the tile variants to compile (the 4 x 4 tile's were 44 % of this target's sanitized
// compile). Each C element sums its k products in order whatever the tile: same results.
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
constexpr std::size_t kRows = 4;
constexpr std::size_t kVecs = 2;
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3
constexpr std::size_t kRows = 6;
constexpr std::size_t kVecs = 2;
#else
constexpr std::size_t kRows = 6;
constexpr std::size_t kVecs = 4;
#endif
// k per pass. C is stored and reloaded between passes (exactly: float32 to float32), so
// the pass length never changes a sum, only how often a tile's accumulators go through
// memory. The attention kernels' products have k <= 256 (one pass); the stored-type
// products multiply chunks of k = 1024, one pass each: measured on the Zen 5 with a
// 512 x 64 x 1024 product, 256 -> 1024 took AVX2 93.5 -> 99.4 GFLOPS and AVX-512 185 -> 198
// (medians of 7). The B tile streams from L2 then (1024 x 16 floats on AVX2, 64 KiB).
constexpr std::size_t kDepth = 1024;

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

// One k step of a tile: kVecs B vectors, then the FMAs row by row.
#define ATTN_K_STEP(x)                                                                             \
    {                                                                                              \
        const float* bp = b + (x)*ldb;                                                             \
        ATTN_LOAD_B(0)                                                                             \
        ATTN_LOAD_B(1)                                                                             \
        ATTN_LOAD_B(2)                                                                             \
        ATTN_LOAD_B(3)                                                                             \
        const float* ap = a + (x)*a_col;                                                           \
        ATTN_ROW_FMA(0)                                                                            \
        ATTN_ROW_FMA(1)                                                                            \
        ATTN_ROW_FMA(2)                                                                            \
        ATTN_ROW_FMA(3)                                                                            \
        ATTN_ROW_FMA(4)                                                                            \
        ATTN_ROW_FMA(5)                                                                            \
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
        ATTN_K_STEP(x)
    }
    for (; x < k; ++x) {
        ATTN_K_STEP(x)
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
#undef ATTN_K_STEP

using MicroTile = decltype(&micro_tile<1, 1, false>);

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

/// Blocked driver: k in passes of kDepth, m in kRows-row tiles, n in tiles of kVecs
/// vectors: a row tile's slice of A (kRows x kc) is reused from L1 by every column tile,
/// and the pass's B panel (kc x n) from L2 by every row tile, so A (the larger operand of
/// the stored-type products: 512 x 1024 floats, 2 MiB, against a 256 KiB panel) is read
/// from memory once per pass. Measured on the Zen 5, AVX2, 512 x 64 x 1024 (medians of
/// 7): 91.0 -> 98.3 GFLOPS with A's rows 2048 floats apart, 93.9 -> 98.1 with 8192; one
/// column tile (AVX-512's 64-wide panels, the attention kernels' blocks on AVX-512) runs
/// as before. The prefetch lines are spread over the tiles: each takes its share, a line
/// per k step.
void gemm(const GemmArgs& g) {
    const auto& [m, n, k, a, a_row, a_col, b, ldb, c, ldc, accumulate, row_scale, pf, pf_bytes] = g;
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
        for (std::size_t m0 = 0; m0 < m; m0 += kRows) {
            const std::size_t mr = min_size(kRows, m - m0);
            for (std::size_t n0 = 0; n0 < n; n0 += width) {
                const std::size_t nc = min_size(width, n - n0);
                const std::size_t vectors = (nc + lanes - 1) / lanes;
                const std::size_t last = nc - (vectors - 1) * lanes;
                std::size_t lines = min_size(pf_per_tile, pf_left);
                // More lines than k steps: the excess goes out before the tile.
                for (; lines > kc; --lines, --pf_left, pf_next += kLine) {
                    prefetch_l2(pf_next);
                }
                // With k == 0 no element of A or B is read (the tile only zeroes or scales
                // C) and either may be an empty operand's null pointer: no offset is formed
                // from them then, since null plus an offset is undefined behaviour.
                const float* a_tile = k == 0 ? a : a + m0 * a_row + k0 * a_col;
                const float* b_tile = k == 0 ? b : b + k0 * ldb + n0;
                pick_tile(mr, vectors, last, lanes)(kc,
                                                    a_tile,
                                                    a_row,
                                                    a_col,
                                                    b_tile,
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

} // namespace
} // namespace attn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // ATTN_CORE_KERNEL_GEMM_INL_H_

// The SIMD kernel of the stored-type matrix products, written once over Google Highway and
// compiled for every target the core's kernels are (kernel_ops_hwy.cpp: the x86 AVX3_DL,
// AVX3, AVX2, SSE4, SSSE3; Arm's SVE and NEON; the fallback). This file is included once
// per target by hwy/foreach_target.h; the HWY_ONCE part picks a table per call.
//
// The kernel is a dot-product tile: kNr rows of x against kMr rows of a dequantized W
// panel, kNr x kMr vector accumulators summed along k, reduced across lanes once per
// panel. Both operands are read along k, as they are stored (x row-major, W's rows as
// dequantized), so nothing is transposed or packed. The panels are dequantized by
// quant_blocks-inl.h compiled for the same target (the compiler vectorizes its loops for
// it); matmul.cpp drives both.
#include "attn/error.hpp"
#include "attn/kernels.hpp"
#include "model/matmul_ops.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#ifndef HWY_COMPILE_ALL_ATTAINABLE
#define HWY_COMPILE_ALL_ATTAINABLE 1
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL 1
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "model/matmul_hwy.cpp"
#include <hwy/foreach_target.h> // IWYU pragma: keep
#include <hwy/highway.h>

// The block dequantizers, included here once per target.
#include "model/quant_blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attn::model::detail::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// Tile: kNr rows of x by kMr rows of W, kNr x kMr accumulators, kNr x vectors and one W
// vector live at once. 32 vector registers (AVX-512, NEON, SVE): 4 x 6 = 24 accumulators
// + 4 + 1; 16 (AVX2, SSE4, SSSE3): 3 x 4 = 12 + 3 + 1; the fallback: 2 x 4.
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
constexpr std::size_t kNr = 2;
constexpr std::size_t kMr = 4;
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3
constexpr std::size_t kNr = 3;
constexpr std::size_t kMr = 4;
#else
constexpr std::size_t kNr = 4;
constexpr std::size_t kMr = 6;
#endif
static_assert(kNr <= 4 && kMr <= 6, "ATTN_DOT_TILE covers at most 4 x 6 slots");

// The accumulators are named variables, not an array: SVE vectors are sizeless and cannot
// be array elements. ATTN_DOT_TILE(OP) applies OP(i, j) to every slot of the largest tile;
// `if constexpr` inside OP drops the slots outside NR x MR.
// i and j are digits pasted into names: they cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ATTN_DOT_ROW(OP, i) OP(i, 0) OP(i, 1) OP(i, 2) OP(i, 3) OP(i, 4) OP(i, 5)
#define ATTN_DOT_TILE(OP)                                                                          \
    ATTN_DOT_ROW(OP, 0) ATTN_DOT_ROW(OP, 1) ATTN_DOT_ROW(OP, 2) ATTN_DOT_ROW(OP, 3)
#define ATTN_DOT_DECLARE(i, j) V acc##i##j = hn::Zero(d);
#define ATTN_DOT_LOAD_X(i)                                                                         \
    V x##i = hn::Zero(d);                                                                          \
    if constexpr (i < NR) {                                                                        \
        x##i = hn::LoadU(d, x + i * ldx + p);                                                      \
    }
#define ATTN_DOT_FMA(i, j)                                                                         \
    if constexpr (i < NR) {                                                                        \
        acc##i##j = hn::MulAdd(x##i, w##j, acc##i##j);                                             \
    }
// One W row's vector, then its FMAs against every x row (one W vector live at a time).
#define ATTN_DOT_COLUMN(j)                                                                         \
    if constexpr (j < MR) {                                                                        \
        const V w##j = hn::LoadU(d, w + j * ldw + p);                                              \
        ATTN_DOT_FMA(0, j) ATTN_DOT_FMA(1, j) ATTN_DOT_FMA(2, j) ATTN_DOT_FMA(3, j)                \
    }
// The lanes' sum, the k tail (k not a multiple of the lanes: only on wide SVE, since k is
// a whole number of 32-element blocks) and the store.
#define ATTN_DOT_STORE(i, j)                                                                       \
    if constexpr (i < NR && j < MR) {                                                              \
        float s = hn::GetLane(hn::SumOfLanes(d, acc##i##j));                                       \
        for (std::size_t q = k_vec; q < k; ++q) {                                                  \
            s += x[i * ldx + q] * w[j * ldw + q];                                                  \
        }                                                                                          \
        float* yp = y + i * ldy + j;                                                               \
        *yp = accumulate ? *yp + s : s;                                                            \
    }

/// y tile [NR, MR] (+)= x[NR, k] · w[MR, k]ᵀ.
template <std::size_t NR, std::size_t MR>
void dot_tile(const float* HWY_RESTRICT x,
              std::size_t ldx,
              const float* HWY_RESTRICT w,
              std::size_t ldw,
              std::size_t k,
              float* HWY_RESTRICT y,
              std::size_t ldy,
              bool accumulate) {
    const D d;
    const std::size_t lanes = hn::Lanes(d);
    const std::size_t k_vec = k - k % lanes;
    ATTN_DOT_TILE(ATTN_DOT_DECLARE)
    for (std::size_t p = 0; p < k_vec; p += lanes) {
        ATTN_DOT_LOAD_X(0)
        ATTN_DOT_LOAD_X(1)
        ATTN_DOT_LOAD_X(2)
        ATTN_DOT_LOAD_X(3)
        ATTN_DOT_COLUMN(0)
        ATTN_DOT_COLUMN(1)
        ATTN_DOT_COLUMN(2)
        ATTN_DOT_COLUMN(3)
        ATTN_DOT_COLUMN(4)
        ATTN_DOT_COLUMN(5)
    }
    ATTN_DOT_TILE(ATTN_DOT_STORE)
}
// NOLINTEND(bugprone-macro-parentheses)

#undef ATTN_DOT_ROW
#undef ATTN_DOT_TILE
#undef ATTN_DOT_DECLARE
#undef ATTN_DOT_LOAD_X
#undef ATTN_DOT_FMA
#undef ATTN_DOT_COLUMN
#undef ATTN_DOT_STORE

using DotTile = decltype(&dot_tile<1, 1>);

template <std::size_t NR> DotTile tile_of_width(std::size_t mr) {
    switch (mr) {
    case 1:
        return &dot_tile<NR, 1>;
    case 2:
        return &dot_tile<NR, 2>;
    case 3:
        return &dot_tile<NR, 3>;
    case 4:
        if constexpr (kMr > 4) {
            return &dot_tile<NR, 4>;
        }
        [[fallthrough]];
    case 5:
        if constexpr (kMr > 5) {
            return &dot_tile<NR, 5>;
        }
        [[fallthrough]];
    default:
        return &dot_tile<NR, kMr>;
    }
}

/// The tile for nr (<= kNr) rows of x by mr (<= kMr) rows of W.
DotTile pick_tile(std::size_t nr, std::size_t mr) {
    switch (nr) {
    case 1:
        return tile_of_width<1>(mr);
    case 2:
        if constexpr (kNr > 2) {
            return tile_of_width<2>(mr);
        }
        [[fallthrough]];
    case 3:
        if constexpr (kNr > 3) {
            return tile_of_width<3>(mr);
        }
        [[fallthrough]];
    default:
        return tile_of_width<kNr>(mr);
    }
}

/// The panel in tiles: x's rows in steps of kNr (one x tile stays in L1 while it meets
/// every W tile of the panel, which stays in L2), W's rows in steps of kMr.
void panel(const PanelArgs& a) {
    for (std::size_t i = 0; i < a.n; i += kNr) {
        const std::size_t nr = a.n - i < kNr ? a.n - i : kNr;
        for (std::size_t j = 0; j < a.m; j += kMr) {
            const std::size_t mr = a.m - j < kMr ? a.m - j : kMr;
            pick_tile(nr, mr)(a.x + i * a.ldx,
                              a.ldx,
                              a.w + j * a.ldw,
                              a.ldw,
                              a.k,
                              a.y + i * a.ldy + j,
                              a.ldy,
                              a.accumulate);
        }
    }
}

} // namespace

/// This target's table (referenced by the HWY_ONCE part below).
extern const MatmulOps kMatmulOps;
const MatmulOps kMatmulOps{.dequantize = &dequantize_blocks, .panel = &panel, .tile_rows = kMr};

} // namespace attn::model::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace attn::model::detail {
namespace {

struct TargetOps {
    std::int64_t target;
    const MatmulOps* ops;
};

/// Every target compiled into this file, best first (Highway's order: lower bit = better).
constexpr TargetOps kCompiled[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    {HWY_AVX3_DL, &N_AVX3_DL::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_AVX3
    {HWY_AVX3, &N_AVX3::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_AVX2
    {HWY_AVX2, &N_AVX2::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SSE4
    {HWY_SSE4, &N_SSE4::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SSSE3
    {HWY_SSSE3, &N_SSSE3::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SVE2_128
    {HWY_SVE2_128, &N_SVE2_128::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SVE_256
    {HWY_SVE_256, &N_SVE_256::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SVE2
    {HWY_SVE2, &N_SVE2::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SVE
    {HWY_SVE, &N_SVE::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_NEON
    {HWY_NEON, &N_NEON::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_EMU128
    {HWY_EMU128, &N_EMU128::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SCALAR
    {HWY_SCALAR, &N_SCALAR::kMatmulOps},
#endif
};

} // namespace

const MatmulOps& matmul_ops(Simd simd) {
    // The core's kernels are compiled for the same targets and own the rule (and the
    // messages) of which target a call may ask for: simd_target() throws unless it is
    // compiled in and this CPU runs it.
    const auto target = static_cast<std::int64_t>(
        simd == Simd::best ? simd_supported().front() : simd_target(simd_name(simd)));
    for (const TargetOps& t : kCompiled) {
        if (t.target == target) {
            return *t.ops;
        }
    }
    throw InputError(std::string("simd: the ") + simd_name(simd) +
                     " target is not compiled into the matrix products");
}

} // namespace attn::model::detail

#endif // HWY_ONCE

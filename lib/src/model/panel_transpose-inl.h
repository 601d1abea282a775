// The float32 path's panel transpose (matmul.cpp: a dequantized panel [rows, cols] into the
// micro-GEMM's B layout [cols, rows]; F32 and BF16 rows straight from the mapping, their
// conversion in the same pass), per SIMD target: 8 x 8 blocks in 256-bit registers
// on the x86 targets that have them (AVX2, AVX3, AVX3_DL), 4 x 4 in 128-bit ones on SSE4,
// SSSE3 and NEON, element by element elsewhere and on the edges. Only moves: every target
// gives the same floats. Included per target by matmul_hwy.cpp (Highway's -inl.h
// convention).
#if defined(ATTN_MODEL_PANEL_TRANSPOSE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_MODEL_PANEL_TRANSPOSE_INL_H_
#undef ATTN_MODEL_PANEL_TRANSPOSE_INL_H_
#else
#define ATTN_MODEL_PANEL_TRANSPOSE_INL_H_
#endif

#include "model/quant_blocks-inl.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace attn::model::detail::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// The block side for this target pass: 8 (x86 with 256-bit registers), 4 (x86's 128-bit
// targets, NEON), 1.
#undef ATTN_TRANSPOSE_BLOCK
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
#define ATTN_TRANSPOSE_BLOCK 1
#elif HWY_ARCH_X86 && HWY_MAX_BYTES >= 32
#define ATTN_TRANSPOSE_BLOCK 8
#elif (HWY_ARCH_X86 || HWY_TARGET == HWY_NEON) && HWY_HAVE_FLOAT64
#define ATTN_TRANSPOSE_BLOCK 4
#else
#define ATTN_TRANSPOSE_BLOCK 1
#endif
constexpr std::size_t kTransposeBlock = ATTN_TRANSPOSE_BLOCK;

#if ATTN_TRANSPOSE_BLOCK > 1
/// The block's vectors: kTransposeBlock floats.
using BlockTag = hn::FixedTag<float, kTransposeBlock>;

/// dst[c, r] = row r's column c for one kTransposeBlock-square block whose rows load(d, r)
/// returns: the two-float and four-float interleaves within each 128-bit part (a 4 x 4
/// transpose each), then, for 8 x 8, the halves exchanged.
template <class Load>
HWY_INLINE void transpose_block(const Load& load, float* dst, std::size_t ldd) {
    constexpr std::size_t b = kTransposeBlock;
    const BlockTag d;
    const hn::Repartition<double, decltype(d)> dd;
    using V = hn::Vec<decltype(d)>;
    const auto il64 = [&](V x, V y) {
        return hn::BitCast(d, hn::InterleaveLower(dd, hn::BitCast(dd, x), hn::BitCast(dd, y)));
    };
    const auto iu64 = [&](V x, V y) {
        return hn::BitCast(d, hn::InterleaveUpper(dd, hn::BitCast(dd, x), hn::BitCast(dd, y)));
    };
    V r[b];
    for (std::size_t i = 0; i < b; ++i) {
        r[i] = load(d, i);
    }
    // t[2h] = rows 2h, 2h+1 interleaved: columns 0, 1 (| 4, 5); t[2h+1]: 2, 3 (| 6, 7).
    V t[b];
    for (std::size_t h = 0; h < b / 2; ++h) {
        t[2 * h] = hn::InterleaveLower(d, r[2 * h], r[2 * h + 1]);
        t[2 * h + 1] = hn::InterleaveUpper(d, r[2 * h], r[2 * h + 1]);
    }
    // u[4q + j]: rows 4q .. 4q+3 of column j (| column j + 4).
    V u[b];
    for (std::size_t q = 0; q < b / 4; ++q) {
        u[4 * q + 0] = il64(t[4 * q], t[4 * q + 2]);
        u[4 * q + 1] = iu64(t[4 * q], t[4 * q + 2]);
        u[4 * q + 2] = il64(t[4 * q + 1], t[4 * q + 3]);
        u[4 * q + 3] = iu64(t[4 * q + 1], t[4 * q + 3]);
    }
    for (std::size_t j = 0; j < 4; ++j) {
        if constexpr (b == 8) {
            hn::StoreU(hn::ConcatLowerLower(d, u[4 + j], u[j]), d, dst + j * ldd);
            hn::StoreU(hn::ConcatUpperUpper(d, u[4 + j], u[j]), d, dst + (j + 4) * ldd);
        } else {
            hn::StoreU(u[j], d, dst + j * ldd);
        }
    }
}
#else
/// A block of one: no vectors (transpose_block is never called).
using BlockTag = hn::ScalableTag<float>;

template <class Load> HWY_INLINE void transpose_block(const Load&, float*, std::size_t) {}
#endif

/// dst[c, r] = value(r, c) for r < rows, c < cols (dst [cols, rows]): whole blocks of
/// kTransposeBlock rows through transpose_block with load(d, r0, c0, i), row r0 + i's
/// vector from column c0, in strips of 16 columns so a strip's destination rows stay in
/// L1; the rest element by element.
template <class Load, class Value>
void transpose_rows(
    std::size_t rows, std::size_t cols, const Load& load, const Value& value, float* dst) {
    constexpr std::size_t b = kTransposeBlock;
    constexpr std::size_t strip = b > 16 ? b : 16;
    const std::size_t whole_rows = b == 1 ? 0 : rows / b * b;
    const std::size_t whole_cols = b == 1 ? 0 : cols / b * b;
    for (std::size_t c0 = 0; c0 < cols; c0 += strip) {
        const std::size_t c1 = c0 + strip < cols ? c0 + strip : cols;
        const std::size_t c1_whole = c1 < whole_cols ? c1 : whole_cols;
        for (std::size_t r = 0; r < whole_rows; r += b) {
            std::size_t c = c0;
            for (; c < c1_whole; c += b) {
                transpose_block([&](BlockTag d, std::size_t i) { return load(d, r, c, i); },
                                dst + c * rows + r,
                                rows);
            }
            for (; c < c1; ++c) {
                for (std::size_t i = r; i < r + b; ++i) {
                    dst[c * rows + i] = value(i, c);
                }
            }
        }
        for (std::size_t r = whole_rows; r < rows; ++r) {
            for (std::size_t c = c0; c < c1; ++c) {
                dst[c * rows + r] = value(r, c);
            }
        }
    }
}

/// dst[c, r] = src[r, c] for src [rows, cols] (row stride cols) and dst [cols, rows].
void transpose_panel(const float* src, std::size_t rows, std::size_t cols, float* dst) {
    transpose_rows(
        rows,
        cols,
        [&](BlockTag d, std::size_t r, std::size_t c, std::size_t i) {
            return hn::LoadU(d, src + (r + i) * cols + c);
        },
        [&](std::size_t r, std::size_t c) { return src[r * cols + c]; },
        dst);
}

/// For the elementwise types, F32 and BF16: dst[c, r] = the value of rows[r]'s element c
/// for r < n_rows, c < cols (each rows[r] the chunk's first element), as dequantizing the
/// rows and transposing them gives (quant_blocks-inl.h's plain_f32 and bf16_at), in one
/// pass. False for every other type (the caller dequantizes, then transposes).
bool pack_transposed(std::uint32_t type,
                     const std::uint8_t* const* rows,
                     std::size_t n_rows,
                     std::size_t cols,
                     float* dst) {
    if (type == t_f32) {
        transpose_rows(
            n_rows,
            cols,
            [&](BlockTag d, std::size_t r, std::size_t c, std::size_t i) {
                return hn::LoadU(d, reinterpret_cast<const float*>(rows[r + i]) + c);
            },
            [&](std::size_t r, std::size_t c) {
                float v = 0.0F;
                std::memcpy(&v, rows[r] + 4 * c, sizeof v);
                return v;
            },
            dst);
        return true;
    }
    if (type == t_bf16) {
        transpose_rows(
            n_rows,
            cols,
            [&](BlockTag d, std::size_t r, std::size_t c, std::size_t i) {
                const hn::Rebind<std::uint16_t, BlockTag> d16;
                const hn::RebindToUnsigned<BlockTag> du;
                const auto* p = reinterpret_cast<const std::uint16_t*>(rows[r + i]) + c;
                return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
            },
            [&](std::size_t r, std::size_t c) { return bf16_at(rows[r] + 2 * c); },
            dst);
        return true;
    }
    return false;
}

} // namespace
} // namespace attn::model::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#undef ATTN_TRANSPOSE_BLOCK

#endif // ATTN_MODEL_PANEL_TRANSPOSE_INL_H_

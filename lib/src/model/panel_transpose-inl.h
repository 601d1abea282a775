// The float32 path's panel transpose (matmul.cpp: a dequantized panel [rows, cols] into the
// micro-GEMM's B layout [cols, rows]), per SIMD target: 8 x 8 blocks in 256-bit registers
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

#include <cstddef>
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

#if ATTN_TRANSPOSE_BLOCK == 8
/// dst[c, r] = src[r, c] for one 8 x 8 block: the two-float and four-float interleaves
/// within each 128-bit half, then the halves exchanged.
HWY_INLINE void transpose_block(const float* src, std::size_t lds, float* dst, std::size_t ldd) {
    const hn::FixedTag<float, 8> d;
    const hn::Repartition<double, decltype(d)> dd;
    using V = hn::Vec<decltype(d)>;
    const auto il64 = [&](V a, V b) {
        return hn::BitCast(d, hn::InterleaveLower(dd, hn::BitCast(dd, a), hn::BitCast(dd, b)));
    };
    const auto iu64 = [&](V a, V b) {
        return hn::BitCast(d, hn::InterleaveUpper(dd, hn::BitCast(dd, a), hn::BitCast(dd, b)));
    };
    V r[8];
    for (std::size_t i = 0; i < 8; ++i) {
        r[i] = hn::LoadU(d, src + i * lds);
    }
    // t[2h] = rows 2h, 2h+1 interleaved: columns 0, 1 | 4, 5; t[2h+1]: 2, 3 | 6, 7.
    V t[8];
    for (std::size_t h = 0; h < 4; ++h) {
        t[2 * h] = hn::InterleaveLower(d, r[2 * h], r[2 * h + 1]);
        t[2 * h + 1] = hn::InterleaveUpper(d, r[2 * h], r[2 * h + 1]);
    }
    // u[4q + j]: rows 4q .. 4q+3 of column j | column j + 4.
    V u[8];
    for (std::size_t q = 0; q < 2; ++q) {
        u[4 * q + 0] = il64(t[4 * q], t[4 * q + 2]);
        u[4 * q + 1] = iu64(t[4 * q], t[4 * q + 2]);
        u[4 * q + 2] = il64(t[4 * q + 1], t[4 * q + 3]);
        u[4 * q + 3] = iu64(t[4 * q + 1], t[4 * q + 3]);
    }
    for (std::size_t j = 0; j < 4; ++j) {
        hn::StoreU(hn::ConcatLowerLower(d, u[4 + j], u[j]), d, dst + j * ldd);
        hn::StoreU(hn::ConcatUpperUpper(d, u[4 + j], u[j]), d, dst + (j + 4) * ldd);
    }
}
#elif ATTN_TRANSPOSE_BLOCK == 4
/// dst[c, r] = src[r, c] for one 4 x 4 block.
HWY_INLINE void transpose_block(const float* src, std::size_t lds, float* dst, std::size_t ldd) {
    const hn::FixedTag<float, 4> d;
    const hn::Repartition<double, decltype(d)> dd;
    using V = hn::Vec<decltype(d)>;
    const V r0 = hn::LoadU(d, src);
    const V r1 = hn::LoadU(d, src + lds);
    const V r2 = hn::LoadU(d, src + 2 * lds);
    const V r3 = hn::LoadU(d, src + 3 * lds);
    const auto t0 = hn::BitCast(dd, hn::InterleaveLower(d, r0, r1)); // columns 0, 1
    const auto t1 = hn::BitCast(dd, hn::InterleaveUpper(d, r0, r1)); // columns 2, 3
    const auto t2 = hn::BitCast(dd, hn::InterleaveLower(d, r2, r3));
    const auto t3 = hn::BitCast(dd, hn::InterleaveUpper(d, r2, r3));
    hn::StoreU(hn::BitCast(d, hn::InterleaveLower(dd, t0, t2)), d, dst);
    hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(dd, t0, t2)), d, dst + ldd);
    hn::StoreU(hn::BitCast(d, hn::InterleaveLower(dd, t1, t3)), d, dst + 2 * ldd);
    hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(dd, t1, t3)), d, dst + 3 * ldd);
}
#else
/// dst[c, r] = src[r, c] for one 1 x 1 block.
HWY_INLINE void transpose_block(const float* src, std::size_t, float* dst, std::size_t) {
    *dst = *src;
}
#endif

/// dst[c, r] = src[r, c] for src [rows, cols] (row stride cols) and dst [cols, rows]: whole
/// blocks of kTransposeBlock rows, in strips of 16 columns so a strip's destination rows
/// stay in L1, then the rows past the last whole block one by one.
void transpose_panel(const float* src, std::size_t rows, std::size_t cols, float* dst) {
    constexpr std::size_t b = kTransposeBlock;
    constexpr std::size_t strip = b > 16 ? b : 16;
    const std::size_t whole_rows = rows / b * b;
    const std::size_t whole_cols = cols / b * b;
    for (std::size_t c0 = 0; c0 < cols; c0 += strip) {
        const std::size_t c1 = c0 + strip < cols ? c0 + strip : cols;
        const std::size_t c1_whole = c1 < whole_cols ? c1 : whole_cols;
        for (std::size_t r = 0; r < whole_rows; r += b) {
            std::size_t c = c0;
            for (; c < c1_whole; c += b) {
                transpose_block(src + r * cols + c, cols, dst + c * rows + r, rows);
            }
            for (; c < c1; ++c) {
                for (std::size_t i = r; i < r + b; ++i) {
                    dst[c * rows + i] = src[i * cols + c];
                }
            }
        }
        for (std::size_t r = whole_rows; r < rows; ++r) {
            for (std::size_t c = c0; c < c1; ++c) {
                dst[c * rows + r] = src[r * cols + c];
            }
        }
    }
}

} // namespace
} // namespace attn::model::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#undef ATTN_TRANSPOSE_BLOCK

#endif // ATTN_MODEL_PANEL_TRANSPOSE_INL_H_

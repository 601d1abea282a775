// The ggml block formats' dequantizers, written from the block layouts of ggml-common.h
// and the reference dequantize_row_* of ggml-quants.c: the same arithmetic in the same
// order (float products, then the float subtraction), so the results are bit for bit
// ggml's as long as the including file is compiled with -ffp-contract=off (no product and
// sum fused into an FMA; lib/CMakeLists.txt sets it for both). One block per call of an
// inner function whose loops the compiler vectorizes; no SIMD intrinsics.
// Included twice over (Highway's -inl.h convention): by quants.cpp for its static target
// (dequantize_ggml), and per SIMD target by matmul_hwy.cpp, whose panels the compiler
// then vectorizes for that target. It checks nothing: its callers have.
#ifndef ATTN_MODEL_QUANT_BLOCKS_DECL_INL_H_
#define ATTN_MODEL_QUANT_BLOCKS_DECL_INL_H_
namespace attn::model::detail {
/// Every binary16 value as float32, indexed by its bits (quants.cpp).
const float* f16_table();
} // namespace attn::model::detail
#endif

#if defined(ATTN_MODEL_QUANT_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_MODEL_QUANT_BLOCKS_INL_H_
#undef ATTN_MODEL_QUANT_BLOCKS_INL_H_
#else
#define ATTN_MODEL_QUANT_BLOCKS_INL_H_
#endif

#include "attn/model/quants.hpp"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace attn::model::detail::HWY_NAMESPACE {
namespace {

enum : std::uint32_t {
    t_f32 = 0,
    t_f16 = 1,
    t_q4_0 = 2,
    t_q4_1 = 3,
    t_q5_0 = 6,
    t_q5_1 = 7,
    t_q8_0 = 8,
    t_q2_k = 10,
    t_q3_k = 11,
    t_q4_k = 12,
    t_q5_k = 13,
    t_q6_k = 14,
    t_bf16 = 30,
};

float f16_at(const float* f16, const std::uint8_t* p) {
    return f16[static_cast<std::size_t>(p[0] | (p[1] << 8))];
}

std::uint32_t u32_at(const std::uint8_t* p) {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

/// `lo` and `hi` (each within int16) as one int32 lane of two int16 halves, `lo` the low one
/// (the integer products' Q8_K sums and K-quant factors; unused where only blocks are read).
[[maybe_unused]] std::int32_t pair16(std::int32_t lo, std::int32_t hi) {
    return std::bit_cast<std::int32_t>(
        static_cast<std::uint32_t>(static_cast<std::uint16_t>(lo)) |
        (static_cast<std::uint32_t>(static_cast<std::uint16_t>(hi)) << 16U));
}

// ---- 32-element blocks -------------------------------------------------------------------

/// Q4_0: d (f16), 16 bytes of nibbles; low nibbles are elements 0..15, high ones 16..31.
void block_q4_0(const std::uint8_t* __restrict b, float* __restrict y, const float* f16) {
    const float d = f16_at(f16, b);
    const std::uint8_t* qs = b + 2;
    // ggml's (float)(x - 8) * d, one loop per half: each is loads, widening, a convert and
    // a product that GCC vectorizes for every target. (The nibbles unpacked to a byte
    // array first came out as byte inserts through the stack on AVX2 and AVX-512: g++ 12
    // -O3, 0.39 -> 0.13 ns a weight with -mavx2, the same values.)
    for (std::size_t j = 0; j < 16; ++j) {
        y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    }
    for (std::size_t j = 0; j < 16; ++j) {
        y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
    }
}

/// Q4_1: d, m (f16), 16 bytes of nibbles; x * d + m.
void block_q4_1(const std::uint8_t* __restrict b, float* __restrict y, const float* f16) {
    const float d = f16_at(f16, b);
    const float m = f16_at(f16, b + 2);
    const std::uint8_t* qs = b + 4;
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
        y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
    }
}

/// Q5_0: d (f16), 32 high bits (u32, bit j for element j), 16 bytes of low nibbles.
void block_q5_0(const std::uint8_t* __restrict b, float* __restrict y, const float* f16) {
    const float d = f16_at(f16, b);
    const std::uint32_t qh = u32_at(b + 2);
    const std::uint8_t* qs = b + 6;
    for (int j = 0; j < 16; ++j) {
        const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
        const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
        y[j] = static_cast<float>(((qs[j] & 0x0F) | h0) - 16) * d;
        y[j + 16] = static_cast<float>(((qs[j] >> 4) | h1) - 16) * d;
    }
}

/// Q5_1: d, m (f16), 32 high bits, 16 bytes of low nibbles; x * d + m.
void block_q5_1(const std::uint8_t* __restrict b, float* __restrict y, const float* f16) {
    const float d = f16_at(f16, b);
    const float m = f16_at(f16, b + 2);
    const std::uint32_t qh = u32_at(b + 4);
    const std::uint8_t* qs = b + 8;
    for (int j = 0; j < 16; ++j) {
        const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
        const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
        y[j] = static_cast<float>((qs[j] & 0x0F) | h0) * d + m;
        y[j + 16] = static_cast<float>((qs[j] >> 4) | h1) * d + m;
    }
}

/// Q8_0: d (f16), 32 signed bytes.
void block_q8_0(const std::uint8_t* __restrict b, float* __restrict y, const float* f16) {
    const float d = f16_at(f16, b);
    for (int j = 0; j < 32; ++j) {
        y[j] = static_cast<float>(static_cast<std::int8_t>(b[2 + j])) * d;
    }
}

// ---- 256-element super-blocks --------------------------------------------------------------

/// Q2_K: 16 scale bytes (low nibble: scale, high: min), 64 bytes of 2-bit values, d, dmin.
/// Each 128 elements read 32 bytes four times (shifts 0, 2, 4, 6), 16 elements per scale.
void block_q2_k(const std::uint8_t* __restrict b, float* __restrict y, const float* f16) {
    const std::uint8_t* scales = b;
    const std::uint8_t* q = b + 16;
    const float d = f16_at(f16, b + 80);
    const float dmin = f16_at(f16, b + 82);
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int part = 0; part < 2; ++part) {
                const std::uint8_t sc = scales[is++];
                const float dl = d * static_cast<float>(sc & 0xF);
                const float ml = dmin * static_cast<float>(sc >> 4);
                const std::uint8_t* qp = q + static_cast<std::ptrdiff_t>(16 * part);
                for (int l = 0; l < 16; ++l) {
                    y[l] = dl * static_cast<float>((qp[l] >> shift) & 3) - ml;
                }
                y += 16;
            }
        }
    }
}

/// Q3_K's sixteen 6-bit scales: low nibbles from bytes 0..7, high pairs from 8..11.
std::array<int, 16> q3_k_scales(const std::uint8_t* s) {
    std::array<int, 16> out{};
    for (int i = 0; i < 16; ++i) {
        const int low = (i < 8 ? s[i] : s[i - 8] >> 4) & 0x0F;
        const int high = (s[8 + (i % 4)] >> (2 * (i / 4))) & 3;
        out[static_cast<std::size_t>(i)] = (low | (high << 4)) - 32;
    }
    return out;
}

/// Q3_K: 32 bytes of high-bit masks, 64 bytes of 2-bit values, 12 bytes of scales, d.
/// A clear high bit subtracts 4.
void block_q3_k(const std::uint8_t* __restrict b, float* __restrict y, const float* f16) {
    const std::uint8_t* hm = b;
    const std::uint8_t* q = b + 32;
    const std::array<int, 16> scales = q3_k_scales(b + 96);
    const float d_all = f16_at(f16, b + 108);
    int is = 0;
    int bit = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
        for (int shift = 0; shift < 8; shift += 2, ++bit) {
            for (int part = 0; part < 2; ++part) {
                const float dl = d_all * static_cast<float>(scales[static_cast<std::size_t>(is++)]);
                const std::uint8_t* qp = q + static_cast<std::ptrdiff_t>(16 * part);
                const std::uint8_t* hp = hm + static_cast<std::ptrdiff_t>(16 * part);
                for (int l = 0; l < 16; ++l) {
                    const int v = ((qp[l] >> shift) & 3) - (((hp[l] >> bit) & 1) != 0 ? 0 : 4);
                    y[l] = dl * static_cast<float>(v);
                }
                y += 16;
            }
        }
    }
}

/// The K-quants' 6-bit (scale, min) pair j of 8, packed in 12 bytes (get_scale_min_k4).
void scale_min_k4(int j, const std::uint8_t* q, int& sc, int& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/// Q4_K and Q5_K: d, dmin, 12 scale bytes, then (Q5_K) 32 bytes of high bits, 128 bytes of
/// nibbles. Each 64 elements: 32 low nibbles then 32 high ones, each with its scale and min.
template <bool five>
void block_q45_k(const std::uint8_t* __restrict b, float* __restrict y, const float* f16) {
    const float d = f16_at(f16, b);
    const float dmin = f16_at(f16, b + 2);
    const std::uint8_t* scales = b + 4;
    const std::uint8_t* qh = b + 16;
    const std::uint8_t* ql = b + (five ? 48 : 16);
    for (int j = 0; j < 4; ++j, ql += 32) {
        for (int part = 0; part < 2; ++part) {
            int sc = 0;
            int m = 0;
            scale_min_k4(2 * j + part, scales, sc, m);
            const float dl = d * static_cast<float>(sc);
            const float ml = dmin * static_cast<float>(m);
            const int shift = 4 * part;
            const int bit = 2 * j + part;
            for (int l = 0; l < 32; ++l) {
                int v = (ql[l] >> shift) & 0xF;
                if constexpr (five) {
                    v += ((qh[l] >> bit) & 1) << 4;
                }
                y[l] = dl * static_cast<float>(v) - ml;
            }
            y += 32;
        }
    }
}

/// Q6_K: 128 bytes of low nibbles, 64 bytes of high pairs, 16 signed scales, d.
/// Each 128 elements: four runs of 32 from ql[0..31], ql[32..63] (low, then high nibbles)
/// and the four bit pairs of qh[0..31]; (d * scale) * q.
void block_q6_k(const std::uint8_t* __restrict b, float* __restrict y, const float* f16) {
    const std::uint8_t* ql = b;
    const std::uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
    const float d = f16_at(f16, b + 208);
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
        for (int run = 0; run < 4; ++run) {
            const std::uint8_t* lp = ql + static_cast<std::ptrdiff_t>(32 * (run & 1));
            const int lshift = 4 * (run >> 1);
            const int hshift = 2 * run;
            for (int g = 0; g < 2; ++g) {
                const float ds = d * static_cast<float>(sc[2 * run + g]);
                for (int l = 16 * g; l < 16 * g + 16; ++l) {
                    const int q = (((lp[l] >> lshift) & 0xF) | (((qh[l] >> hshift) & 3) << 4)) - 32;
                    y[32 * run + l] = ds * static_cast<float>(q);
                }
            }
        }
    }
}

void plain_f32(const std::uint8_t* src, float* dst, std::size_t n) {
    std::memcpy(dst, src, n * sizeof(float)); // little-endian hosts only (checked in CMake)
}

/// The little-endian uint16 at `p` (the hosts are little-endian: checked in CMake); a
/// memcpy GCC turns into one 16-bit load, so the loops below vectorize.
std::uint16_t u16_at(const std::uint8_t* p) {
    std::uint16_t h = 0;
    std::memcpy(&h, p, sizeof h);
    return h;
}

void plain_f16(const std::uint8_t* src, float* dst, std::size_t n, const float* table) {
    for (std::size_t i = 0; i < n; ++i) {
        dst[i] = table[u16_at(src + 2 * i)];
    }
}

/// The float of the BF16 bits at `p`: shifted into a float's high half.
float bf16_at(const std::uint8_t* p) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(u16_at(p)) << 16U);
}

void plain_bf16(const std::uint8_t* src, float* dst, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        dst[i] = bf16_at(src + 2 * i);
    }
}

template <void (*Block)(const std::uint8_t*, float*, const float*)>
void blocks(const std::uint8_t* src,
            float* dst,
            std::size_t n_blocks,
            std::size_t stride,
            std::size_t block,
            const float* f16) {
    for (std::size_t i = 0; i < n_blocks; ++i) {
        Block(src + i * stride, dst + i * block, f16);
    }
}

/// Dequantizes `n_blocks` blocks of `type` (one attn dequantizes; `t` its traits) from `s`
/// into `y`.
void dequantize_blocks(std::uint32_t type,
                       const GgmlTypeTraits& t,
                       const std::uint8_t* s,
                       std::size_t n_blocks,
                       float* y) {
    const float* f16 = f16_table();
    const std::size_t stride = t.block_bytes;
    const std::size_t block = t.block;
    switch (type) {
    case t_f32:
        plain_f32(s, y, n_blocks);
        break;
    case t_f16:
        plain_f16(s, y, n_blocks, f16);
        break;
    case t_bf16:
        plain_bf16(s, y, n_blocks);
        break;
    case t_q4_0:
        blocks<block_q4_0>(s, y, n_blocks, stride, block, f16);
        break;
    case t_q4_1:
        blocks<block_q4_1>(s, y, n_blocks, stride, block, f16);
        break;
    case t_q5_0:
        blocks<block_q5_0>(s, y, n_blocks, stride, block, f16);
        break;
    case t_q5_1:
        blocks<block_q5_1>(s, y, n_blocks, stride, block, f16);
        break;
    case t_q8_0:
        blocks<block_q8_0>(s, y, n_blocks, stride, block, f16);
        break;
    case t_q2_k:
        blocks<block_q2_k>(s, y, n_blocks, stride, block, f16);
        break;
    case t_q3_k:
        blocks<block_q3_k>(s, y, n_blocks, stride, block, f16);
        break;
    case t_q4_k:
        blocks<block_q45_k<false>>(s, y, n_blocks, stride, block, f16);
        break;
    case t_q5_k:
        blocks<block_q45_k<true>>(s, y, n_blocks, stride, block, f16);
        break;
    case t_q6_k:
        blocks<block_q6_k>(s, y, n_blocks, stride, block, f16);
        break;
    default:
        break; // the caller checked the type
    }
}

} // namespace
} // namespace attn::model::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // ATTN_MODEL_QUANT_BLOCKS_INL_H_

// The integer products of Q4_K, Q5_K and Q6_K weights with activations rounded to Q8_K
// (ggml's quantize_row_q8_K_ref; matmul_q8.hpp), for one SIMD target. Per super-block b of
// 256 elements, with u a weight's unsigned code (Q4_K: 4 bits, Q5_K: 5, Q6_K: 6):
//   isum = Σ_j sc_j · Σ_{l in sub-block j} u_l x_l   (sub-blocks of 32 for Q4_K and Q5_K,
//          sc their 6-bit scale; of 16 for Q6_K, sc its int8 scale)
//   corr = Σ_{g < 16} c_g · bsum_g                     (bsum_g = Σ x over 16 activations;
//          c_g = the 6-bit min of g's sub-block for Q4_K and Q5_K, 32 · sc for Q6_K,
//          whose weights are u − 32)
// all exact in int32 (|isum| < 2^29), then along b in order
//   Q6_K:        y = fma(d_w · d_x, float(isum − corr), y)
//   Q4_K, Q5_K:  y = fma(d_w · d_x, float(isum), y);  y = fma(−(dmin_w · d_x), float(corr), y)
// the integers of ggml's vec_dot_q4_K_q8_K, _q5_K_, _q6_K_ and its scales, in one float
// order (ggml sums 8 partial lanes) that is the same on every target, so y is
// bit-identical across targets and thread counts. x86 AVX2 and AVX-512 targets pack each
// panel of W as quant_dot-inl.h does (a vector holds kLanes weight rows, 4 consecutive k a
// lane; its kLanes, VecI, VecF, kPackRows and broadcast4 are used here), with each
// sub-block's scale and the 16 correction factors a lane; every other target takes the
// portable loop, one pair at a time. Included per target by matmul_hwy.cpp after
// quant_dot-inl.h. It checks nothing: matmul_q8.cpp has.
#if defined(ATTN_MODEL_QUANT_DOT_K_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_MODEL_QUANT_DOT_K_INL_H_
#undef ATTN_MODEL_QUANT_DOT_K_INL_H_
#else
#define ATTN_MODEL_QUANT_DOT_K_INL_H_
#endif

#include "attn/aligned.hpp"
#include "model/matmul_ops.hpp"
#include "model/quant_blocks-inl.h"
#include "model/quant_dot-inl.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <hwy/highway.h>
#include <vector>

HWY_BEFORE_NAMESPACE();
#ifdef ATTN_QDOT_VNNI_PASS // quant_dot-inl.h's VNNI pass of the AVX2 and AVX3 targets
namespace attn::model::detail::HWY_NAMESPACE::vnni {
#else
namespace attn::model::detail::HWY_NAMESPACE {
#endif
namespace {

constexpr std::size_t kSuperK = 256;

/// One super-block's codes and factors, in element order.
struct KBlock {
    std::array<std::uint8_t, kSuperK> u{}; ///< the unsigned codes
    std::array<std::int32_t, 16> sc{};     ///< per sub-block (8 of them for Q4_K, Q5_K)
    std::array<std::int32_t, 16> c{};      ///< per 16 activations: the factor of bsum
    float d = 0.0F;
    float dmin = 0.0F; ///< Q4_K, Q5_K
};

/// Elements per sub-block (one scale): 16 for Q6_K, 32 for Q4_K and Q5_K.
std::size_t k_sub(std::uint32_t type) {
    return type == t_q6_k ? 16 : 32;
}

std::size_t k_block_bytes(std::uint32_t type) {
    return type == t_q4_k ? 144 : type == t_q5_k ? 176 : 210;
}

/// Q4_K and Q5_K (the layout block_q45_k reads): d, dmin, 12 bytes of 6-bit scales and
/// mins, (Q5_K) 32 bytes of fifth bits, 128 bytes of nibbles: each 64 elements are 32
/// low nibbles then 32 high ones. `codes` false: the factors only.
void unpack_q45_k(bool five, const std::uint8_t* w, const float* f16, KBlock& out, bool codes) {
    out.d = f16_at(f16, w);
    out.dmin = f16_at(f16, w + 2);
    const std::uint8_t* qh = w + 16;
    const std::uint8_t* ql = w + (five ? 48 : 16);
    for (int j = 0; j < 8; ++j) {
        int sc = 0;
        int mn = 0;
        scale_min_k4(j, w + 4, sc, mn);
        const auto sj = static_cast<std::size_t>(j);
        out.sc[sj] = sc;
        out.c[2 * sj] = mn;
        out.c[2 * sj + 1] = mn;
        if (!codes) {
            continue;
        }
        const int shift = 4 * (j % 2);
        const std::uint8_t* q = ql + 32 * (sj / 2);
        for (std::size_t l = 0; l < 32; ++l) {
            int v = (q[l] >> shift) & 0xF;
            if (five) {
                v |= ((qh[l] >> j) & 1) << 4;
            }
            out.u[32 * sj + l] = static_cast<std::uint8_t>(v);
        }
    }
}

/// Q6_K's codes of one half (128 elements): four runs of 32 from ql's low, ql's next 32
/// low, then their high nibbles, with the four bit pairs of qh.
void unpack_q6_k_half(const std::uint8_t* w, std::size_t half, KBlock& out) {
    const std::uint8_t* ql = w + 64 * half;
    const std::uint8_t* qh = w + 128 + 32 * half;
    for (std::size_t run = 0; run < 4; ++run) {
        const std::size_t lshift = 4 * (run / 2);
        const std::size_t hshift = 2 * run;
        for (std::size_t l = 0; l < 32; ++l) {
            const int lo = (ql[l + 32 * (run % 2)] >> lshift) & 0xF;
            const int hi = (qh[l] >> hshift) & 3;
            out.u[128 * half + 32 * run + l] = static_cast<std::uint8_t>(lo | (hi << 4));
        }
    }
}

/// Q6_K (the layout block_q6_k reads): 128 bytes of low nibbles, 64 of high pairs, 16
/// int8 scales, d; the weight is d · sc · (u − 32). `codes` false: the factors only.
void unpack_q6_k(const std::uint8_t* w, const float* f16, KBlock& out, bool codes) {
    out.d = f16_at(f16, w + 208);
    for (std::size_t g = 0; g < 16; ++g) {
        const int byte = w[192 + g]; // int8, two's complement
        out.sc[g] = byte < 128 ? byte : byte - 256;
        out.c[g] = 32 * out.sc[g];
    }
    for (std::size_t half = 0; codes && half < 2; ++half) {
        unpack_q6_k_half(w, half, out);
    }
}

void unpack_k(
    std::uint32_t type, const std::uint8_t* w, const float* f16, KBlock& out, bool codes = true) {
    if (type == t_q6_k) {
        unpack_q6_k(w, f16, out, codes);
    } else {
        unpack_q45_k(type == t_q5_k, w, f16, out, codes);
    }
}

/// One super-block's step of the float chain: the scalar form of every target's.
float k_step(std::uint32_t type,
             float d,
             float dmin,
             float dx,
             std::int32_t isum,
             std::int32_t corr,
             float acc) {
    if (type == t_q6_k) {
        return std::fma(d * dx, static_cast<float>(isum - corr), acc);
    }
    acc = std::fma(d * dx, static_cast<float>(isum), acc);
    return std::fma(-(dmin * dx), static_cast<float>(corr), acc);
}

/// y[n, m] for one pair: the portable loop, the definition every target computes.
[[maybe_unused]] float
dot_pair_k(const DotQ8Args& a, std::size_t n, std::size_t m, const float* f16) {
    const std::size_t bb = k_block_bytes(a.type);
    const std::size_t sub = k_sub(a.type);
    KBlock kb;
    float acc = 0.0F;
    for (std::size_t b = 0; b < a.blocks; ++b) {
        unpack_k(a.type, a.w_rows[m] + b * bb, f16, kb);
        const std::size_t at = n * a.blocks + b;
        const std::int8_t* x = a.qx + at * kSuperK;
        const std::int32_t* bsum = a.sx + at * 16;
        std::int32_t isum = 0;
        for (std::size_t j = 0; j < kSuperK / sub; ++j) {
            std::int32_t s = 0;
            for (std::size_t l = j * sub; l < (j + 1) * sub; ++l) {
                s += kb.u[l] * x[l];
            }
            isum += kb.sc[j] * s;
        }
        std::int32_t corr = 0;
        for (std::size_t g = 0; g < 16; ++g) {
            corr += kb.c[g] * bsum[g];
        }
        acc = k_step(a.type, kb.d, kb.dmin, a.dx[at], isum, corr, acc);
    }
    return acc;
}

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define ATTN_HAVE_DOT_K_TILE 1
#if ATTN_QDOT_VNNI == 512
// AVX512_VNNI on top of the target's set, in place of HWY_BEFORE_NAMESPACE's attribute
// (quant_dot-inl.h says why).
HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR ",avx512vnni")
#elif ATTN_QDOT_VNNI == 256
HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR ",avxvnni")
#endif

/// A panel packed: per group of kLanes weight rows and super-block, the codes [64 steps,
/// kLanes, 4], each sub-block's scale [16, kLanes] (VNNI: int32; otherwise the int16
/// scale in both halves of the lane, for _mm256_madd_epi16), the correction factors as
/// int16 pairs (c_2i, c_2i+1) [8, kLanes], and d, dmin [kLanes]. Lanes past the rows: 0.
struct PackK {
    AlignedVector<std::uint8_t> u;
    AlignedVector<std::int32_t> sc;
    AlignedVector<std::int32_t> c;
    AlignedVector<float> d;
    AlignedVector<float> dmin;
};

/// One super-block's codes, 4 a word (unpack_k's, 4 bytes at a time), to dst + step ·
/// kLanes · 4 for the 64 steps of 4 k. Per type, so the loops hold no branch and read
/// each source word once: Q4_K and Q5_K's 32 bytes of nibbles at 32p give sub-blocks 2p
/// (low nibbles, steps 16p ..) and 2p + 1 (high nibbles, steps 16p + 8 ..), Q5_K's fifth
/// bits at 16 (bit j of each byte for sub-block j); Q6_K's half h reads ql at 64h and
/// 64h + 32 and qh at 128 + 32h, its four runs of 32 (steps 32h + 8·run ..) the low and
/// then the high nibbles of the two, with qh's bit pairs 2·run.
template <std::uint32_t Type> void pack_codes_k_as(const std::uint8_t* w, std::uint8_t* dst) {
    constexpr std::uint32_t nib = 0x0F0F0F0FU;
    const auto put = [dst](std::size_t step, std::uint32_t v) {
        std::memcpy(dst + step * kLanes * 4, &v, 4);
    };
    if constexpr (Type == t_q6_k) {
        for (std::size_t half = 0; half < 2; ++half) {
            for (std::size_t i = 0; i < 8; ++i) {
                const std::uint32_t ql0 = u32_at(w + 64 * half + 4 * i);
                const std::uint32_t ql1 = u32_at(w + 64 * half + 32 + 4 * i);
                const std::uint32_t qh = u32_at(w + 128 + 32 * half + 4 * i);
                const auto bits = [qh](std::uint32_t run) {
                    return ((qh >> (2U * run)) & 0x03030303U) << 4U;
                };
                put(32 * half + i, (ql0 & nib) | bits(0));
                put(32 * half + 8 + i, (ql1 & nib) | bits(1));
                put(32 * half + 16 + i, ((ql0 >> 4U) & nib) | bits(2));
                put(32 * half + 24 + i, ((ql1 >> 4U) & nib) | bits(3));
            }
        }
    } else {
        constexpr bool five = Type == t_q5_k;
        const std::uint8_t* ql = w + (five ? 48 : 16);
        for (std::uint32_t p = 0; p < 4; ++p) {
            for (std::size_t i = 0; i < 8; ++i) {
                const std::uint32_t x = u32_at(ql + 32 * p + 4 * i);
                std::uint32_t lo = x & nib;
                std::uint32_t hi = (x >> 4U) & nib;
                if constexpr (five) {
                    const std::uint32_t h = u32_at(w + 16 + 4 * i);
                    lo |= ((h >> (2U * p)) & 0x01010101U) << 4U;
                    hi |= ((h >> (2U * p + 1U)) & 0x01010101U) << 4U;
                }
                put(16 * p + i, lo);
                put(16 * p + 8 + i, hi);
            }
        }
    }
}

void pack_codes_k(std::uint32_t type, const std::uint8_t* w, std::uint8_t* dst) {
    if (type == t_q4_k) {
        pack_codes_k_as<t_q4_k>(w, dst);
    } else if (type == t_q5_k) {
        pack_codes_k_as<t_q5_k>(w, dst);
    } else {
        pack_codes_k_as<t_q6_k>(w, dst);
    }
}

void pack_panel_k(const DotQ8Args& a, const float* f16, PackK& p) {
    const std::size_t bb = k_block_bytes(a.type);
    const std::size_t gbs = (a.m + kLanes - 1) / kLanes * a.blocks;
    p.u.assign(gbs * kSuperK * kLanes, 0);
    p.sc.assign(gbs * 16 * kLanes, 0);
    p.c.assign(gbs * 8 * kLanes, 0);
    p.d.assign(gbs * kLanes, 0.0F);
    p.dmin.assign(gbs * kLanes, 0.0F);
    KBlock kb;
    for (std::size_t m = 0; m < a.m; ++m) {
        const std::size_t l = m % kLanes;
        for (std::size_t b = 0; b < a.blocks; ++b) {
            const std::uint8_t* w = a.w_rows[m] + b * bb;
            unpack_k(a.type, w, f16, kb, false);
            const std::size_t gb = m / kLanes * a.blocks + b;
            pack_codes_k(a.type, w, p.u.data() + gb * kSuperK * kLanes + l * 4);
            for (std::size_t j = 0; j < 16; ++j) {
#if ATTN_QDOT_VNNI
                p.sc[(gb * 16 + j) * kLanes + l] = kb.sc[j];
#else
                p.sc[(gb * 16 + j) * kLanes + l] = pair16(kb.sc[j], kb.sc[j]);
#endif
            }
            for (std::size_t i = 0; i < 8; ++i) {
                p.c[(gb * 8 + i) * kLanes + l] = pair16(kb.c[2 * i], kb.c[2 * i + 1]);
            }
            p.d[gb * kLanes + l] = kb.d;
            p.dmin[gb * kLanes + l] = kb.dmin;
        }
    }
}

#if ATTN_QDOT_VNNI == 512
inline VecI k_zero() {
    return _mm512_setzero_si512();
}
inline VecI k_load(const void* p) {
    return _mm512_loadu_si512(p);
}
/// s += Σ of 4 products u · x a lane (exact).
inline VecI k_dot4(VecI s, VecI u, VecI x) {
    return _mm512_dpbusd_epi32(s, u, x);
}
/// A sub-block's sum times its scale, int32 lanes.
inline VecI k_scaled(VecI s, VecI sc) {
    return _mm512_mullo_epi32(s, sc);
}
/// s += a0 b0 + a1 b1 per lane of int16 pairs (VNNI's dpwssd).
inline VecI k_dot2(VecI s, VecI a, VecI b) {
    return _mm512_dpwssd_epi32(s, a, b);
}
inline VecI k_add(VecI a, VecI b) {
    return _mm512_add_epi32(a, b);
}
inline VecI k_sub_i(VecI a, VecI b) {
    return _mm512_sub_epi32(a, b);
}
inline VecI k_set1(std::int32_t v) {
    return _mm512_set1_epi32(v);
}
inline VecF k_zero_f() {
    return _mm512_setzero_ps();
}
inline VecF k_loadf(const float* p) {
    return _mm512_loadu_ps(p);
}
inline VecF k_mulf(VecF a, float b) {
    return _mm512_mul_ps(a, _mm512_set1_ps(b));
}
inline VecF k_fma(VecF a, VecI i, VecF acc) {
    return _mm512_fmadd_ps(a, _mm512_cvtepi32_ps(i), acc);
}
inline VecF k_fnma(VecF a, VecI i, VecF acc) {
    return _mm512_fnmadd_ps(a, _mm512_cvtepi32_ps(i), acc);
}
inline void k_storef(float* p, VecF v) {
    _mm512_store_ps(p, v);
}
#else
inline VecI k_zero() {
    return _mm256_setzero_si256();
}
inline VecI k_load(const void* p) {
    return _mm256_loadu_si256(static_cast<const VecI*>(p));
}
#if ATTN_QDOT_VNNI == 256
/// s += Σ of 4 products u · x a lane (exact), as on AVX3_DL.
inline VecI k_dot4(VecI s, VecI u, VecI x) {
    return _mm256_dpbusd_avx_epi32(s, u, x);
}
/// A sub-block's sum times its scale, int32 lanes.
inline VecI k_scaled(VecI s, VecI sc) {
    return _mm256_mullo_epi32(s, sc);
}
/// s += a0 b0 + a1 b1 per lane of int16 pairs (dpwssd).
inline VecI k_dot2(VecI s, VecI a, VecI b) {
    return _mm256_dpwssd_avx_epi32(s, a, b);
}
#else
/// s += the pair sums u0 x0 + u1 x1 (<= 2 · 63 · 128, exact in int16) of 4 products.
inline VecI k_dot4(VecI s, VecI u, VecI x) {
    return _mm256_add_epi16(s, _mm256_maddubs_epi16(u, x));
}
/// The int16 pair sums times the scale (in both halves of the lane), added in int32.
inline VecI k_scaled(VecI s, VecI sc) {
    return _mm256_madd_epi16(s, sc);
}
/// s += a0 b0 + a1 b1 per lane of int16 pairs.
inline VecI k_dot2(VecI s, VecI a, VecI b) {
    return _mm256_add_epi32(s, _mm256_madd_epi16(a, b));
}
#endif
inline VecI k_add(VecI a, VecI b) {
    return _mm256_add_epi32(a, b);
}
inline VecI k_sub_i(VecI a, VecI b) {
    return _mm256_sub_epi32(a, b);
}
inline VecI k_set1(std::int32_t v) {
    return _mm256_set1_epi32(v);
}
inline VecF k_zero_f() {
    return _mm256_setzero_ps();
}
inline VecF k_loadf(const float* p) {
    return _mm256_loadu_ps(p);
}
inline VecF k_mulf(VecF a, float b) {
    return _mm256_mul_ps(a, _mm256_set1_ps(b));
}
inline VecF k_fma(VecF a, VecI i, VecF acc) {
    return _mm256_fmadd_ps(a, _mm256_cvtepi32_ps(i), acc);
}
inline VecF k_fnma(VecF a, VecI i, VecF acc) {
    return _mm256_fnmadd_ps(a, _mm256_cvtepi32_ps(i), acc);
}
inline void k_storef(float* p, VecF v) {
    _mm256_store_ps(p, v);
}
#endif

/// Steps of 4 k whose u · x sums add up in k_dot4's accumulator before k_scaled. VNNI: a
/// whole sub-block (int32 lanes). maddubs: as many as cannot overflow its int16 pair sums,
/// c · 2 · u_max · 128 <= 32767 (Q4_K: 8 · 3840, Q5_K: 4 · 7936, Q6_K: 2 · 16128).
constexpr std::size_t k_chunk(std::uint32_t type) {
#if ATTN_QDOT_VNNI
    return type == t_q6_k ? 4 : 8;
#else
    return type == t_q4_k ? 8 : type == t_q5_k ? 4 : 2;
#endif
}

/// isum for R activation rows and one group's super-block (codes `pk`, scales `sc`) of a
/// type with sub-blocks of `Sub` and `Chunk` steps summed before k_scaled: compile-time, so
/// the loops unroll.
template <std::size_t R, std::size_t Sub, std::size_t Chunk>
void k_isums(const std::uint8_t* pk,
             const std::int32_t* sc,
             const std::int8_t* const* x,
             VecI* isum) {
    constexpr std::size_t steps = Sub / 4;
    for (std::size_t r = 0; r < R; ++r) {
        isum[r] = k_zero();
    }
    for (std::size_t j = 0; j < kSuperK / Sub; ++j) {
        const VecI scale = k_load(sc + j * kLanes);
        for (std::size_t s0 = j * steps; s0 < (j + 1) * steps; s0 += Chunk) {
            VecI s[R];
            for (std::size_t r = 0; r < R; ++r) {
                s[r] = k_zero();
            }
            for (std::size_t step = s0; step < s0 + Chunk; ++step) {
                const VecI u = k_load(pk + step * kLanes * 4);
                for (std::size_t r = 0; r < R; ++r) {
                    s[r] = k_dot4(s[r], u, broadcast4(x[r] + step * 4));
                }
            }
            for (std::size_t r = 0; r < R; ++r) {
                isum[r] = k_add(isum[r], k_scaled(s[r], scale));
            }
        }
    }
}

/// corr = Σ_g c_g · bsum_g for one activation row: `c` the group's 8 int16 pairs of factors,
/// `pairs` the row's 8 int16 pairs of sums (Q8Rows::pair).
inline VecI k_corr(const std::int32_t* c, const std::int32_t* pairs) {
    VecI corr = k_zero();
    for (std::size_t i = 0; i < 8; ++i) {
        corr = k_dot2(corr, k_load(c + i * kLanes), k_set1(pairs[i]));
    }
    return corr;
}

/// y[n0 .. n0 + R, the group's kLanes rows of W] from the packed panel.
template <std::uint32_t Type, std::size_t R>
void dot_tile_k(const DotQ8Args& a, std::size_t n0, std::size_t g, const PackK& p) {
    constexpr std::size_t sub = Type == t_q6_k ? 16 : 32;
    constexpr std::size_t chunk = std::min(sub / 4, k_chunk(Type));
    VecF acc[R];
    for (std::size_t r = 0; r < R; ++r) {
        acc[r] = k_zero_f();
    }
    for (std::size_t b = 0; b < a.blocks; ++b) {
        const std::size_t gb = g * a.blocks + b;
        const std::int8_t* x[R];
        for (std::size_t r = 0; r < R; ++r) {
            x[r] = a.qx + ((n0 + r) * a.blocks + b) * kSuperK;
        }
        VecI isum[R];
        k_isums<R, sub, chunk>(
            p.u.data() + gb * kSuperK * kLanes, p.sc.data() + gb * 16 * kLanes, x, isum);
        const VecF d = k_loadf(p.d.data() + gb * kLanes);
        const VecF dmin = k_loadf(p.dmin.data() + gb * kLanes);
        for (std::size_t r = 0; r < R; ++r) {
            const std::size_t at = (n0 + r) * a.blocks + b;
            const VecI corr = k_corr(p.c.data() + gb * 8 * kLanes, a.px + at * 8);
            // k_step, lane-wise
            if constexpr (Type == t_q6_k) {
                acc[r] = k_fma(k_mulf(d, a.dx[at]), k_sub_i(isum[r], corr), acc[r]);
            } else {
                acc[r] = k_fma(k_mulf(d, a.dx[at]), isum[r], acc[r]);
                acc[r] = k_fnma(k_mulf(dmin, a.dx[at]), corr, acc[r]);
            }
        }
    }
    const std::size_t m0 = g * kLanes;
    const std::size_t lanes = std::min(kLanes, a.m - m0);
    alignas(64) float out[kLanes];
    for (std::size_t r = 0; r < R; ++r) {
        k_storef(out, acc[r]);
        std::memcpy(a.y + (n0 + r) * a.ldy + m0, out, lanes * sizeof(float));
    }
}

/// Every pair of one type through the packed panel: tiles of kPackRows rows, then the last.
template <std::uint32_t Type> void dot_tiles_k(const DotQ8Args& a, const PackK& p) {
    const std::size_t groups = (a.m + kLanes - 1) / kLanes;
    std::size_t n0 = 0;
    for (; n0 + kPackRows <= a.n; n0 += kPackRows) {
        for (std::size_t g = 0; g < groups; ++g) {
            dot_tile_k<Type, kPackRows>(a, n0, g, p);
        }
    }
    for (; n0 < a.n; ++n0) {
        for (std::size_t g = 0; g < groups; ++g) {
            dot_tile_k<Type, 1>(a, n0, g, p);
        }
    }
}

/// Every pair through the packed panel.
void dot_packed_k(const DotQ8Args& a, const float* f16) {
    // A panel of its own per call, not a thread_local reused: with the reused one, GCC 12
    // compiled the maddubs tiles differently (more spills) and Q4_K's ran at 0.75x
    // (bench_matmul, the AVX2 target without VNNI, Zen 5, 2026-12-02). Zeroing a new
    // panel is a small part of its products.
    PackK p;
    pack_panel_k(a, f16, p);
    if (a.type == t_q4_k) {
        dot_tiles_k<t_q4_k>(a, p);
    } else if (a.type == t_q5_k) {
        dot_tiles_k<t_q5_k>(a, p);
    } else {
        dot_tiles_k<t_q6_k>(a, p);
    }
}
#if ATTN_QDOT_VNNI
HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR) // HWY_BEFORE_NAMESPACE's again, for HWY_AFTER_NAMESPACE
#endif
#endif

/// y[n, m] for every n < a.n, m < a.m: the packed tiles where this target has them, the
/// portable pair loop elsewhere (the same values).
void dot_q8_k(const DotQ8Args& a) {
    const float* f16 = f16_table();
#ifdef ATTN_HAVE_DOT_K_TILE
    dot_packed_k(a, f16);
#undef ATTN_HAVE_DOT_K_TILE
#else
    for (std::size_t n = 0; n < a.n; ++n) {
        for (std::size_t m = 0; m < a.m; ++m) {
            a.y[n * a.ldy + m] = dot_pair_k(a, n, m, f16);
        }
    }
#endif
}

} // namespace
} // namespace attn::model::detail::HWY_NAMESPACE (::vnni)
HWY_AFTER_NAMESPACE();

#endif // include guard

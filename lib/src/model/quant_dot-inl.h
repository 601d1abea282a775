// The integer products of Q8_0 and Q4_0 weights with activations rounded to Q8_0 (ggml's
// quantize_row_q8_0; q8_activations.hpp), for one SIMD target: y[n, m] = Σ_b
// fma(dw[m, b] · dx[n, b], isum[n, m, b], ·) along the 32-blocks b in order, where isum is
// the exact int32 sum of the block's 32 products of int8 weights (Q4_0: nibble − 8) and
// int8 activations. The int32 sums are exact on every target and the float accumulation is
// the same chain of single-rounded FMAs on every target, so y is bit-identical across
// targets (and thread counts). x86 AVX2 and AVX-512 targets pack each panel of W so that
// a vector holds 8 (AVX2, AVX3: _mm256_maddubs_epi16) or 16 (AVX3_DL: AVX-512 VNNI's
// _mm512_dpbusd_epi32) weight rows' block sums, one per lane, and multiply 4 activation
// rows per tile; every other target takes the portable loop, one pair at a time. The AVX2
// and AVX3 targets are compiled a second time with the VNNI instructions a CPU may have
// beyond them (AVX2: AVX-VNNI's _mm256_dpbusd_avx_epi32, Alder Lake and later, Zen 5; AVX3:
// AVX512_VNNI, Cascade Lake, Cooper Lake): matmul_hwy.cpp includes this file again with
// ATTN_QDOT_VNNI_PASS defined, into the nested namespace vnni, and matmul_q8.cpp calls that
// pass where the CPU has them.
// Included per target by matmul_hwy.cpp (Highway's -inl.h convention). It checks nothing:
// matmul_q8.cpp has.
#if defined(ATTN_MODEL_QUANT_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_MODEL_QUANT_DOT_INL_H_
#undef ATTN_MODEL_QUANT_DOT_INL_H_
#else
#define ATTN_MODEL_QUANT_DOT_INL_H_
#endif

#include "attn/aligned.hpp"
#include "model/matmul_ops.hpp"
#include "model/quant_blocks-inl.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <hwy/highway.h>
#include <vector>

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

// The packed tiles' integer instruction: ATTN_QDOT_VNNI 512 (AVX3_DL, and AVX3's VNNI pass:
// AVX512_VNNI), 256 (the AVX2 target's VNNI pass: AVX-VNNI), 0 (AVX2, AVX3: maddubs).
// quant_dot_k-inl.h reads it too.
#undef ATTN_QDOT_VNNI
#if HWY_TARGET == HWY_AVX3_DL || (HWY_TARGET == HWY_AVX3 && defined(ATTN_QDOT_VNNI_PASS))
#define ATTN_QDOT_VNNI 512
#elif HWY_TARGET == HWY_AVX2 && defined(ATTN_QDOT_VNNI_PASS)
#define ATTN_QDOT_VNNI 256
#else
#define ATTN_QDOT_VNNI 0
#endif

HWY_BEFORE_NAMESPACE();
#ifdef ATTN_QDOT_VNNI_PASS
namespace attn::model::detail::HWY_NAMESPACE::vnni {
#else
namespace attn::model::detail::HWY_NAMESPACE {
#endif
namespace {

/// The exact int32 sum of one block's 32 products (portable; every target).
std::int32_t block_isum(std::uint32_t type, const std::uint8_t* w, const std::int8_t* q) {
    std::int32_t sum = 0;
    if (type == t_q4_0) {
        const std::uint8_t* qs = w + 2;
        for (std::size_t j = 0; j < 16; ++j) {
            sum += ((qs[j] & 0x0F) - 8) * q[j] + ((qs[j] >> 4) - 8) * q[j + 16];
        }
    } else { // Q8_0
        const auto* qs = reinterpret_cast<const std::int8_t*>(w + 2);
        for (std::size_t j = 0; j < 32; ++j) {
            sum += qs[j] * q[j];
        }
    }
    return sum;
}

/// y[n, m] for one pair: the portable loop, the definition every target computes.
[[maybe_unused]] float
dot_pair(const DotQ8Args& a, std::size_t n, std::size_t m, const float* f16) {
    const std::size_t bb = a.type == t_q4_0 ? 18 : 34;
    const std::uint8_t* w = a.w_rows[m];
    const std::int8_t* q = a.qx + n * a.blocks * 32;
    const float* dx = a.dx + n * a.blocks;
    float acc = 0.0F;
    for (std::size_t b = 0; b < a.blocks; ++b) {
        const float scale = f16_at(f16, w + b * bb) * dx[b];
        const auto isum = static_cast<float>(block_isum(a.type, w + b * bb, q + b * 32));
        acc = std::fma(scale, isum, acc);
    }
    return acc;
}

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define ATTN_HAVE_DOT_TILE 1
#if ATTN_QDOT_VNNI == 512
// Highway 1.0's AVX3_DL compiles for AVX-VNNI (256 bits, which Ice Lake and Zen 4 lack)
// but checks the CPU for AVX512_VNNI, which this code uses: enabled here on top. In place
// of HWY_BEFORE_NAMESPACE's attribute, not nested in it: clang 14 keeps the outer one of
// two pushed target attributes (GCC the inner one), so the set is the target's plus VNNI.
HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR ",avx512vnni")
#elif ATTN_QDOT_VNNI == 256
// The AVX2 target's set plus AVX-VNNI, likewise; only this pass's functions have it.
HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR ",avxvnni")
#endif

// The weights of a panel are packed once per call so that one vector holds kLanes weight
// rows (m) side by side, 4 consecutive k of each per 32-bit lane: a block is 8 vectors,
// one per step of 4 k, and one activation row's 4 bytes of that step, broadcast, multiply
// all kLanes rows at once. The block sums then come out one m per lane, exact in int32,
// with no horizontal reduction. Lanes past the panel's rows hold stale bytes
// whose sums are never stored.
#if ATTN_QDOT_VNNI == 512
// AVX-512 VNNI: _mm512_dpbusd_epi32, unsigned weight bytes × signed activations, 4
// products summed into each int32 lane. Q4_0 keeps its nibbles u (w = u − 8), Q8_0 is
// stored as u = w + 128; Σ w x = Σ u x − bias · Σ x.
constexpr std::size_t kLanes = 16;
using VecI = __m512i;
using VecF = __m512;
#else
// AVX-VNNI: the same on 256 bits (_mm256_dpbusd_avx_epi32).
// AVX2 (and AVX3 without VNNI, on 256 bits): _mm256_maddubs_epi16 (u8 × i8, pairs summed
// into int16). Q4_0's nibbles (u <= 15): 8 steps of pair sums (<= 2 · 15 · 127 each) add
// up in int16 without overflow (<= 30480), widened once per block. Q8_0 stored signed:
// |w| × sign(x, w) per step (pairs <= 2 · 128 · 127), widened per step.
constexpr std::size_t kLanes = 8;
using VecI = __m256i;
using VecF = __m256;
#endif
constexpr std::size_t kPackRows = 4; // activation rows per tile

/// The bias of the packed bytes: Σ w x = Σ u x − bias · Σ x.
std::int32_t pack_bias(std::uint32_t type) {
#if ATTN_QDOT_VNNI
    return type == t_q4_0 ? 8 : 128;
#else
    return type == t_q4_0 ? 8 : 0;
#endif
}

/// Packs the panel: `pack` [groups, blocks, 8 steps, kLanes, 4] bytes, `dw` [groups,
/// blocks, kLanes] the weights' scales.
void pack_panel(const DotQ8Args& a,
                const float* f16,
                AlignedVector<std::uint8_t>& pack,
                AlignedVector<float>& dw) {
    const std::size_t bb = a.type == t_q4_0 ? 18 : 34;
    const std::size_t groups = (a.m + kLanes - 1) / kLanes;
    const std::uint32_t flip = pack_bias(a.type) == 128 ? 0x80808080U : 0U;
    // The buffers are reused (dot_packed's, per thread): grown, never refilled. Lanes past
    // the rows keep whatever they held: their sums are never stored (dot_tile stores the
    // rows' lanes only), and no lane's sum reads another's.
    hold(pack, groups * a.blocks * 32 * kLanes);
    hold(dw, groups * a.blocks * kLanes);
    for (std::size_t m = 0; m < a.m; ++m) {
        const std::size_t g = m / kLanes;
        const std::size_t l = m % kLanes;
        for (std::size_t b = 0; b < a.blocks; ++b) {
            const std::uint8_t* w = a.w_rows[m] + b * bb;
            std::uint8_t* dst = pack.data() + (g * a.blocks + b) * 32 * kLanes + l * 4;
            // Each step's 4 bytes as one little-endian word, stored straight to its lane:
            // Q4_0's step s < 4 is the low nibbles of qs[4s .. 4s + 3], step s + 4 their high
            // nibbles (the word shifted by 4, each byte's high nibble masked into its low
            // bits); Q8_0's step s is its bytes 4s .. 4s + 3. (Bytes assembled one at a time
            // through the stack and read back as words stalled store forwarding: a fifth of
            // a Q4_0 forward's samples.)
            const auto put = [dst](std::size_t step, std::uint32_t v) {
                std::memcpy(dst + step * kLanes * 4, &v, 4);
            };
            const auto word = [w](std::size_t step) { return u32_at(w + 2 + 4 * step); };
            if (a.type == t_q4_0) {
                for (std::size_t s = 0; s < 4; ++s) {
                    put(s, word(s) & 0x0F0F0F0FU);
                    put(s + 4, (word(s) >> 4U) & 0x0F0F0F0FU);
                }
            } else {
                for (std::size_t s = 0; s < 8; ++s) {
                    put(s, word(s) ^ flip);
                }
            }
            dw[(g * a.blocks + b) * kLanes + l] = f16_at(f16, w);
        }
    }
}

inline VecI broadcast4(const std::int8_t* p) {
    std::int32_t v = 0;
    std::memcpy(&v, p, 4);
#if ATTN_QDOT_VNNI == 512
    return _mm512_set1_epi32(v);
#else
    return _mm256_set1_epi32(v);
#endif
}

/// The exact Σ u x of one block for kLanes weight rows and each of R activation rows
/// (`x[r]` the rows' blocks): each step's weight vector loaded (and, for signed Q8_0 on
/// AVX2, made absolute) once for the R rows.
template <std::size_t R>
inline void
block_sums(std::uint32_t type, const std::uint8_t* pk, const std::int8_t* const* x, VecI* out) {
#if ATTN_QDOT_VNNI == 512
    (void)type;
    for (std::size_t r = 0; r < R; ++r) {
        out[r] = _mm512_setzero_si512();
    }
    for (std::size_t step = 0; step < 8; ++step) {
        const VecI w = _mm512_loadu_si512(pk + step * 64);
        for (std::size_t r = 0; r < R; ++r) {
            out[r] = _mm512_dpbusd_epi32(out[r], w, broadcast4(x[r] + step * 4));
        }
    }
#elif ATTN_QDOT_VNNI == 256
    (void)type;
    for (std::size_t r = 0; r < R; ++r) {
        out[r] = _mm256_setzero_si256();
    }
    for (std::size_t step = 0; step < 8; ++step) {
        const VecI w = _mm256_loadu_si256(reinterpret_cast<const VecI*>(pk + step * 32));
        for (std::size_t r = 0; r < R; ++r) {
            out[r] = _mm256_dpbusd_avx_epi32(out[r], w, broadcast4(x[r] + step * 4));
        }
    }
#else
    const VecI ones = _mm256_set1_epi16(1);
    for (std::size_t r = 0; r < R; ++r) {
        out[r] = _mm256_setzero_si256();
    }
    // The step loops are unrolled by 4 (Q4_0) and 2 (Q8_0), not whole: unrolled by 8, GCC
    // may reassociate the sums (integer adds) into a tree over all steps and rows and spill
    // the pair sums to the stack. The 1B forward on the maddubs path, one Xeon thread: Q4_0
    // 5.7 s (7.2 s whole, 5.8 s by 2, 6.15 s by 1), Q8_0 8.1-8.2 s (8.4-8.7 s whole, within
    // 2 % by 1 or 4).
    if (type == t_q4_0) {
#pragma GCC unroll 4
        for (std::size_t step = 0; step < 8; ++step) {
            const VecI u = _mm256_loadu_si256(reinterpret_cast<const VecI*>(pk + step * 32));
            for (std::size_t r = 0; r < R; ++r) { // int16 sums: see kLanes
                out[r] =
                    _mm256_add_epi16(out[r], _mm256_maddubs_epi16(u, broadcast4(x[r] + step * 4)));
            }
        }
        for (std::size_t r = 0; r < R; ++r) {
            out[r] = _mm256_madd_epi16(out[r], ones);
        }
        return;
    }
#pragma GCC unroll 2
    for (std::size_t step = 0; step < 8; ++step) {
        const VecI w = _mm256_loadu_si256(reinterpret_cast<const VecI*>(pk + step * 32));
        const VecI abs_w = _mm256_sign_epi8(w, w);
        for (std::size_t r = 0; r < R; ++r) {
            const VecI p =
                _mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(broadcast4(x[r] + step * 4), w));
            out[r] = _mm256_add_epi32(out[r], _mm256_madd_epi16(p, ones));
        }
    }
#endif
}

/// acc = fma(dw · dx, float(isum − bias · Σx), acc): dot_pair's step, lane-wise, with
/// `correction` = bias · Σx of the block (dot_packed's; read only with kBiased).
template <bool kBiased>
inline VecF
scaled_step(VecI isum, const std::int32_t* correction, const float* dw, float dx, VecF acc) {
#if ATTN_QDOT_VNNI == 512
    const VecI s = kBiased ? _mm512_sub_epi32(isum, _mm512_set1_epi32(*correction)) : isum;
    const VecF scale = _mm512_mul_ps(_mm512_loadu_ps(dw), _mm512_set1_ps(dx));
    return _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(s), acc);
#else
    const VecI s = kBiased ? _mm256_sub_epi32(isum, _mm256_set1_epi32(*correction)) : isum;
    const VecF scale = _mm256_mul_ps(_mm256_loadu_ps(dw), _mm256_set1_ps(dx));
    return _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(s), acc);
#endif
}

/// y[n0 .. n0 + R, the group's kLanes rows of W] from the packed panel; `corrections`
/// [n, blocks] bias · Σx where kBiased (pack_bias(a.type) is not 0), else unused.
template <std::size_t R, bool kBiased>
void dot_tile(const DotQ8Args& a,
              std::size_t n0,
              std::size_t g,
              const std::uint8_t* pack,
              const float* dw,
              const std::int32_t* corrections) {
    const std::size_t row = a.blocks * 32;
    VecF acc[R];
    for (std::size_t r = 0; r < R; ++r) {
#if ATTN_QDOT_VNNI == 512
        acc[r] = _mm512_setzero_ps();
#else
        acc[r] = _mm256_setzero_ps();
#endif
    }
    for (std::size_t b = 0; b < a.blocks; ++b) {
        const std::size_t gb = g * a.blocks + b;
        const std::int8_t* x[R];
        for (std::size_t r = 0; r < R; ++r) {
            x[r] = a.qx + (n0 + r) * row + b * 32;
        }
        VecI isum[R];
        block_sums<R>(a.type, pack + gb * 32 * kLanes, x, isum);
        for (std::size_t r = 0; r < R; ++r) {
            const std::size_t at = (n0 + r) * a.blocks + b;
            // (no offset from the null `corrections` of an unbiased type: undefined)
            const std::int32_t* correction = kBiased ? corrections + at : nullptr;
            acc[r] = scaled_step<kBiased>(isum[r], correction, dw + gb * kLanes, a.dx[at], acc[r]);
        }
    }
    const std::size_t m0 = g * kLanes;
    const std::size_t lanes = std::min(kLanes, a.m - m0);
    alignas(64) float out[kLanes];
    for (std::size_t r = 0; r < R; ++r) {
#if ATTN_QDOT_VNNI == 512
        _mm512_store_ps(out, acc[r]);
#else
        _mm256_store_ps(out, acc[r]);
#endif
        std::memcpy(a.y + (n0 + r) * a.ldy + m0, out, lanes * sizeof(float));
    }
}

/// Every pair through the packed panel: tiles of kPackRows rows, then the last rows.
template <bool kBiased>
void dot_tiles(const DotQ8Args& a,
               const std::uint8_t* pack,
               const float* dw,
               const std::int32_t* corrections) {
    const std::size_t groups = (a.m + kLanes - 1) / kLanes;
    std::size_t n0 = 0;
    for (; n0 + kPackRows <= a.n; n0 += kPackRows) {
        for (std::size_t g = 0; g < groups; ++g) {
            dot_tile<kPackRows, kBiased>(a, n0, g, pack, dw, corrections);
        }
    }
    for (; n0 < a.n; ++n0) {
        for (std::size_t g = 0; g < groups; ++g) {
            dot_tile<1, kBiased>(a, n0, g, pack, dw, corrections);
        }
    }
}

/// The panel packed, the blocks' corrections bias · Σx computed once (n · blocks integers,
/// where the tiles would multiply and broadcast them once per weight group: a quarter of
/// a block step's operations on the 8-lane targets), then the tiles. Q8_0 on maddubs has
/// no bias (signed bytes) and skips the correction altogether.
void dot_packed(const DotQ8Args& a, const float* f16) {
    thread_local AlignedVector<std::uint8_t> pack;
    thread_local AlignedVector<float> dw;
    pack_panel(a, f16, pack, dw);
    const std::int32_t bias = pack_bias(a.type);
    if (bias == 0) {
        dot_tiles<false>(a, pack.data(), dw.data(), nullptr);
        return;
    }
    thread_local std::vector<std::int32_t> corrections; // grown, never refilled (as pack)
    hold(corrections, a.n * a.blocks);
    for (std::size_t i = 0; i < a.n * a.blocks; ++i) {
        corrections[i] = bias * a.sx[i];
    }
    dot_tiles<true>(a, pack.data(), dw.data(), corrections.data());
}
#if ATTN_QDOT_VNNI
HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR) // HWY_BEFORE_NAMESPACE's again, for HWY_AFTER_NAMESPACE
#endif
#endif

/// y[n, m] for every n < a.n, m < a.m: the packed tiles where this target has them, the
/// portable pair loop elsewhere (the same values).
void dot_q8(const DotQ8Args& a) {
    const float* f16 = f16_table();
#ifdef ATTN_HAVE_DOT_TILE
    dot_packed(a, f16);
#undef ATTN_HAVE_DOT_TILE
#else
    for (std::size_t n = 0; n < a.n; ++n) {
        for (std::size_t m = 0; m < a.m; ++m) {
            a.y[n * a.ldy + m] = dot_pair(a, n, m, f16);
        }
    }
#endif
}

} // namespace
} // namespace attn::model::detail::HWY_NAMESPACE (::vnni)
HWY_AFTER_NAMESPACE();

#endif // include guard

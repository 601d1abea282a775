// The pooling operations of the kernel operations for one SIMD target: the streaming
// kernel's long-view passes over a transposed score block (KernelOps::score_hits and
// KernelOps::pool_keys, used by kernel_pooled.cpp). Included per target by
// kernel_ops_hwy.cpp (Highway's -inl.h convention).
#if defined(ATTN_CORE_KERNEL_POOL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_CORE_KERNEL_POOL_INL_H_
#undef ATTN_CORE_KERNEL_POOL_INL_H_
#else
#define ATTN_CORE_KERNEL_POOL_INL_H_
#endif

#include "core/kernel_ops.hpp"
#include "core/kernel_simd-inl.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace attn::detail::HWY_NAMESPACE {
namespace {

/// score_hits' bits of one key row s: bit i where s[i] > bar[i].
HWY_INLINE std::uint64_t hit_bits(D d, const float* s, const float* bar) {
    const std::size_t lanes = hn::Lanes(d);
    std::uint64_t out = 0;
    for (std::size_t col = 0; col < kScoreColumns; col += lanes) {
        // One bit per lane, lane 0 lowest (StoreMaskBits' order); lanes past the block of a
        // ragged vector (scalable targets) are not hits.
        const std::size_t n = min_size(lanes, kScoreColumns - col);
        const auto above =
            hn::And(hn::Gt(load_part(d, s + col, n), load_part(d, bar + col, n)), hn::FirstN(d, n));
        std::uint8_t bits[HWY_MAX_BYTES / sizeof(float) / 8 + 1] = {};
        const std::size_t bytes = hn::StoreMaskBits(d, above, bits);
        // Byte by byte: a wider load of the bytes just stored would stall (no forwarding).
        for (std::size_t b = 0; b < bytes; ++b) {
            out |= std::uint64_t{bits[b]} << (col + 8 * b);
        }
    }
    return out;
}

void score_hits(const float* st, std::size_t kb, const float* bar, std::uint64_t* hits) {
    const D d;
    const std::size_t lanes = hn::Lanes(d);
    constexpr std::size_t kGroup = 8;
    std::size_t j = 0;
    if (kScoreColumns % lanes == 0) {
        // Most keys beat no row's bar once the rows have seen a few hundred: eight key rows'
        // max against the bar first (one branch for eight keys), each key's bits only where
        // some lane of that max is above. A NaN lane (its row's weights are NaN: dropped)
        // may hide that lane's hits, no other lane's.
        for (; j + kGroup <= kb; j += kGroup) {
            const float* s = st + j * kScoreStride;
            auto any = hn::Lt(hn::Zero(d), hn::Zero(d)); // all false
            for (std::size_t col = 0; col < kScoreColumns; col += lanes) {
                V m = hn::LoadU(d, s + col);
                for (std::size_t k = 1; k < kGroup; ++k) {
                    m = hn::Max(m, hn::LoadU(d, s + k * kScoreStride + col));
                }
                any = hn::Or(any, hn::Gt(m, hn::LoadU(d, bar + col)));
            }
            if (hn::AllFalse(d, any)) {
                std::fill_n(hits + j, kGroup, std::uint64_t{0});
                continue;
            }
            for (std::size_t k = 0; k < kGroup; ++k) {
                hits[j + k] = hit_bits(d, s + k * kScoreStride, bar);
            }
        }
    }
    for (; j < kb; ++j) {
        hits[j] = hit_bits(d, st + j * kScoreStride, bar);
    }
}

void pool_keys(const float* st, std::size_t n, const float* scale, float* max, float* sum) {
    const D d;
    const std::size_t lanes = hn::Lanes(d);
    for (std::size_t col = 0; col < kScoreColumns; col += lanes) {
        const std::size_t w = min_size(lanes, kScoreColumns - col);
        V mx = hn::Zero(d);
        V sm = hn::Zero(d);
        if (scale != nullptr) {
            const V f = load_part(d, scale + col, w);
            mx = hn::Mul(load_part(d, max + col, w), f);
            sm = hn::Mul(load_part(d, sum + col, w), f);
        }
        for (std::size_t j = 0; j < n; ++j) {
            const V p = load_part(d, st + j * kScoreStride + col, w);
            // p >= 0 or NaN: Max's NaN handling differs by target, the row is dropped anyway.
            mx = hn::Max(mx, p);
            sm = hn::Add(sm, p);
        }
        store_part(d, mx, max + col, w);
        store_part(d, sm, sum + col, w);
    }
}

void scale_columns(
    float* max, float* sum, std::size_t n, const std::uint32_t* block_of, const float* factor) {
    const D d;
    const std::size_t lanes = hn::Lanes(d);
    for (std::size_t x = 0; x < n; ++x) {
        const float* f = factor + static_cast<std::size_t>(block_of[x]) * kScoreColumns;
        float* mx = max + x * kScoreColumns;
        float* sm = sum + x * kScoreColumns;
        for (std::size_t col = 0; col < kScoreColumns; col += lanes) {
            const std::size_t w = min_size(lanes, kScoreColumns - col);
            const V fv = load_part(d, f + col, w);
            // A factor of 0 gives 0 even where a NaN row's p are NaN.
            const auto zero = hn::Eq(fv, hn::Zero(d));
            store_part(
                d, hn::IfThenZeroElse(zero, hn::Mul(load_part(d, mx + col, w), fv)), mx + col, w);
            store_part(
                d, hn::IfThenZeroElse(zero, hn::Mul(load_part(d, sm + col, w), fv)), sm + col, w);
        }
    }
}

} // namespace
} // namespace attn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // ATTN_CORE_KERNEL_POOL_INL_H_

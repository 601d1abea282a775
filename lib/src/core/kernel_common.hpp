// Index helpers both attention drivers share: the causal limit of a query row, the
// offset of a broadcast mask/bias row, and the query block that makes one task.
// Legend: B batch, H query heads, Lq queries, Lk keys.
#pragma once

#include "attn/attention.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace attn::detail {

/// QB: query rows per task. Fixed (never derived from the thread count) so results are
/// bit-identical for every thread count; 64 = one micro-kernel panel of 4 x 16 floats.
constexpr std::size_t kQueryBlock = 64;

/// How many leading keys query row i may see under the causal rule (all Lk if none).
inline std::size_t causal_visible(Causal causal, std::size_t i, std::size_t lq, std::size_t lk) {
    switch (causal) {
    case Causal::none:
        return lk;
    case Causal::top_left:
        return std::min(i + 1, lk);
    case Causal::bottom_right: {
        // j <= i + Lk - Lq  <=>  j < i + 1 + Lk - Lq, computed without unsigned wrap.
        const std::size_t end = i + 1 + lk;
        return end <= lq ? 0 : std::min(end - lq, lk);
    }
    }
    return lk;
}

/// Index of a broadcast [B|1, H|1, Lq, Lk] operand's row (b, h, i).
template <class T>
std::size_t pair_row_offset(const T& t, std::size_t b, std::size_t h, std::size_t i) {
    const auto& s = t.shape();
    const std::size_t bb = s[0] == 1 ? 0 : b;
    const std::size_t hh = s[1] == 1 ? 0 : h;
    return ((bb * s[1] + hh) * s[2] + i) * s[3];
}

/// Row b of a [B|1, 1, 1, Lk] key-padding mask, or null.
inline const std::uint8_t* padding_row(const Mask* pad, std::size_t b, std::size_t lk) {
    if (pad == nullptr) {
        return nullptr;
    }
    return pad->data() + (pad->shape()[0] == 1 ? 0 : b) * lk;
}

/// The diagonal offset s of the window and ALiBi: query i's diagonal key is i + s.
inline std::int64_t diagonal_offset(const AttentionSpec& spec, std::size_t lq, std::size_t lk) {
    const bool bottom_right =
        spec.causal == Causal::bottom_right || spec.align == Align::bottom_right;
    return bottom_right ? static_cast<std::int64_t>(lk) - static_cast<std::int64_t>(lq) : 0;
}

inline bool has_window(const AttentionSpec& spec) {
    return spec.window.left >= 0 || spec.window.right >= 0;
}

/// Whether key j lies in the window around diagonal key `diag` (= i + s).
inline bool window_sees(const Window& w, std::int64_t diag, std::size_t j) {
    const auto jj = static_cast<std::int64_t>(j);
    return (w.left < 0 || jj >= diag - w.left) && (w.right < 0 || jj <= diag + w.right);
}

/// ALiBi's bias for query row i (diagonal key diag = i + s) and key j: -slope·|j - diag|,
/// as FlashAttention's alibi_slopes and llama.cpp's ALiBi mask (for keys at or left of the
/// diagonal, the paper's causal slope·(j - diag)).
inline float alibi_bias(float slope, std::int64_t diag, std::size_t j) {
    const std::int64_t d = static_cast<std::int64_t>(j) - diag;
    return -slope * static_cast<float>(d < 0 ? -d : d);
}

/// Any per-score feature the vectorised softmax_row does not cover.
inline bool has_row_features(const AttentionSpec& spec) {
    return has_window(spec) || spec.softcap.has_value() || !spec.alibi_slopes.empty() ||
           !spec.sinks.empty() || spec.want_lse || spec.want_entropy || spec.want_argmax ||
           spec.top_k > 0;
}

} // namespace attn::detail

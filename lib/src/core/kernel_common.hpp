// Index helpers both attention drivers share: the causal limit of a query row, the
// offset of a broadcast mask/bias row, and the query block that makes one task.
// Legend: B batch, H query heads, Lq queries, Lk keys.
#pragma once

#include "attn/attention.hpp"

#include <algorithm>
#include <cstddef>

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

} // namespace attn::detail

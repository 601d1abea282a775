// Internal to attn_render: the vector loops of attn/render/cell_pass.hpp
// (cell_pass_hwy.cpp) and the one guess both they and ColorIndexer's scalar loop make.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attn::render::detail {

/// The colour index's guess for v: (v - lo) * per_bin in float, clamped to [0, 255] (NaN:
/// 0), truncated. Non-decreasing in v. The vector loops compute the same, lane by lane.
inline unsigned color_guess(float v, float lo, float per_bin) {
    const float x = (v - lo) * per_bin;
    return static_cast<unsigned>(x > 0.0F ? (x < 255.0F ? x : 255.0F) : 0.0F);
}

/// ColorIndexer::map's cells from the front of v[0, n) a whole vector at a time, for a
/// norm whose guess is never two bins off: the guess corrected against at_least[g] and
/// at_least[g + 1] (257 thresholds). Returns how many cells it did (the rest: fewer than a
/// vector).
std::size_t color_index_near(const float* v,
                             std::size_t n,
                             const float* at_least,
                             float lo,
                             float per_bin,
                             std::uint8_t* out);

} // namespace attn::render::detail

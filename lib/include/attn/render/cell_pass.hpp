// The passes over every float cell of a picture that its speed rests on: the colour range's
// least and greatest value, and each cell's colour index by the one rule
// (Colormap::colormap_index of ColorNorm), vectorized over cells with Highway (the best
// SIMD target the CPU runs) and exact for every float. No pooling, no pictures.
#pragma once

#include "attn/attention.hpp"
#include "attn/render/heatmap.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

namespace attn::render {

/// The least and greatest of the values a colour range counts among v[0, n) (finite ones;
/// with `log`, positive ones too; +inf / -inf when none) and whether any is NaN.
struct CellRange {
    float lo, hi;
    bool nan;
};
CellRange cell_range(const float* v, std::size_t n, bool log);

/// A row folded into running column maxima and counts, for max pooling: max[j] becomes
/// v[j] where v[j] > max[j] (NaN never wins, nor a zero over a zero), and count[j] grows
/// by one where v[j] is not NaN.
void fold_row_max(const float* v, std::size_t n, float* max, std::uint32_t* count);

/// Colormap::colormap_index(norm(v)) for float cells, the rule every picture colours by,
/// without a division per cell: on a linear scale the index is the number of the 255
/// thresholds (the least float whose index reaches 1, 2, ..., 255, found once by
/// bisection over that rule) at or below v, guessed by one multiplication and corrected
/// against the two thresholds beside the guess, so it is exact (a norm whose guess can be
/// off by more than one bin, a range narrow beside its distance from 0, asks the
/// thresholds cell by cell); a log scale asks the rule itself. NaN gives 0, as the rule.
class ColorIndexer {
  public:
    explicit ColorIndexer(const ColorNorm& norm);
    /// The indices of v[0, n) into out[0, n).
    void map(const float* v, std::size_t n, std::uint8_t* out) const;

  private:
    std::uint8_t slow(float v) const;
    ColorNorm norm_;
    bool linear_ = true;
    bool guess_within_one_ = false; ///< the guess is never more than one bin off
    float lo_ = 0.0F, per_bin_ = 0.0F;
    /// [b]: the least float whose index is >= b (1 <= b <= 255); [0] -inf and [256] NaN,
    /// which no comparison passes.
    std::array<float, 257> at_least_{};
};

/// Tests only: the SIMD target cell_range and ColorIndexer::map run on from now on (one
/// of attn::simd_supported(), or Simd::best).
void use_cell_simd(Simd simd);

} // namespace attn::render

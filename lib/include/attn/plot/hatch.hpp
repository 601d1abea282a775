// The cells a heatmap of weights read from a file hatches: what a keep-mask file blocks
// (read as the problem's "mask" field reads a keep-mask, asked through attn::Visibility),
// and optionally the exact zeros masking leaves. A problem's own blocked cells are
// blocked_cells (panels.hpp).
#pragma once

#include "attn/io/array.hpp"
#include "attn/plot/panels.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace attn::plot {

/// For each panel of `refs`, its [Lq, Lk] cells, 1 = hatched: where `mask` (nullptr: none)
/// blocks, and with `zeros` where the weight is exactly 0. `mask` is a keep-mask
/// (io::MaskConvention::keep: 0 = blocked, nonzero and NaN = kept) of [Lq, Lk], for every
/// panel, or of the weights' `shape` (`values`: their float32 values). Empty when there is
/// neither mask nor `zeros`.
/// Throws InputError::shape(what, ...) for a mask of another shape.
std::vector<std::vector<std::uint8_t>> hatched_cells(const std::vector<std::size_t>& shape,
                                                     std::span<const float> values,
                                                     const Dims& d,
                                                     const std::vector<PanelRef>& refs,
                                                     const io::Array* mask,
                                                     bool zeros,
                                                     const std::string& what);

} // namespace attn::plot

// The page `attn compare --html` writes: the grid of layers and heads coloured by js, the
// cells ranked, and per head (the most different first) A, B and |A - B| side by side in
// the interactive heatmap view (render::heatmap_html_bytes). Builds bytes; writes no files.
#pragma once

#include "attn/problem/attention_compare.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace attn::plot {

/// The two maps compared, as the comparison's layout reads them (borrowed).
struct CompareFigureInput {
    std::span<const float> a, b;
    problem::CompareLayout layout;
    std::vector<std::string> tokens; ///< labels of both axes; empty: indices
    std::string name_a, name_b;
};

/// The page: one self-contained HTML file (no network). Heads are shown most different
/// first, as many as keep the page's maps within 2^24 cells (at least one); batch row 0.
std::vector<std::uint8_t> compare_html(const problem::AttentionComparison& c,
                                       const CompareFigureInput& in,
                                       unsigned threads = 0);

} // namespace attn::plot

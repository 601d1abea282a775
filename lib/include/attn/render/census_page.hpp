// The head census as one self-contained HTML page: the layers × heads grid coloured by a
// statistic chosen in the page, a table of every head sortable by any column, and for the
// head clicked, its attention on the text where that statistic was highest (one heatmap
// view page per text, html.hpp's, opened in a frame at that head's panel). The page, script
// and style are embedded at build time (lib/src/render/html/census.*). Builds text; runs
// no model and writes no files (plot/census_view does both).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attn::render {

/// Where a head's view is: page `page` of CensusPageInput::pages, its panel `panel`.
struct CensusViewRef {
    std::int32_t page = -1; ///< -1: no text had a qualifying row
    std::int32_t panel = 0;
    double value = 0.0; ///< the statistic on that text
};

struct CensusPageInput {
    std::string title;
    std::size_t layers = 0, heads = 0;
    std::vector<std::string> stats;              ///< the statistics' names
    std::vector<std::vector<double>> means;      ///< [stat][layer · heads + head]; NaN: no row
    std::vector<std::vector<std::int64_t>> rows; ///< [stat][cell]
    std::vector<std::uint8_t> sink;              ///< [cell]
    double sink_threshold = 0.3;
    std::string default_stat;                     ///< the statistic the grid opens with
    std::vector<std::vector<CensusViewRef>> best; ///< [stat][cell]
    std::vector<std::string> page_titles;         ///< what each page's text is
    std::vector<std::vector<std::uint8_t>> pages; ///< heatmap_html_bytes pages
    std::string colormap = "viridis";
};

/// The page. Throws InputError for an unknown colormap or default statistic.
std::string census_page(const CensusPageInput& input);

} // namespace attn::render

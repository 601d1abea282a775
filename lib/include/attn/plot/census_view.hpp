// The head census's HTML page (`attn census --html`): the statistics of a census
// (problem/census.hpp), and for every head and statistic its attention on the text where
// that statistic was highest (problem::CensusBest): each such text is run through the
// model again with only those heads' weights kept, drawn as one heatmap view page
// (render/html.hpp), and the census page (render/census_page.hpp) opens a head's panel.
// Reads the model (through problem::solve_model_run); writes no files.
#pragma once

#include "attn/problem/census.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attn::plot {

struct CensusViewOptions {
    std::string title;        ///< empty: "head census: MODEL"
    std::string default_stat; ///< empty: induction with probes, else previous_token
    std::string colormap = "viridis";
    /// The weights one text's views may hold (cells of the heads shown on it).
    std::size_t max_cells = std::size_t{1} << 26;
};

/// The page's bytes. Throws InputError when a text's heads need more than max_cells
/// (naming the text and how to stay under), or for an unknown statistic or colormap.
std::vector<std::uint8_t> census_html(const problem::Census& census,
                                      const problem::CensusBest& best,
                                      const problem::CensusRequest& request,
                                      const CensusViewOptions& options);

} // namespace attn::plot

// What `attn heatmap` and compute's --heatmap share besides their own flags: --font-size
// and --cols, the figure's bytes with their warnings printed, and writing them. Reading
// weights is attn_problem's (problem::read_weights); panels, labels, titles and encoding
// are attn_plot's (plot::file_figure, plot::result_figure, plot::encode_figure).
#pragma once

#include "attn/plot/encode.hpp"
#include "attn/render/heatmap.hpp"

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attn::app {

using plot::file_format;
using plot::FileFormat;

/// The figure encoded in `format` (plot::encode_figure). Warns (unless `quiet`) when token
/// labels had to be thinned and when no font has a glyph of a label.
std::vector<std::uint8_t> encode_figure(const render::HeatmapInput& in,
                                        const render::HeatmapOptions& o,
                                        FileFormat format,
                                        bool quiet);

/// Registers --font-size PT, --cols N and --view-top-k K (heatmap's and compute's) in
/// `group`.
void add_figure_options(CLI::App& cmd,
                        double& font_size,
                        std::size_t& cols,
                        std::size_t& view_top_k,
                        const char* group);

/// Writes atomically; refuses PNG bytes to a terminal.
void write_output(const std::string& path,
                  const std::vector<std::uint8_t>& bytes,
                  FileFormat format);

} // namespace attn::app

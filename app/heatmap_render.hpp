// The work of `attn heatmap` and of compute's --heatmap, apart from their flags: reading
// weights (NPY, .npz, a JSON array or a compute result document with its tokens), the
// figure's file format, warnings and writing it atomically. Panels, hatching and encoding
// are the library's (attn/plot/, shared with the Python module); the flags are
// cmd_heatmap.cpp's.
#pragma once

#include "attn/io/array.hpp"
#include "attn/plot/encode.hpp"
#include "attn/plot/panels.hpp"
#include "attn/problem/problem.hpp"
#include "attn/render/heatmap.hpp"

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace attn::app {

// The panels and the encoding are the library's (attn/plot/), shared with the Python module.
using plot::blocked_cells;
using plot::Dims;
using plot::dims_of;
using plot::FileFormat;
using plot::kAll;
using plot::make_input;
using plot::PanelData;
using plot::PanelRef;
using plot::pick_panels;
using plot::picked_suffix;

/// Weights as read, with the tokens a result document carried.
struct Loaded {
    io::Array weights; ///< its shape always; its values unless `view` holds them
    /// A regular .npy file read in place (mapped): its values, not copied into `weights`.
    std::shared_ptr<const io::NpyView> view;
    std::span<const float> values() const {
        return view ? view->values() : std::span<const float>(weights.values);
    }
    std::vector<std::string> query_tokens, key_tokens;
    std::vector<std::size_t> layers; ///< a stacked result's "layers": its leading axis
    std::string name;                ///< for messages and the default title
};

/// Reads WEIGHTS ("-" is stdin). Throws InputError naming the file.
Loaded load_weights(const std::string& path);

/// The format --format names, or the one the extension says. Throws InputError.
FileFormat file_format(const std::string& path, const std::string& format, const char* flag);

/// The figure encoded in `format` (plot::encode_figure). Warns (unless `quiet`) when token
/// labels had to be thinned and when no font has a glyph of a label.
std::vector<std::uint8_t> encode_figure(const render::HeatmapInput& in,
                                        const render::HeatmapOptions& o,
                                        FileFormat format,
                                        bool quiet);

/// Registers --font-size PT and --cols N (heatmap's and compute's) in `group`.
void add_figure_options(CLI::App& cmd, double& font_size, std::size_t& cols, const char* group);

/// Writes atomically; refuses PNG bytes to a terminal.
void write_output(const std::string& path,
                  const std::vector<std::uint8_t>& bytes,
                  FileFormat format);

} // namespace attn::app

// The work of `attn heatmap` and of compute's --heatmap, apart from their flags: reading
// weights (NPY, .npz, a JSON array or a compute result document with its tokens), picking
// panels (heads, batches), hatching what the problem blocks, encoding PNG/SVG/HTML and
// writing it atomically. The flags live in cmd_heatmap.cpp.
#pragma once

#include "attn/io/array.hpp"
#include "attn/problem/problem.hpp"
#include "attn/render/heatmap.hpp"

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attn::app {

inline constexpr std::size_t kMaxPanels = 64;
inline constexpr std::size_t kMaxModelPanels = 256; ///< layers x heads in the model view
inline constexpr std::int64_t kAll = -1;            ///< --head/--batch not given: every one

/// Weights as read, with the tokens a result document carried.
struct Loaded {
    io::Array weights;
    std::vector<std::string> query_tokens, key_tokens;
    std::vector<std::size_t> layers; ///< a stacked result's "layers": its leading axis
    std::string name;                ///< for messages and the default title
};

/// Reads WEIGHTS ("-" is stdin). Throws InputError naming the file.
Loaded load_weights(const std::string& path);

/// How the leading dims of a weights array read: [B?, H?, Lq, Lk].
struct Dims {
    std::size_t layers = 1, batches = 1, heads = 1, lq = 0, lk = 0;
    bool has_layers = false, has_batch = false, has_heads = false;
    std::vector<std::size_t> layer_ids; ///< the number of each layer (default 0, 1, ...)
};

/// Reads the shape of weights [Lq, Lk], [H|B, Lq, Lk], [B, H, Lq, Lk] or, with
/// `layer_ids` (the layer numbers of a stacked result's leading axis) or rank 5,
/// [layers, B, H, Lq, Lk].
Dims dims_of(const io::Array& w,
             const std::string& name,
             bool rank3_is_batch,
             std::vector<std::size_t> layer_ids = {});

/// One panel to draw: which (layer, b, h) and its title.
struct PanelRef {
    std::size_t l = 0, b = 0, h = 0;
    std::string title;

    /// The panel's first value in [layers, B, H, Lq, Lk].
    std::size_t offset(const Dims& d) const {
        return ((l * d.batches + b) * d.heads + h) * d.lq * d.lk;
    }
};

/// The panels --batch/--head pick (kAll: every one); at most kMaxPanels.
std::vector<PanelRef>
pick_panels(const Dims& d, std::int64_t batch, std::int64_t head, const std::string& name);

/// A suffix naming the single panel picked ("head 3"), for the default title.
std::string picked_suffix(const Dims& d, std::int64_t batch, std::int64_t head);

/// Panels' values gathered for the renderer (it borrows spans into these).
struct PanelData {
    std::vector<std::vector<float>> values;
    std::vector<std::vector<std::uint8_t>> masked;
};

/// The renderer's input for the picked panels (spans into `w` and `data`).
render::HeatmapInput
make_input(const io::Array& w, const Dims& d, const std::vector<PanelRef>& refs, PanelData& data);

enum class FileFormat { png, svg, html };

/// The format --format names, or the one the extension says. Throws InputError.
FileFormat file_format(const std::string& path, const std::string& format, const char* flag);

/// The figure encoded in `format`. Warns (unless `quiet`) when token labels had to be
/// thinned and when no font has a glyph of a label.
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

// The interactive heatmap as one self-contained HTML file: the page, script and style
// embedded at build time (lib/src/render/html/), and the data written into it: per-cell
// colour indices computed here with the PNG's own normalisation and colormap index rule
// (so a cell has the same RGB in the PNG and the page), masked/NaN states, the exact
// float32 weights when the map is small enough, tokens and the colormap tables. The page
// needs no network: each panel's data is zlib-compressed, base64 in its own element, and
// inflated by the browser's DecompressionStream when the panel is first shown; pooled
// thumbnails of every panel open at once. Builds bytes; writes no files.
#pragma once

#include "attn/render/heatmap.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attn::render {

struct HtmlLimits {
    /// Cells (all panels) one page may hold: 16 heads of 4096 x 4096, or a model view of
    /// 12 layers x 12 heads at 1024 tokens (151 M) with room to spare. The page decodes one
    /// panel at a time, so this bounds the file's size, not the browser's memory.
    std::size_t max_cells = std::size_t{1} << 28;
    /// Up to this many cells the page also holds every weight as float32 (hover shows
    /// the exact value); above, hover shows the 8-bit colour bin the value falls in.
    std::size_t max_exact_cells = std::size_t{1} << 22;
};

/// The page for `input` drawn with `options` (colormap, vmin/vmax, scale, clip, pool for
/// the overview, title, decimals). The colour range is fixed from all cells at full
/// resolution, as prepare_heatmap() does. Throws InputError as prepare_heatmap() does,
/// and when the input has more cells than `limits.max_cells` (one line naming the options
/// head and batch, and a pooled PNG).
std::string heatmap_html(const HeatmapInput& input,
                         const HeatmapOptions& options,
                         const HtmlLimits& limits = {});

/// heatmap_html() as bytes, built with one copy of the page: the input is read in two
/// passes (the colour range, then the cells), each panel released after each
/// (HeatmapInput::release); panels are coloured, pooled into their thumbnails and
/// compressed a panel a task on `options.threads` threads, and appended in panel order as
/// they finish (a thread never waits for another's panel), so beside the page only the
/// panels in progress (one per thread) are held uncompressed, and the bytes are the same
/// for any thread count.
std::vector<std::uint8_t> heatmap_html_bytes(const HeatmapInput& input,
                                             const HeatmapOptions& options,
                                             const HtmlLimits& limits = {});

} // namespace attn::render

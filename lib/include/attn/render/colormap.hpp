// Colormaps: matplotlib's own 256-entry tables (viridis, magma, inferno, plasma, cividis,
// and the LinearSegmented Blues and Greys sampled at 256 points), looked up with
// matplotlib's rule, plus the text colour that stays readable on a cell (seaborn's rule).
// Tables only: normalisation (linear/log, vmin/vmax) lives in heatmap.hpp.
#pragma once

#include "attn/render/image.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::render {

/// 256 colours, entry 0 for the low end.
using ColormapTable = std::array<Rgb, 256>;

/// A named table, possibly reversed ("viridis_r").
struct Colormap {
    std::string name; ///< canonical lower-case name, e.g. "viridis_r"
    const ColormapTable* table = nullptr;
    bool reversed = false;

    /// Entry i (0..255) after reversal.
    Rgb entry(std::size_t i) const { return (*table)[reversed ? 255 - i : i]; }
    /// The colour of a normalised value t: matplotlib's index floor(t·256), with t = 1
    /// mapping to 255 and values outside [0, 1] clamped to the end colours.
    Rgb operator()(double t) const { return entry(colormap_index(t)); }

    /// matplotlib's lookup index for a normalised value (NaN gives 0).
    static std::size_t colormap_index(double t);
};

/// The colormap names we know, in the order of the docs: viridis, magma, inferno,
/// plasma, cividis, blues, greys. Each also exists reversed with a "_r" suffix.
const std::vector<std::string>& colormap_names();

/// Looks a colormap up by name, case-insensitively ("Blues" == "blues"), with an
/// optional "_r" suffix for the reversed map. Empty when the name is unknown.
std::optional<Colormap> find_colormap(std::string_view name);

/// WCAG relative luminance of an sRGB colour, in [0, 1].
double relative_luminance(Rgb c);

/// The annotation colour for text drawn on a cell of colour `cell`: near-black (#262626)
/// on light cells (luminance > 0.408), white on dark ones, as seaborn's heatmap does.
Rgb contrast_text_color(Rgb cell);

} // namespace attn::render

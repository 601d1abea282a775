// A figure as a flat list of primitives in pixel coordinates (cell grids, filled
// rectangles, text), and its two back-ends: a raster Image and an SVG document. The
// heatmap layout builds one Figure, so the PNG and the SVG show the same thing.
// No file I/O: PNG bytes for embedded SVG images come from a caller-supplied encoder.
#pragma once

#include "attn/render/image.hpp"
#include "attn/render/text.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::render {

/// How a grid cell is drawn: its colour, hatched "masked", or hatched "bad" (NaN).
enum class CellState : std::uint8_t { value = 0, masked = 1, bad = 2 };

/// Colours of hatched cells (masked or NaN): a light background with dark diagonals.
inline constexpr Rgb kHatchBackground{242, 242, 242};
inline constexpr Rgb kHatchLine{150, 150, 150};

/// rows x cols equal cells filling `box`, row-major from the top-left.
struct FigureGrid {
    std::string id; ///< "panel-0", "colorbar", ... (the SVG group id)
    Box box;
    std::size_t rows = 0, cols = 0;
    std::vector<Rgb> colors;       ///< rows·cols
    std::vector<CellState> states; ///< empty (all values) or rows·cols
};

struct FigureRect {
    Box box;
    Rgb color;
};

/// Everything on a canvas, painted in order: background, grids, rects, texts.
struct Figure {
    int width = 0, height = 0;
    Rgb background{255, 255, 255};
    int hatch_period = 6; ///< pixels between the diagonals of hatched cells
    std::vector<FigureGrid> grids;
    std::vector<FigureRect> rects;
    std::vector<PlacedText> texts;
};

/// Paints a figure. A pixel belongs to the grid cell (and rect) its centre falls in.
Image rasterize(const Figure& figure);

/// Encodes an Image as PNG (render::encode_png); used to embed large grids in SVG.
using PngEncoder = std::function<std::vector<std::uint8_t>(const Image&)>;

/// The figure as a standalone SVG 1.1 document (UTF-8). Grids of at most
/// `max_rect_cells` cells become one <rect> per cell (class "cell", in a <g> whose id is
/// the grid's id); larger grids become one embedded PNG <image> with pixelated scaling
/// when `encode_png` is given (else rects regardless). Text is <text> in DejaVu Sans
/// with the same positions, so it stays crisp and selectable.
std::string figure_svg(const Figure& figure,
                       const PngEncoder& encode_png = {},
                       std::size_t max_rect_cells = 16384);

/// Text for XML/HTML content and attribute values: & < > " escaped.
std::string xml_escape(std::string_view s);

/// Standard base64 (RFC 4648, with padding).
std::string base64_encode(std::span<const std::uint8_t> bytes);

} // namespace attn::render

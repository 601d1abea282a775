// Text with the embedded DejaVu Sans (compiled into the binary at build time, so no font
// file is needed at run time), rasterised by stb_truetype with kerning and quarter-pixel
// positioning, with a fallback font for the glyphs DejaVu lacks (CJK, ...) whose bytes the
// caller supplies (the app reads them from a fixed list of Debian package paths:
// attn/io/fallback_font.hpp; stb_truetype is not safe on untrusted fonts). Measures and
// draws into an Image; it never opens a file.
#pragma once

#include "attn/render/image.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::render {

/// Where the given point sits on the text's baseline.
enum class Anchor { start, middle, end };

/// Vertical metrics of the embedded font at a size in pixels (per em), all positive.
struct FontMetrics {
    double ascent = 0.0;     ///< baseline to the top of the tallest glyphs
    double descent = 0.0;    ///< baseline to the bottom of descenders
    double cap_height = 0.0; ///< baseline to the top of capitals and digits
};

/// The bytes of the embedded TrueType font (DejaVu Sans unless ATTN_FONT_FILE says other).
std::span<const unsigned char> embedded_font();

/// The family name to use for the same font in SVG.
inline constexpr const char* kFontFamily = "DejaVu Sans";

/// Where the fallback font's bytes come from: called at most once, when a string first
/// has a code point the embedded font lacks; nothing = no fallback. Setting a source
/// forgets the previous fallback and the missing glyphs recorded.
using FallbackFontSource = std::function<std::optional<std::vector<unsigned char>>()>;
void set_fallback_font_source(FallbackFontSource source);

/// Code points measured or drawn so far that neither font has (drawn as the embedded
/// font's missing-glyph box), in increasing order.
std::vector<char32_t> missing_glyphs();

/// Metrics at `size_px` pixels per em.
FontMetrics font_metrics(double size_px);

/// Advance width in pixels of a UTF-8 string (invalid bytes count as U+FFFD), with kerning.
double text_width(std::string_view utf8, double size_px);

/// UTF-8 text and where it goes. (x, y) is a point on the baseline, placed at the start,
/// middle or end of the text as `anchor` says. `vertical` rotates the text 90°
/// counter-clockwise (reading bottom to top, as matplotlib's rotation=90): the baseline
/// then runs upwards through x and the glyphs' tops point left.
struct PlacedText {
    std::string text;
    double x = 0.0, y = 0.0; ///< on the baseline, at the anchor
    double size = 10.0;      ///< pixels per em
    Rgb color;
    Anchor anchor = Anchor::start;
    bool vertical = false;
};

/// Draws the text. Pixels outside the image are skipped.
void draw_text(Image& image, const PlacedText& text);

/// The same, with the placement spelled out.
inline void draw_text(Image& image,
                      std::string_view utf8,
                      double x,
                      double y,
                      double size_px,
                      Rgb color,
                      Anchor anchor = Anchor::start,
                      bool vertical = false) {
    draw_text(image, PlacedText{std::string(utf8), x, y, size_px, color, anchor, vertical});
}

/// The box the text occupies: its advance width along the baseline, from the font's
/// ascent above it to its descent below it (turned with vertical text).
Box text_extent(const PlacedText& text);

/// `utf8` cut to at most `max_chars` code points, the last one replaced by "…" when cut.
std::string truncate_text(std::string_view utf8, std::size_t max_chars);

/// Number of code points in a UTF-8 string.
std::size_t text_length(std::string_view utf8);

} // namespace attn::render

// A heatmap encoded as the bytes of a file: PNG (attn_render's pixels through io's PNG
// encoder), SVG or the self-contained interactive HTML view, and the warnings a front end
// shows about it (thinned labels, glyphs no font has). Writes nothing.
#pragma once

#include "attn/render/heatmap.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attn::plot {

enum class FileFormat { png, svg, html };

/// The format `format` names ("png", "svg", "html"), else the one `path`'s extension
/// gives (.png, .svg, .html/.htm, any case); PNG for "-" (stdout) and for a device or FIFO
/// without an extension. `flag` names the path in the message ("-o"). Throws InputError.
FileFormat file_format(const std::string& path, const std::string& format, const char* flag);

/// The format named "png", "svg" or "html" (the option `format`); InputError naming the
/// option for anything else.
FileFormat format_named(const std::string& name);

/// A figure's bytes and what a front end should warn about (one line each, without a
/// "warning:" prefix).
struct Encoded {
    std::vector<std::uint8_t> bytes;
    std::vector<std::string> warnings;
};

/// The figure encoded in `format`. Glyphs DejaVu lacks come from a Debian font package
/// (io/fallback_font.hpp), read when first needed. Throws InputError as
/// render::heatmap_figure() does.
Encoded
encode_figure(const render::HeatmapInput& in, const render::HeatmapOptions& o, FileFormat format);

} // namespace attn::plot

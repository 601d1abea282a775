// A heatmap's bytes in PNG, SVG or HTML, and the warnings about them (see
// attn/plot/encode.hpp).
#include "attn/plot/encode.hpp"

#include "attn/error.hpp"
#include "attn/io/atomic_file.hpp"
#include "attn/io/fallback_font.hpp"
#include "attn/io/path_name.hpp"
#include "attn/render/html.hpp"
#include "attn/render/png.hpp"
#include "attn/render/text.hpp"

#include <cstdio>

namespace attn::plot {

namespace {

/// One warning for every code point no font could draw (they show as boxes), or "".
std::string missing_glyphs_warning() {
    const std::vector<char32_t> missing = render::missing_glyphs();
    if (missing.empty()) {
        return {};
    }
    char first[16];
    std::snprintf(first, sizeof first, "U+%04X", static_cast<unsigned>(missing.front()));
    return std::string("labels: no font has a glyph for ") + first +
           (missing.size() > 1 ? " (and " + std::to_string(missing.size() - 1) + " more)" : "") +
           ": drawn as boxes (fonts: the built-in DejaVu Sans, then the first of " +
           io::fallback_font_paths().front() + " (fonts-wqy-microhei), ... that is installed)";
}

} // namespace

FileFormat format_named(const std::string& name) {
    if (name != "png" && name != "svg" && name != "html") {
        throw InputError(option_name("format") + ": expected \"png\", \"svg\" or \"html\", got \"" +
                         name + "\"");
    }
    return name == "png" ? FileFormat::png : name == "svg" ? FileFormat::svg : FileFormat::html;
}

FileFormat file_format(const std::string& path, const std::string& format, const char* flag) {
    if (!format.empty()) {
        return format_named(format);
    }
    const std::string ext = io::lower_extension(path);
    if (path == "-" || (ext.empty() && io::written_in_place(path))) {
        return FileFormat::png; // stdout, /dev/null, a FIFO
    }
    if (ext == ".png") {
        return FileFormat::png;
    }
    if (ext == ".svg") {
        return FileFormat::svg;
    }
    if (ext == ".html" || ext == ".htm") {
        return FileFormat::html;
    }
    throw InputError(std::string(flag) + " " + path +
                     ": expected a .html, .png or .svg file name (or - for PNG on stdout)");
}

Encoded
encode_figure(const render::HeatmapInput& in, const render::HeatmapOptions& o, FileFormat format) {
    // Glyphs DejaVu lacks come from a Debian font package, read when first needed.
    static const bool fallback_set =
        (render::set_fallback_font_source(&io::read_fallback_font), true);
    (void)fallback_set;
    Encoded out;
    if (format == FileFormat::html) {
        out.bytes = render::heatmap_html_bytes(in, o);
    } else {
        const render::HeatmapFigure hf = render::heatmap_figure(in, o);
        out.warnings = hf.label_notes;
        if (format == FileFormat::png) {
            out.bytes = render::encode_png(render::rasterize(hf.figure), o.threads);
        } else {
            const std::string svg = render::figure_svg(hf.figure, [&o](const render::Image& i) {
                return render::encode_png(i, o.threads);
            });
            out.bytes.assign(svg.begin(), svg.end());
        }
    }
    if (std::string w = missing_glyphs_warning(); !w.empty()) {
        out.warnings.push_back(std::move(w));
    }
    return out;
}

} // namespace attn::plot

// The two back-ends of a Figure: rasterising into an Image (pixel-centre coverage, so
// integer boxes give exact cells) and writing SVG (rects per cell, or one embedded PNG
// for big grids, as matplotlib's SVG backend does for images).
#include "attn/render/figure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace attn::render {

namespace {

/// Pixels whose centres fall in [x0, x0 + w): [first, last).
std::pair<int, int> pixel_span(double x0, double w, int limit) {
    const int first = std::max(0, static_cast<int>(std::ceil(x0 - 0.5)));
    const int last = std::min(limit, static_cast<int>(std::ceil(x0 + w - 0.5)));
    return {first, std::max(first, last)};
}

bool on_hatch_line(int x, int y, int period) {
    const int thick = std::max(1, period / 6);
    return (x + y) % period < thick;
}

/// Cell index of each pixel along one axis of a grid.
std::vector<std::size_t> cell_of_pixel(int first, int last, double x0, double w, std::size_t n) {
    std::vector<std::size_t> idx;
    idx.reserve(static_cast<std::size_t>(last - first));
    for (int p = first; p < last; ++p) {
        const double t = (static_cast<double>(p) + 0.5 - x0) / w * static_cast<double>(n);
        const auto c = static_cast<std::size_t>(std::max(0.0, std::floor(t)));
        idx.push_back(std::min(c, n - 1));
    }
    return idx;
}

void paint_grid(Image& img, const FigureGrid& g, int hatch_period) {
    if (g.rows == 0 || g.cols == 0) {
        return;
    }
    const auto [x_first, x_last] = pixel_span(g.box.x, g.box.w, img.width);
    const auto [y_first, y_last] = pixel_span(g.box.y, g.box.h, img.height);
    const auto cols = cell_of_pixel(x_first, x_last, g.box.x, g.box.w, g.cols);
    const auto rows = cell_of_pixel(y_first, y_last, g.box.y, g.box.h, g.rows);
    for (int y = y_first; y < y_last; ++y) {
        const std::size_t r = rows[static_cast<std::size_t>(y - y_first)];
        for (int x = x_first; x < x_last; ++x) {
            const std::size_t i = r * g.cols + cols[static_cast<std::size_t>(x - x_first)];
            if (!g.states.empty() && g.states[i] != CellState::value) {
                img.set(x, y, on_hatch_line(x, y, hatch_period) ? kHatchLine : kHatchBackground);
            } else {
                img.set(x, y, g.colors[i]);
            }
        }
    }
}

void paint_rect(Image& img, const FigureRect& r) {
    const auto [x_first, x_last] = pixel_span(r.box.x, r.box.w, img.width);
    const auto [y_first, y_last] = pixel_span(r.box.y, r.box.h, img.height);
    for (int y = y_first; y < y_last; ++y) {
        for (int x = x_first; x < x_last; ++x) {
            img.set(x, y, r.color);
        }
    }
}

/// A coordinate with at most 2 decimals and no trailing zeros.
std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    std::string s = buf;
    while (!s.empty() && s.back() == '0') {
        s.pop_back();
    }
    if (!s.empty() && s.back() == '.') {
        s.pop_back();
    }
    return s == "-0" ? "0" : s;
}

std::string hex(Rgb c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
    return buf;
}

std::string rect_attrs(const Box& b) {
    return "x=\"" + num(b.x) + "\" y=\"" + num(b.y) + "\" width=\"" + num(b.w) + "\" height=\"" +
           num(b.h) + "\"";
}

void svg_grid_rects(std::string& out, const FigureGrid& g) {
    const double cw = g.box.w / static_cast<double>(g.cols);
    const double ch = g.box.h / static_cast<double>(g.rows);
    for (std::size_t r = 0; r < g.rows; ++r) {
        for (std::size_t c = 0; c < g.cols; ++c) {
            const std::size_t i = r * g.cols + c;
            const Box cell{g.box.x + static_cast<double>(c) * cw,
                           g.box.y + static_cast<double>(r) * ch,
                           cw,
                           ch};
            const bool hatched = !g.states.empty() && g.states[i] != CellState::value;
            out += "<rect class=\"cell\" " + rect_attrs(cell) + " fill=\"" +
                   (hatched ? std::string("url(#hatch)") : hex(g.colors[i])) + "\"/>\n";
        }
    }
}

void svg_grid_image(std::string& out, const FigureGrid& g, const PngEncoder& encode_png) {
    Image cells(static_cast<int>(g.cols), static_cast<int>(g.rows));
    for (std::size_t r = 0; r < g.rows; ++r) {
        for (std::size_t c = 0; c < g.cols; ++c) {
            const std::size_t i = r * g.cols + c;
            const bool hatched = !g.states.empty() && g.states[i] != CellState::value;
            cells.set(
                static_cast<int>(c), static_cast<int>(r), hatched ? kHatchBackground : g.colors[i]);
        }
    }
    out += "<image " + rect_attrs(g.box) +
           " preserveAspectRatio=\"none\" image-rendering=\"optimizeSpeed\" "
           "style=\"image-rendering:pixelated\" xlink:href=\"data:image/png;base64," +
           base64_encode(encode_png(cells)) + "\"/>\n";
}

} // namespace

std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        default:
            // Control characters are not allowed in XML 1.0: drop them.
            if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') {
                out += c;
            }
        }
    }
    return out;
}

Image rasterize(const Figure& figure) {
    Image img(figure.width, figure.height, figure.background);
    for (const auto& g : figure.grids) {
        paint_grid(img, g, std::max(2, figure.hatch_period));
    }
    for (const auto& r : figure.rects) {
        paint_rect(img, r);
    }
    for (const auto& t : figure.texts) {
        draw_text(img, t);
    }
    return img;
}

std::string
figure_svg(const Figure& figure, const PngEncoder& encode_png, std::size_t max_rect_cells) {
    const std::string w = std::to_string(figure.width), h = std::to_string(figure.height);
    const int period = std::max(2, figure.hatch_period);
    const std::string p = std::to_string(period);
    const std::string pm = std::to_string(period - 1), pp = std::to_string(period + 1);
    std::string out;
    out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
    out += "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
           "version=\"1.1\" width=\"" +
           w + "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h + "\">\n";
    out += "<defs>\n<pattern id=\"hatch\" width=\"" + p + "\" height=\"" + p +
           "\" patternUnits=\"userSpaceOnUse\">\n<rect width=\"" + p + "\" height=\"" + p +
           "\" fill=\"" + hex(kHatchBackground) + "\"/>\n<path d=\"M0 " + p + " L" + p +
           " 0 M-1 1 L1 -1 M" + pm + " " + pp + " L" + pp + " " + pm + "\" stroke=\"" +
           hex(kHatchLine) + "\" stroke-width=\"1\"/>\n</pattern>\n</defs>\n";
    out += "<rect width=\"" + w + "\" height=\"" + h + "\" fill=\"" + hex(figure.background) +
           "\"/>\n";
    for (const auto& g : figure.grids) {
        if (g.rows == 0 || g.cols == 0) {
            continue;
        }
        out += "<g id=\"" + xml_escape(g.id) + "\" class=\"grid\" data-rows=\"" +
               std::to_string(g.rows) + "\" data-cols=\"" + std::to_string(g.cols) +
               "\" shape-rendering=\"crispEdges\">\n";
        if (g.rows * g.cols > max_rect_cells && encode_png) {
            svg_grid_image(out, g, encode_png);
        } else {
            svg_grid_rects(out, g);
        }
        out += "</g>\n";
    }
    out += "<g id=\"lines\" shape-rendering=\"crispEdges\">\n";
    for (const auto& r : figure.rects) {
        out += "<rect " + rect_attrs(r.box) + " fill=\"" + hex(r.color) + "\"/>\n";
    }
    out += "</g>\n<g id=\"text\" font-family=\"" + std::string(kFontFamily) +
           ", Verdana, sans-serif\">\n";
    for (const auto& t : figure.texts) {
        const char* anchor = t.anchor == Anchor::start    ? "start"
                             : t.anchor == Anchor::middle ? "middle"
                                                          : "end";
        out += "<text x=\"" + num(t.x) + "\" y=\"" + num(t.y) + "\" font-size=\"" + num(t.size) +
               "\" fill=\"" + hex(t.color) + "\"";
        if (t.anchor != Anchor::start) {
            out += std::string(" text-anchor=\"") + anchor + "\"";
        }
        if (t.vertical) {
            out += " transform=\"rotate(-90 " + num(t.x) + " " + num(t.y) + ")\"";
        }
        out += ">" + xml_escape(t.text) + "</text>\n";
    }
    out += "</g>\n</svg>\n";
    return out;
}

std::string base64_encode(std::span<const std::uint8_t> bytes) {
    static const char* const kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out(bytes.size() / 3 * 4, '\0');
    char* to = out.data();
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3, to += 4) {
        const unsigned v = (static_cast<unsigned>(bytes[i]) << 16) |
                           (static_cast<unsigned>(bytes[i + 1]) << 8) | bytes[i + 2];
        to[0] = kAlphabet[(v >> 18) & 63];
        to[1] = kAlphabet[(v >> 12) & 63];
        to[2] = kAlphabet[(v >> 6) & 63];
        to[3] = kAlphabet[v & 63];
    }
    if (i < bytes.size()) {
        unsigned v = static_cast<unsigned>(bytes[i]) << 16;
        if (i + 1 < bytes.size()) {
            v |= static_cast<unsigned>(bytes[i + 1]) << 8;
        }
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

} // namespace attn::render

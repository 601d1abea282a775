// The HTML view's data: colour indices, states and exact values packed, compressed and
// base64-encoded into the page template (lib/src/render/html/view.html) together with the
// script and style embedded beside it. No file I/O.
#include "attn/render/html.hpp"

#include "attn/error.hpp"
#include "attn/render/colormap.hpp"
#include "attn/render/figure.hpp"
#include "heatmap_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>
#include <zlib.h>

namespace attn::render {

namespace detail {
extern const char kHtmlPageBytes[], kHtmlScriptBytes[], kHtmlStyleBytes[];
extern const std::size_t kHtmlPageByteCount, kHtmlScriptByteCount, kHtmlStyleByteCount;
} // namespace detail

namespace {

/// "134,217,728"
std::string grouped(std::size_t n) {
    std::string s = std::to_string(n);
    for (std::ptrdiff_t i = static_cast<std::ptrdiff_t>(s.size()) - 3; i > 0; i -= 3) {
        s.insert(static_cast<std::size_t>(i), ",");
    }
    return s;
}

/// A JSON string literal that is also safe inside <script>: '<', '>', '&' escaped.
std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

std::string json_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

/// The colorbar's ticks as the PNG and SVG place them (colorbar_ticks: 0.2, 0.4, ... on a
/// linear scale, decades on a log one) for a bar `height` px tall with 10 px labels:
/// [[position 0..1 from the bottom, "label"], ...].
std::string json_colorbar_ticks(const ColorNorm& norm, double height) {
    const int max_ticks = std::clamp(static_cast<int>(height / 25.0), 2, 9);
    std::string out = "[";
    for (const auto& [v, label] : detail::colorbar_ticks(norm, max_ticks)) {
        out += (out.size() == 1 ? "[" : ",[") + json_number(std::clamp(norm(v), 0.0, 1.0)) + "," +
               json_string(label) + "]";
    }
    return out + "]";
}

std::string json_strings(const std::vector<std::string>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        out += (i == 0 ? "" : ",") + json_string(v[i]);
    }
    return out + "]";
}

/// zlib-wrapped deflate (what DecompressionStream("deflate") reads), then base64.
std::string packed(const std::vector<std::uint8_t>& bytes) {
    uLongf size = compressBound(static_cast<uLong>(bytes.size()));
    std::vector<std::uint8_t> z(size);
    // Level 1 for large maps: the attention weights' runs compress nearly as well, 5x faster.
    const int level = bytes.size() > (std::size_t{1} << 24) ? 1 : 6;
    if (compress2(z.data(), &size, bytes.data(), static_cast<uLong>(bytes.size()), level) != Z_OK) {
        throw SystemError("HTML view: zlib could not compress the weights");
    }
    z.resize(size);
    return base64_encode(z);
}

/// Replaces each "{{KEY}}" of the template with its value, scanning the template only.
std::string fill(std::string_view page,
                 const std::vector<std::pair<std::string, std::string>>& kv) {
    std::string out;
    std::size_t pos = 0;
    for (;;) {
        const std::size_t open = page.find("{{", pos);
        if (open == std::string_view::npos) {
            out.append(page.substr(pos));
            return out;
        }
        const std::size_t close = page.find("}}", open);
        ATTN_ASSERT(close != std::string_view::npos);
        out.append(page.substr(pos, open - pos));
        const std::string_view key = page.substr(open + 2, close - open - 2);
        const auto it =
            std::find_if(kv.begin(), kv.end(), [&](const auto& e) { return e.first == key; });
        ATTN_ASSERT(it != kv.end()); // every {{key}} of the template has a value
        if (it != kv.end()) {
            out += it->second;
        }
        pos = close + 2;
    }
}

std::string html_text(std::string_view s) {
    std::string out;
    for (const char c : s) {
        out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    }
    return out;
}

} // namespace

std::string
heatmap_html(const HeatmapInput& in, const HeatmapOptions& o, const HtmlLimits& limits) {
    const std::size_t plane = in.rows * in.cols;
    const std::size_t cells = plane * in.panels.size();
    if (cells > limits.max_cells) {
        throw InputError("HTML view: " + std::to_string(in.panels.size()) + " panels of " +
                         std::to_string(in.rows) + "x" + std::to_string(in.cols) + " = " +
                         grouped(cells) + " cells are too many for one page (at most " +
                         grouped(limits.max_cells) +
                         "); pick panels with --head N or --batch N, or draw a PNG (pooled "
                         "with --pool max|mean)");
    }
    // Full resolution: the colour range from every cell, as an unpooled PNG has it.
    const PreparedHeatmap m = prepare_heatmap(in, o, in.rows, in.cols);
    const Colormap cmap = *find_colormap(o.colormap);

    std::vector<std::uint8_t> index(cells);
    std::vector<std::uint8_t> state;
    if (m.any_masked || m.any_bad) {
        state.resize(cells);
    }
    for (std::size_t p = 0; p < in.panels.size(); ++p) {
        for (std::size_t k = 0; k < plane; ++k) {
            const std::size_t at = p * plane + k;
            index[at] = static_cast<std::uint8_t>(
                Colormap::colormap_index(m.norm(static_cast<double>(m.values[p][k]))));
            if (!state.empty()) {
                state[at] = static_cast<std::uint8_t>(m.states[p][k]);
            }
        }
    }
    std::string exact;
    if (cells <= limits.max_exact_cells) {
        std::vector<std::uint8_t> raw(cells * 4);
        for (std::size_t p = 0; p < in.panels.size(); ++p) {
            static_assert(sizeof(float) == 4);
            std::memcpy(raw.data() + p * plane * 4, in.panels[p].values.data(), plane * 4);
        }
        exact = packed(raw); // little-endian float32, as Float32Array reads it on x86/ARM
    }

    std::string tables = "{";
    for (const auto& name : colormap_names()) {
        const Colormap c = *find_colormap(name);
        std::vector<std::uint8_t> rgb;
        for (std::size_t i = 0; i < 256; ++i) {
            const Rgb e = (*c.table)[i];
            rgb.insert(rgb.end(), {e.r, e.g, e.b});
        }
        tables += (tables.size() > 1 ? "," : "") + json_string(name) + ":" +
                  json_string(base64_encode(rgb));
    }
    tables += "}";

    std::vector<std::string> titles;
    for (std::size_t p = 0; p < in.panels.size(); ++p) {
        titles.push_back(in.panels[p].title.empty() ? "panel " + std::to_string(p)
                                                    : in.panels[p].title);
    }
    const std::string cmap_base =
        cmap.reversed ? cmap.name.substr(0, cmap.name.size() - 2) : cmap.name;
    const std::string meta =
        std::string("{") + "\"title\":" + json_string(o.title) +
        ",\"gridCols\":" + std::to_string(in.grid_cols) + ",\"rows\":" + std::to_string(in.rows) +
        ",\"cols\":" + std::to_string(in.cols) + ",\"panels\":" + json_strings(titles) +
        ",\"rowLabels\":" + json_strings(in.row_labels) +
        ",\"colLabels\":" + json_strings(in.col_labels) + ",\"cmap\":" + json_string(cmap_base) +
        ",\"reversed\":" + (cmap.reversed ? "true" : "false") + ",\"tables\":" + tables +
        ",\"vmin\":" + json_number(m.norm.vmin) + ",\"vmax\":" + json_number(m.norm.vmax) +
        ",\"scale\":" + json_string(o.scale == ColorScale::log ? "log" : "linear") +
        ",\"ticks\":" + json_colorbar_ticks(m.norm, 240.0) +
        ",\"pool\":" + json_string(o.pool == PoolMode::mean ? "mean" : "max") +
        ",\"decimals\":" + std::to_string(o.decimals) + ",\"notes\":" + json_strings(m.notes) +
        ",\"exact\":" + (exact.empty() ? "false" : "true") +
        ",\"maxExactCells\":" + std::to_string(limits.max_exact_cells) +
        ",\"hasState\":" + (state.empty() ? "false" : "true") + "}";

    const std::string_view page(detail::kHtmlPageBytes, detail::kHtmlPageByteCount);
    return fill(page,
                {{"TITLE", html_text(o.title.empty() ? "attention weights" : o.title)},
                 {"STYLE", std::string(detail::kHtmlStyleBytes, detail::kHtmlStyleByteCount)},
                 {"SCRIPT", std::string(detail::kHtmlScriptBytes, detail::kHtmlScriptByteCount)},
                 {"META", meta},
                 {"INDEX", packed(index)},
                 {"STATE", state.empty() ? std::string() : packed(state)},
                 {"EXACT", exact}});
}

} // namespace attn::render

// The comparison page (attn/plot/compare_figure.hpp): a section of our own (the js grid as
// a table coloured by viridis, the ranked cells) put at the top of the heatmap view's page,
// whose panels are A, B and A - B (signed, on a diverging colormap) of the most different heads.
#include "attn/plot/compare_figure.hpp"

#include "attn/render/colormap.hpp"
#include "attn/render/figure.hpp"
#include "attn/render/html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace attn::plot {

namespace {

std::string g4(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", x);
    return buf;
}

/// "L1 H3", "H3" or "map [..]": a cell's name.
std::string cell_name(const problem::AttentionComparison& c, std::size_t x) {
    const std::vector<std::size_t> at = c.cell_index(x);
    if (at.size() == 2) {
        return "L" + std::to_string(at[0]) + " H" + std::to_string(at[1]);
    }
    return at.size() == 1 ? "H" + std::to_string(at[0]) : "map " + std::to_string(x);
}

/// The cells, most different (largest js) first; NaN last; ties in cell order.
std::vector<std::size_t> ranked(const problem::AttentionComparison& c) {
    std::vector<std::size_t> order(c.cells());
    std::iota(order.begin(), order.end(), std::size_t{0});
    const std::vector<double>& js = c.values[0];
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        const double a = std::isnan(js[x]) ? -1.0 : js[x];
        const double b = std::isnan(js[y]) ? -1.0 : js[y];
        return a > b;
    });
    return order;
}

/// The js grid as a table (rows: the leading axes, columns: heads) and the ranked list.
std::string grid_section(const problem::AttentionComparison& c, const CompareFigureInput& in) {
    const std::vector<double>& js = c.values[0];
    double top = 0.0;
    for (const double v : js) {
        top = std::isnan(v) ? top : std::max(top, v);
    }
    const render::Colormap cmap = *render::find_colormap("viridis");
    const std::size_t heads = c.grid.empty() ? 1 : c.grid.back();
    std::string s =
        "<section id=\"compare\" style=\"padding:8px\"><h2>A: " + render::xml_escape(in.name_a) +
        " &mdash; B: " + render::xml_escape(in.name_b) +
        "</h2><p>Jensen&ndash;Shannon divergence (nats) per layer (row) and head "
        "(column); darker = more alike. Hover a cell for every metric.</p>"
        "<table style=\"border-collapse:collapse\"><tr><th></th>";
    for (std::size_t h = 0; h < heads; ++h) {
        s += "<th>H" + std::to_string(h) + "</th>";
    }
    s += "</tr>";
    for (std::size_t x = 0; x < c.cells(); ++x) {
        if (x % heads == 0) {
            s += "<tr><th>L" + std::to_string(x / heads) + "</th>";
        }
        const render::Rgb rgb = cmap(top > 0.0 && !std::isnan(js[x]) ? js[x] / top : 0.0);
        const render::Rgb ink = render::contrast_text_color(rgb);
        char colour[64];
        std::snprintf(colour,
                      sizeof colour,
                      "background:#%02x%02x%02x;color:#%02x%02x%02x",
                      rgb.r,
                      rgb.g,
                      rgb.b,
                      ink.r,
                      ink.g,
                      ink.b);
        std::string title;
        for (std::size_t m = 0; m < problem::kCompareMetrics; ++m) {
            title += std::string(m == 0 ? "" : ", ") + problem::compare_metric_names()[m] + " " +
                     g4(c.values[m][x]);
        }
        s += "<td style=\"padding:2px 6px;" + std::string(colour) + "\" title=\"" +
             cell_name(c, x) + ": " + title + "\">" + g4(js[x]) + "</td>";
        if (x % heads == heads - 1) {
            s += "</tr>";
        }
    }
    s += "</table><h3>Most different</h3><ol>";
    const std::vector<std::size_t> order = ranked(c);
    for (std::size_t r = 0; r < std::min<std::size_t>(order.size(), 10); ++r) {
        const std::size_t x = order[r];
        s += "<li>" + cell_name(c, x) + ": js " + g4(c.values[0][x]) + ", tv " +
             g4(c.values[1][x]) + ", max_abs " + g4(c.values[2][x]) + ", top1 " +
             g4(c.values[3][x]) + ", topk " + g4(c.values[4][x]) + "</li>";
    }
    s += "</ol><p>Below: per head, A, B and A &minus; B (batch row 0; A &minus; B on a "
         "diverging scale, red where B is larger, blue where A is), most different "
         "first.</p></section>\n";
    return s;
}

} // namespace

std::vector<std::uint8_t> compare_html(const problem::AttentionComparison& c,
                                       const CompareFigureInput& in,
                                       unsigned threads) {
    const problem::CompareLayout& L = in.layout;
    const std::size_t map = L.lq * L.lk;
    const std::vector<std::size_t> order = ranked(c);
    const std::size_t budget = std::size_t{1} << 24U;
    const std::size_t shown = std::max<std::size_t>(
        1, std::min(order.size(), budget / std::max<std::size_t>(1, 3 * map)));
    std::vector<std::vector<float>> diffs(std::min(shown, order.size()));
    float largest = 0.0F;
    render::HeatmapInput h;
    h.rows = L.lq;
    h.cols = L.lk;
    h.grid_cols = 3;
    h.row_labels = in.tokens;
    h.col_labels = in.tokens;
    for (std::size_t r = 0; r < diffs.size(); ++r) {
        const std::size_t x = order[r];
        const std::size_t at = ((x / L.inner * L.batch) * L.inner + x % L.inner) * map;
        const std::span<const float> a = in.a.subspan(at, map);
        const std::span<const float> b = in.b.subspan(at, map);
        diffs[r].resize(map);
        for (std::size_t e = 0; e < map; ++e) {
            diffs[r][e] = a[e] - b[e];
            largest = std::max(largest, std::fabs(diffs[r][e]));
        }
        const std::string name = cell_name(c, x);
        h.panels.push_back({name + " A", a, {}});
        h.panels.push_back({name + " B", b, {}});
        h.panels.push_back({name + " A-B", diffs[r], {}});
    }
    // A - B on the diverging rdbu, white at 0, one range symmetric about 0 for every head
    // shown (the largest |A - B| among them), so their colours compare.
    const double m = largest > 0.0F ? static_cast<double>(largest) : 1.0;
    for (std::size_t r = 0; r < diffs.size(); ++r) {
        h.panels[3 * r + 2].scale = render::PanelScale{"rdbu", -m, m};
    }
    render::HeatmapOptions o;
    o.title = "attn compare: " + in.name_a + " vs " + in.name_b;
    o.threads = threads;
    std::vector<std::uint8_t> page = render::heatmap_html_bytes(h, o);
    const std::string section = grid_section(c, in);
    const std::string body = "<body>\n";
    const auto it = std::search(page.begin(), page.end(), body.begin(), body.end());
    const auto where =
        it == page.end() ? page.end() : it + static_cast<std::ptrdiff_t>(body.size());
    page.insert(where, section.begin(), section.end());
    return page;
}

} // namespace attn::plot

// Heatmap labels are never dropped silently (tokens grow the figure; past its limit the
// thinning is stated), --font-size and --cols.
#include "attn/error.hpp"
#include "attn/render/heatmap.hpp"
#include "attn/render/text.hpp"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <vector>

namespace attn::render {
namespace {

struct Grid {
    std::vector<std::vector<float>> data;
    HeatmapInput in;
};

/// `heads` panels of n x n weights with tokens "tok0".."tok{n-1}".
Grid grid(std::size_t heads, std::size_t n) {
    Grid g;
    g.data.assign(heads, std::vector<float>(n * n));
    g.in.rows = g.in.cols = n;
    for (std::size_t h = 0; h < heads; ++h) {
        for (std::size_t i = 0; i < n * n; ++i) {
            g.data[h][i] = static_cast<float>((i * 7 + h) % 11) / 10.0f;
        }
    }
    for (std::size_t h = 0; h < heads; ++h) {
        g.in.panels.push_back({"head " + std::to_string(h), g.data[h], {}});
    }
    for (std::size_t i = 0; i < n; ++i) {
        g.in.col_labels.push_back("tok" + std::to_string(i));
        g.in.row_labels.push_back("tok" + std::to_string(i));
    }
    return g;
}

std::size_t count_text(const Figure& f, const std::string& s, bool vertical) {
    return static_cast<std::size_t>(std::count_if(f.texts.begin(), f.texts.end(), [&](auto& t) {
        return t.text == s && t.vertical == vertical;
    }));
}

TEST(HeatmapLabels, TwelveHeadsOfTwentyTokensDrawEveryToken) {
    const Grid g = grid(12, 20);
    const HeatmapFigure hf = heatmap_figure(g.in, {});
    EXPECT_EQ(hf.x_label_step, 1u);
    EXPECT_EQ(hf.y_label_step, 1u);
    EXPECT_TRUE(hf.label_notes.empty());
    // 4 x 3 grid: every key token under each of the 4 lowest panels (rotated), every
    // query token left of each of the 3 rows.
    for (const char* t : {"tok0", "tok1", "tok13", "tok19"}) {
        EXPECT_EQ(count_text(hf.figure, t, true), 4u) << t;
        EXPECT_EQ(count_text(hf.figure, t, false), 3u) << t;
    }
    // Every token got at least the pitch its text needs: no overlap between neighbours.
    const double pitch = hf.panels[0].h / 20.0;
    EXPECT_GE(pitch, 1.3 * 10 * 100.0 / 72.0 - 1e-9);
}

TEST(HeatmapLabels, IndicesKeepMatplotlibTicks) {
    Grid g = grid(1, 100);
    g.in.col_labels.clear();
    g.in.row_labels.clear();
    const HeatmapFigure hf = heatmap_figure(g.in, {});
    EXPECT_GT(hf.x_label_step, 1u); // indices are ticks, not labels: spaced, no note
    EXPECT_TRUE(hf.label_notes.empty());
}

TEST(HeatmapLabels, PastTheLimitTheThinningIsStatedInTheFigure) {
    const Grid g = grid(1, 400);
    const HeatmapFigure hf = heatmap_figure(g.in, {});
    EXPECT_GT(hf.x_label_step, 1u);
    ASSERT_EQ(hf.label_notes.size(), 2u);
    EXPECT_EQ(hf.label_notes[0].rfind("key labels thinned: every ", 0), 0u);
    EXPECT_NE(hf.label_notes[0].find(" of 400 drawn"), std::string::npos);
    bool in_figure = false;
    for (const auto& t : hf.figure.texts) {
        in_figure = in_figure || t.text.find("key labels thinned") != std::string::npos;
    }
    EXPECT_TRUE(in_figure);
    // The figure grew as far as allowed (it did not stay at 480 px).
    EXPECT_GT(hf.panels[0].w, 2000.0);
    EXPECT_LE(hf.panels[0].w, 2400.0);
}

TEST(HeatmapLabels, FontSizeScalesTheTextAndColumnsSetTheGrid) {
    const Grid g = grid(6, 5);
    HeatmapOptions o;
    o.font_size = 20.0;
    o.columns = 2;
    const HeatmapFigure hf = heatmap_figure(g.in, o);
    double tick = 0.0;
    for (const auto& t : hf.figure.texts) {
        if (t.text == "tok3") {
            tick = t.size;
        }
    }
    EXPECT_DOUBLE_EQ(tick, 20.0 * 100.0 / 72.0);
    std::set<long> xs, ys;
    for (const Box& b : hf.panels) {
        xs.insert(std::lround(b.x));
        ys.insert(std::lround(b.y));
    }
    EXPECT_EQ(xs.size(), 2u);
    EXPECT_EQ(ys.size(), 3u);
    o.columns = 10; // more than the panels: one row
    EXPECT_EQ(heatmap_figure(g.in, o).panels[5].y, heatmap_figure(g.in, o).panels[0].y);
    o.font_size = 100.0;
    EXPECT_THROW(heatmap_figure(g.in, o), InputError);
}

} // namespace
} // namespace attn::render

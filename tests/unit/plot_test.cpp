// The heatmap's shared work in attn_plot: how a weights array's dims read, which panels are
// picked (and the model view's grid), the cells a problem blocks, the token check, and the
// encodings' first bytes. Pixels are heatmap_test.cpp's; the CLI's flags heatmap_cli_test's.
#include "attn/error.hpp"
#include "attn/plot/encode.hpp"
#include "attn/plot/panels.hpp"
#include "attn/problem/problem.hpp"
#include "unit/test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::plot {
namespace {

using namespace attn::testing;

io::Array weights(std::vector<std::size_t> shape) {
    io::Array a;
    std::size_t n = 1;
    for (const std::size_t d : shape) {
        n *= d;
    }
    a.shape = std::move(shape);
    for (std::size_t i = 0; i < n; ++i) {
        a.values.push_back(static_cast<float>(i % 7) / 7.0f);
    }
    return a;
}

TEST(Plot, DimsReadHeadsOrBatchesAndLayers) {
    const Dims h = dims_of({3, 4, 5}, problem::axes_of_rank(3), "w");
    EXPECT_EQ(h.heads, 3U);
    EXPECT_EQ(h.batches, 1U);
    EXPECT_EQ(h.lq, 4U);
    EXPECT_EQ(h.lk, 5U);
    const Dims b = dims_of({3, 4, 5}, {.batch = true, .heads = false}, "w");
    EXPECT_EQ(b.batches, 3U);
    EXPECT_EQ(b.heads, 1U);
    const Dims l = dims_of({2, 1, 3, 4, 4}, problem::axes_of_rank(4), "w", {5, 9});
    EXPECT_TRUE(l.has_layers);
    EXPECT_EQ(l.layer_ids, (std::vector<std::size_t>{5, 9}));
    EXPECT_INPUT_ERROR(dims_of({4}, problem::axes_of_rank(1), "w"), "^w: weights");
    EXPECT_INPUT_ERROR(dims_of({2, 1, 3, 4, 4}, problem::axes_of_rank(4), "w", {1}),
                       "^w: layers: 1 layer numbers for 2 layers");
}

TEST(Plot, PanelsPickedAndTheModelViewGrid) {
    const io::Array w = weights({2, 1, 3, 4, 4});
    const Dims d = dims_of(w.shape, problem::axes_of_rank(4), "w", {0, 1});
    const std::vector<PanelRef> all = pick_panels(d, kAll, kAll, "w");
    ASSERT_EQ(all.size(), 6U);
    EXPECT_EQ(all[4].title, "layer 1 \u00B7 head 1");
    EXPECT_EQ(all[4].offset(d), (1 * 3 + 1) * 16U);
    PanelData data;
    const render::HeatmapInput in = make_input(w, d, all, data);
    EXPECT_EQ(in.grid_cols, 3U); // rows are layers, columns heads
    EXPECT_EQ(in.panels[4].values.data(), w.values.data() + 64);
    EXPECT_EQ(pick_panels(d, kAll, 2, "w").size(), 2U);
    EXPECT_EQ(picked_suffix(d, kAll, 2), " \u00B7 head 2");
    EXPECT_INPUT_ERROR(pick_panels(d, kAll, 3, "w"), "^head 3: w has 3 heads");
}

TEST(Plot, BlockedCellsFollowTheProblemsVisibility) {
    const nlohmann::json doc = {{"query", {{1.0}, {2.0}, {3.0}}},
                                {"key", {{1.0}, {2.0}, {3.0}}},
                                {"value", {{1.0}, {2.0}, {3.0}}},
                                {"causal", true}};
    const problem::Problem p = problem::decode_problem(doc, ".");
    EXPECT_EQ(blocked_cells(p, 0, 0, 3, 3), (std::vector<std::uint8_t>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
    EXPECT_TRUE(blocked_cells(p, 0, 0, 2, 3).empty()); // not the problem's map
}

TEST(Plot, TokensLabelBothAxes) {
    const Dims square = dims_of({3, 3}, {}, "w");
    check_tokens({"a", "b", "c"}, square, "tokens");
    EXPECT_EQ(message_of([&] {
                  check_tokens({"a", "b"}, square, "tokens");
              }),
              "tokens: expected 3 tokens (one per query and key), got 2");
    const Dims wide = dims_of({2, 3}, {}, "w");
    EXPECT_INPUT_ERROR(check_tokens({"a", "b"}, wide, "tokens"),
                       "^tokens: the map has 2 queries and 3 keys");
}

TEST(Plot, EncodesPngSvgAndHtml) {
    const io::Array w = weights({3, 3});
    const Dims d = dims_of(w.shape, problem::axes_of_rank(w.shape.size()), "w");
    PanelData data;
    const render::HeatmapInput in = make_input(w, d, pick_panels(d, kAll, kAll, "w"), data);
    const Encoded png = encode_figure(in, {}, FileFormat::png);
    ASSERT_GT(png.bytes.size(), 8U);
    EXPECT_EQ(std::string(png.bytes.begin() + 1, png.bytes.begin() + 4), "PNG");
    const Encoded svg = encode_figure(in, {}, FileFormat::svg);
    EXPECT_NE(std::string(svg.bytes.begin(), svg.bytes.end()).find("<svg"), std::string::npos);
    const Encoded html = encode_figure(in, {}, FileFormat::html);
    EXPECT_NE(std::string(html.bytes.begin(), html.bytes.end()).find("<html"), std::string::npos);
}

} // namespace
} // namespace attn::plot

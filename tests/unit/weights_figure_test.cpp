// Weights made a heatmap: their axes said by whoever knows them (solve()'s rule for a
// problem, the file's rank, heatmap's --batch), read back from files (problem::read_weights)
// and turned into the renderer's input with labels, hatching and title (plot::file_figure,
// plot::result_figure). Expected shapes are the contract's (interface.md: weights [B, H, Lq,
// Lk], B dropped for unbatched inputs, H for one head, rank-4 inputs keep it).
#include "attn/error.hpp"
#include "attn/plot/encode.hpp"
#include "attn/plot/weights_figure.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "attn/problem/weights_read.hpp"
#include "unit/npy_bytes.hpp"
#include "unit/test_files.hpp"
#include "unit/test_util.hpp"

#include <cstring>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::plot {
namespace {

using namespace attn::testing;
using problem::WeightsAxes;

nlohmann::json seq(std::size_t batches, std::size_t len, std::size_t e) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < len; ++i) {
        nlohmann::json row = nlohmann::json::array();
        for (std::size_t k = 0; k < e; ++k) {
            row.push_back(0.1 * static_cast<double>(i + 1) - 0.05 * static_cast<double>(k));
        }
        rows.push_back(row);
    }
    if (batches == 0) {
        return rows;
    }
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t b = 0; b < batches; ++b) {
        out.push_back(rows);
    }
    return out;
}

/// A projected problem over `input` with `heads` heads (batches 0: unbatched).
nlohmann::json layer_doc(std::size_t batches, std::size_t heads) {
    return {{"variant", "multihead"},
            {"input", seq(batches, 3, 4)},
            {"num_heads", heads},
            {"init", {{"seed", 1}}}};
}

TEST(WeightsAxes, SolvesRuleMatchesTheContractsShapes) {
    struct Case {
        nlohmann::json doc;
        std::vector<std::size_t> shape; // the contract's
        WeightsAxes axes;
    };
    nlohmann::json averaged = layer_doc(2, 2);
    averaged["average_heads"] = true;
    const nlohmann::json direct = {{"query", {seq(1, 3, 4)}},
                                   {"key", {seq(1, 3, 4)}},
                                   {"value", {seq(1, 3, 4)}}}; // [1, 1, 3, 4]: H kept
    const std::vector<Case> cases = {
        {layer_doc(0, 1), {3, 3}, {}},
        {layer_doc(0, 2), {2, 3, 3}, {.batch = false, .heads = true}},
        {layer_doc(2, 1), {2, 3, 3}, {.batch = true, .heads = false}},
        {layer_doc(2, 2), {2, 2, 3, 3}, {.batch = true, .heads = true}},
        {averaged, {2, 3, 3}, {.batch = true, .heads = false}},
        {direct, {1, 1, 3, 3}, {.batch = true, .heads = true}},
    };
    for (const Case& c : cases) {
        const problem::Problem p = problem::decode_problem(c.doc, ".");
        const problem::Solution s = problem::solve(p, {});
        ASSERT_TRUE(s.weights) << c.doc.dump();
        EXPECT_EQ(s.weights->shape, c.shape) << c.doc.dump();
        EXPECT_EQ(problem::weights_axes(p), c.axes) << c.doc.dump();
        // The figure reads them by those axes: a batched one-head problem's [B, Lq, Lk]
        // are batches, not heads.
        const WeightsFigure f = result_figure(*s.weights, &p, {}, "", 10.0, 0);
        EXPECT_EQ(f.dims.has_batch, c.axes.batch) << c.doc.dump();
        EXPECT_EQ(f.dims.has_heads, c.axes.heads) << c.doc.dump();
        EXPECT_EQ(f.input.panels.size(),
                  c.shape.size() == 2 ? 1U : c.shape[0] * (c.shape.size() == 4 ? c.shape[1] : 1U));
    }
}

TEST(WeightsAxes, TheFilesRankAndAMismatchRefused) {
    EXPECT_EQ(problem::axes_of_rank(2), (WeightsAxes{}));
    EXPECT_EQ(problem::axes_of_rank(3), (WeightsAxes{.batch = false, .heads = true}));
    EXPECT_EQ(problem::axes_of_rank(4), (WeightsAxes{.batch = true, .heads = true}));
    EXPECT_INPUT_ERROR(dims_of({2, 3, 3}, {}, "w"), "^w: weights: expected a rank-2 \\[Lq, Lk\\]");
}

class ReadWeights : public TempDirTest {};

std::vector<std::uint8_t> f32_npy(const std::string& shape, const std::vector<float>& v) {
    std::vector<std::uint8_t> payload(v.size() * 4);
    std::memcpy(payload.data(), v.data(), payload.size());
    return make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", payload);
}

TEST_F(ReadWeights, ANpyFileIsMappedWithTheAxesOfItsRank) {
    const std::vector<float> v{0.25f, 0.75f, 1.0f, 0.0f, 0.5f, 0.5f, 0.0f, 1.0f};
    const std::string path = write("w.npy", f32_npy("(2, 2, 2)", v)).string();
    bool stdin_read = false;
    const problem::LoadedWeights w = problem::read_weights(path, [&] {
        stdin_read = true;
        return std::vector<std::uint8_t>{};
    });
    EXPECT_FALSE(stdin_read);
    ASSERT_TRUE(w.view); // mapped, not copied
    EXPECT_TRUE(w.array.values.empty());
    EXPECT_EQ(w.array.shape, (std::vector<std::size_t>{2, 2, 2}));
    EXPECT_EQ(w.axes, (WeightsAxes{.batch = false, .heads = true}));
    EXPECT_EQ(std::vector<float>(w.values().begin(), w.values().end()), v);
    w.release(0, 4); // pages dropped; the values read again
    EXPECT_EQ(w.values()[1], 0.75f);
}

TEST_F(ReadWeights, StdinAndADocumentsTokensAndLayers) {
    const std::string doc = R"({"output": [[1, 2]], "weights": [[[[[1]]]], [[[[1]]]]],
        "layers": [0, 3], "query_tokens": ["a"], "key_tokens": ["k"]})";
    const problem::LoadedWeights w = problem::read_weights("-", [&] { return bytes_of(doc); });
    EXPECT_EQ(w.name, "<stdin>");
    EXPECT_FALSE(w.view);
    EXPECT_EQ(w.layers, (std::vector<std::size_t>{0, 3}));
    EXPECT_EQ(w.axes, (WeightsAxes{.batch = true, .heads = true})); // [layers, B, H, Lq, Lk]
    EXPECT_EQ(w.query_tokens, std::vector<std::string>{"a"});
    const WeightsFigure f = file_figure(w, {});
    EXPECT_TRUE(f.dims.has_layers);
    EXPECT_EQ(f.input.panels.size(), 2U);
    EXPECT_EQ(f.input.row_labels, std::vector<std::string>{"a"});
    // A stacked document is a model view, titled as compute's (the CLI and the module alike).
    EXPECT_EQ(f.options.title,
              "attention weights: model view: 2 layers \u00d7 1 batch \u00d7 1 head");
    const std::string path = write("r.json", R"({"output": [[1]]})").string();
    EXPECT_INPUT_ERROR(problem::read_weights(path, {}), "a JSON object without \"weights\"");
}

TEST_F(ReadWeights, FileFigureBatchHeadLabelsAndTitle) {
    const std::vector<float> v(std::size_t{3} * 2 * 2, 0.25f);
    const std::string path = write("w.npy", f32_npy("(3, 2, 2)", v)).string();
    const problem::LoadedWeights w = problem::read_weights(path, {});
    FileFigureOptions o;
    o.title_base = "w.npy";
    o.batch = 1; // --batch on [X, Lq, Lk]: X is the batch
    const WeightsFigure b = file_figure(w, o);
    EXPECT_TRUE(b.dims.has_batch);
    EXPECT_FALSE(b.dims.has_heads);
    ASSERT_EQ(b.input.panels.size(), 1U);
    EXPECT_EQ(b.input.panels[0].values.data(), w.values().data() + 4);
    EXPECT_EQ(b.options.title, "w.npy \u00B7 batch 1");
    EXPECT_TRUE(b.input.release); // a mapped file's panels are released
    o.head = 0;
    EXPECT_INPUT_ERROR(file_figure(w, o), "^batch, head: .*w.npy has rank 3");
    o.batch = kAll;
    o.head = 2;
    o.title = "mine";
    o.tokens = std::vector<std::string>{"a", "b"};
    o.xlabels = std::vector<std::string>{"x", "y"};
    const WeightsFigure h = file_figure(w, o);
    EXPECT_EQ(h.options.title, "mine");
    EXPECT_EQ(h.input.col_labels, (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(h.input.row_labels, (std::vector<std::string>{"a", "b"}));
    o.tokens = std::vector<std::string>{"a"};
    EXPECT_INPUT_ERROR(file_figure(w, o), "^tokens: expected 2 tokens");
    o.tokens.reset();
    o.hatch_zeros = true;
    o.read_mask = [] {
        io::Array m;
        m.shape = {2, 2};
        m.values = {1.0f, 0.0f, 1.0f, 1.0f};
        return m;
    };
    o.mask_flag = "--mask m.npy";
    const WeightsFigure m = file_figure(w, o);
    ASSERT_EQ(m.input.panels.size(), 1U);
    EXPECT_EQ(
        std::vector<std::uint8_t>(m.input.panels[0].masked.begin(), m.input.panels[0].masked.end()),
        (std::vector<std::uint8_t>{0, 1, 0, 0}));
}

TEST(ResultFigure, TitledByTheProblemAndTheModelView) {
    nlohmann::json doc = layer_doc(0, 2);
    doc["id"] = "run";
    doc["causal"] = true;
    doc["tokens"] = {"a", "b", "c"};
    const problem::Problem p = problem::decode_problem(doc, ".");
    const problem::Solution s = problem::solve(p, {});
    const WeightsFigure f = result_figure(*s.weights, &p, {}, "file.json", 10.0, 0);
    EXPECT_EQ(f.options.title, "run");
    EXPECT_EQ(f.input.row_labels, (std::vector<std::string>{"a", "b", "c"}));
    ASSERT_EQ(f.input.panels.size(), 2U);
    EXPECT_EQ(f.input.panels[1].masked.size(), 9U); // causal: hatched
    io::Array stacked = *s.weights;
    stacked.shape.insert(stacked.shape.begin(), 1);
    const WeightsFigure m = result_figure(stacked, nullptr, {4}, "", 10.0, 0);
    EXPECT_EQ(m.options.title, "model view: 1 layer \u00D7 2 heads");
    EXPECT_EQ(m.input.panels[0].title, "layer 4 \u00B7 head 0");
}

TEST(FileFormat, ByNameOrExtension) {
    EXPECT_EQ(file_format("x.HTM", "", "-o"), FileFormat::html);
    EXPECT_EQ(file_format("x.svg", "png", "-o"), FileFormat::png);
    EXPECT_EQ(file_format("-", "", "-o"), FileFormat::png);
    EXPECT_INPUT_ERROR(file_format("x.jpg", "", "-o"), "^-o x.jpg: expected a .html");
}

} // namespace
} // namespace attn::plot

// Where a solved problem goes (attn/cli/outputs.hpp): formats by extension or --format,
// the checks before any work, and the files write_outputs makes, read back by the real
// readers (io::read_array_file, io::read_npz_array). The numbers are the contract's worked
// example (README: samples/seed_dot.json).
#include "attn/cli/outputs.hpp"
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/npz.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "unit/test_files.hpp"
#include "unit/test_util.hpp"

#include <filesystem>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::cli {
namespace {

using namespace attn::testing;
using nlohmann::json;
using problem::decode_problem;
namespace fs = std::filesystem;

/// The contract's worked example and its hand-derived result (README, seed_example.py).
const char* const kOutputsSeedDot = R"({"variant": "dot",
    "query": [[1, 0, 1], [0, 1, 1]], "key": [[1, 0, 1], [1, 1, 0], [0, 1, 1]],
    "value": [[10, 0], [0, 10], [5, 5]]})";
const std::vector<float> kSeedOutput = {6.820876f, 3.1791236f, 5.0f, 5.0f};
const std::vector<float> kSeedWeights = {
    0.57611686f, 0.21194157f, 0.21194157f, 0.21194157f, 0.21194157f, 0.57611686f};

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 1e-6) << i;
    }
}

class OutputsTest : public TempDirTest {
  protected:
    Problem problem(const char* text) { return decode_problem(json::parse(text), dir_); }

    /// write_outputs with a heatmap writer that records its calls.
    WrittenOutputs write(const Problem& p, const Solution& s, const OutputOptions& o) {
        return write_outputs(
            p,
            s,
            o,
            nullptr,
            nullptr,
            [this](const std::string& path, const io::Array* w, const std::vector<std::size_t>&) {
                heatmaps.push_back(path);
                heatmap_shape = w != nullptr ? w->shape : std::vector<std::size_t>{};
            });
    }
    std::string file(const char* name) const { return (dir_ / name).string(); }

    std::vector<std::string> heatmaps;
    std::vector<std::size_t> heatmap_shape;
};

TEST(OutputFormat, ByFlagThenStdoutThenExtension) {
    EXPECT_EQ(output_format("x.json", "npy"), io::ArrayFormat::npy);
    EXPECT_EQ(output_format("x.npy", "json"), io::ArrayFormat::json);
    EXPECT_EQ(output_format("-", ""), io::ArrayFormat::json);
    EXPECT_EQ(output_format("/dev/null", ""), io::ArrayFormat::json);
    EXPECT_EQ(output_format("out.NPY", ""), io::ArrayFormat::npy);
    EXPECT_EQ(output_format("out.json", ""), io::ArrayFormat::json);
    EXPECT_EQ(message_of([] { output_format("out.txt", ""); }),
              "out.txt: unknown array format (expected .npy or .json)");
    EXPECT_TRUE(is_npz("a.npz") && is_npz("a.NpZ"));
    EXPECT_FALSE(is_npz("a.npy") || is_npz("npz"));
}

TEST(OutputOptionsTest, WeightsOnlyWhenSomethingTakesThem) {
    OutputOptions o;
    EXPECT_TRUE(o.solve_options().want_weights); // the result document has them
    o.output = "o.npy";
    EXPECT_FALSE(o.solve_options().want_weights);
    o.output = "o.NPZ";
    EXPECT_TRUE(o.solve_options().want_weights);
    o.output = "o.npy";
    o.heatmap = "h.png";
    EXPECT_TRUE(o.solve_options().want_weights);
    o.no_weights = true;
    EXPECT_FALSE(o.solve_options().want_weights);
    o.threads = 3;
    o.simd = simd_supported().back();
    EXPECT_EQ(o.solve_options().threads, 3U);
    EXPECT_EQ(o.solve_options().simd, simd_supported().back());
}

TEST_F(OutputsTest, ChecksBeforeTheWork) {
    const Problem p = problem(R"({"query": [[1, 0]], "key": [[1, 0]], "value": [[1, 2]],
        "return": ["lse", "argmax"], "top_k": 1})");
    EXPECT_EQ(extra_results(p, true),
              (std::vector<std::string>{"lse", "argmax", "top_k", "hidden_states"}));
    OutputOptions o;
    o.output = "out.npy";
    EXPECT_EQ(message_of([&] { check_outputs(p, "", o); }),
              "--output out.npy: an .npy file holds the output alone, and --return asked for "
              "lse, argmax, top_k too: use --output FILE.npz (every array), FILE.json (the "
              "result document) or no --output (stdout)");
    o.format = "json"; // the document fits
    EXPECT_NO_THROW(check_outputs(p, "", o));
    o = {};
    o.weights = file("p.json");
    EXPECT_INPUT_ERROR(check_outputs(p, file("p.json"), o),
                       "--weights: .* is also the input of PROBLEM; refusing to overwrite");
}

TEST_F(OutputsTest, ArraysByExtension) {
    const Problem p = problem(kOutputsSeedDot);
    const Solution s = solve(p, {});
    OutputOptions o;
    o.output = file("out.npy");
    o.weights = file("w.json");
    const WrittenOutputs w = write(p, s, o);
    EXPECT_FALSE(w.document); // it went to files
    EXPECT_EQ(w.warning, "");
    const io::Array out = io::read_array_file(o.output, io::ArrayKind::numeric);
    EXPECT_EQ(out.shape, (std::vector<std::size_t>{2, 2}));
    expect_near_all(out.values, kSeedOutput);
    const io::Array weights = io::read_array_file(o.weights, io::ArrayKind::numeric);
    EXPECT_EQ(weights.shape, (std::vector<std::size_t>{2, 3}));
    expect_near_all(weights.values, kSeedWeights);
    EXPECT_TRUE(heatmaps.empty());
}

TEST_F(OutputsTest, NpzHoldsEveryArray) {
    const Problem p = problem(R"({"variant": "dot",
        "query": [[1, 0, 1], [0, 1, 1]], "key": [[1, 0, 1], [1, 1, 0], [0, 1, 1]],
        "value": [[10, 0], [0, 10], [5, 5]], "return": ["lse"]})");
    const Solution s = solve(p, {});
    OutputOptions o;
    o.output = file("all.npz");
    write(p, s, o);
    EXPECT_EQ(io::npz_members(io::read_file(o.output), "all.npz"),
              (std::vector<std::string>{"output", "weights", "lse"}));
    expect_near_all(io::read_npz_array(o.output, "weights").values, kSeedWeights);
    // With --weights FILE the archive leaves them out.
    o.weights = file("w.npy");
    write(p, s, o);
    EXPECT_EQ(io::npz_members(io::read_file(o.output), "all.npz"),
              (std::vector<std::string>{"output", "lse"}));
}

TEST_F(OutputsTest, JsonOutputWithExtrasIsTheDocument) {
    const Problem p = problem(R"({"variant": "dot",
        "query": [[1, 0, 1], [0, 1, 1]], "key": [[1, 0, 1], [1, 1, 0], [0, 1, 1]],
        "value": [[10, 0], [0, 10], [5, 5]], "return": ["argmax"]})");
    const Solution s = solve(p, {});
    OutputOptions o;
    o.output = file("doc.json");
    o.heatmap = file("h.png");
    write(p, s, o);
    const json doc = json::parse(io::as_text(io::read_file(o.output)));
    EXPECT_TRUE(doc.contains("weights") && doc.contains("argmax")) << doc.dump();
    EXPECT_EQ(doc["argmax"], json::parse("[0, 2]"));
    EXPECT_EQ(heatmaps, std::vector<std::string>{o.heatmap});
    EXPECT_EQ(heatmap_shape, (std::vector<std::size_t>{2, 3}));
}

TEST_F(OutputsTest, DocumentOnStdoutWithoutWhatWentToAFile) {
    const Problem p = problem(kOutputsSeedDot);
    const Solution s = solve(p, {});
    OutputOptions o;
    const WrittenOutputs all = write(p, s, o);
    ASSERT_TRUE(all.document);
    EXPECT_EQ(*all.document, result_document(p, s));
    o.weights = file("w.npy");
    const WrittenOutputs rest = write(p, s, o);
    ASSERT_TRUE(rest.document);
    EXPECT_FALSE(json::parse(*rest.document).contains("weights"));
    o.weights = "-"; // on stdout instead of the document (written by io::write_file_atomic)
    o.format = "json";
    ::testing::internal::CaptureStdout();
    const WrittenOutputs none = write(p, s, o);
    const std::string printed = ::testing::internal::GetCapturedStdout();
    EXPECT_FALSE(none.document);
    EXPECT_EQ(json::parse(printed).size(), 2U);
}

TEST_F(OutputsTest, ConflictsWriteNothing) {
    const Problem p = problem(kOutputsSeedDot);
    const Solution s = solve(p, {});
    OutputOptions o;
    o.output = "-";
    o.weights = "-";
    EXPECT_EQ(message_of([&] { write(p, s, o); }),
              "--output, --weights, --heatmap: only one of them can be - (stdout)");
    o = {};
    o.no_weights = true;
    o.heatmap = file("h.svg");
    EXPECT_EQ(message_of([&] { write(p, s, o); }),
              "--no-weights: cannot be combined with --weights or --heatmap");
    o = {};
    o.output = file("out.npy");
    o.weights = file("w.txt"); // known to be wrong before the output is written
    EXPECT_INPUT_ERROR(write(p, s, o), "w.txt: unknown array format");
    EXPECT_FALSE(fs::exists(o.output));
    EXPECT_TRUE(heatmaps.empty());
}

TEST_F(OutputsTest, FullyMaskedRowsWarn) {
    const Problem p = problem(R"({"query": [[1, 0], [0, 1]], "key": [[1, 0], [0, 1]],
        "value": [[1, 2], [3, 4]], "mask": [[0, 0], [1, 1]]})");
    const Solution s = solve(p, {});
    OutputOptions o;
    o.output = file("o.json");
    EXPECT_EQ(write(p, s, o).warning, fully_masked_warning(s));
    EXPECT_NE(fully_masked_warning(s), "");
}

TEST_F(OutputsTest, MappedWeightsFileOnlyForFloat32Npy) {
    const Problem p = problem(kOutputsSeedDot);
    OutputOptions o;
    EXPECT_EQ(map_weights_file(p, o), nullptr); // no --weights
    o.weights = file("w.json");
    EXPECT_EQ(map_weights_file(p, o), nullptr);
    o.weights = file("w.npy");
    o.dtype = "f64";
    EXPECT_EQ(map_weights_file(p, o), nullptr);
    o.dtype = "f32";
    o.heatmap = file("h.png");
    EXPECT_EQ(map_weights_file(p, o), nullptr);
    o.heatmap.clear();
    const auto mapped = map_weights_file(p, o, 3);
    ASSERT_NE(mapped, nullptr);
    EXPECT_EQ(mapped->to.size, 3U * 2U * 3U); // [layers, Lq, Lk]
}

} // namespace
} // namespace attn::cli

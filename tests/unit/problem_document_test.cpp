// One dispatch for every front end (attn/problem/document.hpp) and `attn batch`'s lines
// (attn/problem/batch.hpp): a document decoded as one problem, every layer of a
// checkpoint (samples/layers) or refused as a batch line, solved as solve() solves it, and
// a line's failure made its error line.
#include "attn/cli/problem_flags.hpp"
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_lines.hpp"
#include "attn/problem/batch.hpp"
#include "attn/problem/document.hpp"
#include "attn/problem/solve.hpp"
#include "unit/test_util.hpp"

#include <algorithm>
#include <filesystem>
#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::problem {
namespace {

using namespace attn::testing;
using nlohmann::json;
namespace fs = std::filesystem;

const char* const kSeedDot = R"({"variant": "dot", "id": "seed",
    "query": [[1, 0, 1], [0, 1, 1]], "key": [[1, 0, 1], [1, 1, 0], [0, 1, 1]],
    "value": [[10, 0], [0, 10], [5, 5]]})";

const fs::path kLayers = fs::path(ATTN_SOURCE_DIR) / "samples" / "layers";

json layer_stack_doc() {
    return json{{"params", (kLayers / "model.safetensors").string()},
                {"hidden_states", (kLayers / "hidden_states.npy").string()},
                {"layers", "1,3"}};
}

TEST(DecodeDocument, OneProblemSolvesAsSolve) {
    const DecodedDocument d = decode_document(json::parse(kSeedDot), ".");
    EXPECT_TRUE(std::holds_alternative<Problem>(d.decoded));
    EXPECT_EQ(d.stack(), nullptr);
    EXPECT_EQ(d.layers(), 0U);
    EXPECT_FALSE(d.is_model_run() || d.wants_hidden_states());
    const Solution s = solve_document(d, {}, false);
    const Problem p = decode_problem(json::parse(kSeedDot), ".");
    EXPECT_EQ(document_result(d, s), result_document(p, solve(p, {})));
    EXPECT_EQ(json::parse(document_result(d, s, false)).count("weights"), 0U);
    EXPECT_TRUE(document_warnings(d, s).empty());
}

TEST(DecodeDocument, EveryLayerOfACheckpoint) {
    const DecodedDocument d = decode_document(layer_stack_doc(), ".");
    ASSERT_NE(d.stack(), nullptr);
    EXPECT_EQ(d.stack()->layers, (std::vector<std::size_t>{1, 3}));
    EXPECT_EQ(d.layers(), 2U);
    EXPECT_EQ(&d.first(), &d.stack()->first);
    const Solution s = solve_document(d, {}, false);
    const Solution want = solve_layer_stack(std::get<LayerStack>(d.decoded), {}, false);
    EXPECT_EQ(s.weights->shape, want.weights->shape);
    EXPECT_EQ(s.weights->values, want.weights->values);
    EXPECT_EQ(json::parse(document_result(d, s))["layers"], json::parse("[1, 3]"));
}

TEST(DecodeDocument, GivenHiddenStatesCountAsTheField) {
    json doc = layer_stack_doc();
    doc.erase("hidden_states");
    ArrayValues given;
    given["hidden_states"] =
        io::read_array_file(kLayers / "hidden_states.npy", io::ArrayKind::numeric);
    const DecodedDocument d = decode_document(doc, ".", given);
    ASSERT_NE(d.stack(), nullptr);
    EXPECT_EQ(d.layers(), 2U);
    // A batch line takes one problem: decode_problem refuses every layer.
    EXPECT_INPUT_ERROR(decode_document(layer_stack_doc(), ".", {}, false),
                       "every-layer problems are computed by attn compute");
}

TEST(DecodeDocument, CheckFiniteBeforeSolving) {
    json doc = json::parse(kSeedDot);
    doc["query"][0][0] = "nan";
    const DecodedDocument d = decode_document(doc, ".");
    EXPECT_INPUT_ERROR(check_document_finite(d), "query");
    EXPECT_NO_THROW(check_document_finite(decode_document(json::parse(kSeedDot), ".")));
}

TEST(DecodeDocument, WarningsEndWithTheFullyMaskedOne) {
    json doc = json::parse(kSeedDot);
    doc["mask"] = json::parse("[[0, 0, 0], [1, 1, 1]]");
    const DecodedDocument d = decode_document(doc, ".");
    const Solution s = solve_document(d, {}, false);
    const std::vector<std::string> w = document_warnings(d, s);
    ASSERT_FALSE(w.empty());
    EXPECT_EQ(w.back(), fully_masked_warning(s));
}

TEST(BatchLine, ResultDefaultsAndErrors) {
    LineContext ctx;
    ctx.base = ".";
    const io::LineResult ok = process_line(json::parse(kSeedDot).dump(), 1, ctx);
    EXPECT_FALSE(ok.failed);
    const Problem p = decode_problem(json::parse(kSeedDot), ".");
    EXPECT_EQ(ok.text, result_document(p, solve(p, {})) + "\n");

    cli::CommonProblemFlags flags;
    flags.causal = "top-left";
    ctx.defaults = json::object();
    cli::apply_common_flags(flags, ctx.defaults);
    const json causal = json::parse(process_line(json::parse(kSeedDot).dump(), 2, ctx).text);
    EXPECT_EQ(causal["weights"][0], json::parse("[1, 0, 0]")); // query 0 sees key 0 alone
    json own = json::parse(kSeedDot);
    own["causal"] = false; // a line's own field wins
    const json own_result = json::parse(process_line(own.dump(), 3, ctx).text);
    EXPECT_GT(own_result["weights"][0][1].get<double>(), 0.2); // key 1 seen: not causal

    const io::LineResult bad = process_line("{\"id\": 7, \"query\": 1}", 4, ctx);
    EXPECT_TRUE(bad.failed);
    EXPECT_EQ(bad.line_no, 4U);
    const json err = json::parse(bad.text);
    EXPECT_EQ(err["id"], 7);
    EXPECT_NE(err["error"].get<std::string>(), "");
    const json syntax = json::parse(process_line("{oops", 5, ctx).text);
    EXPECT_TRUE(syntax["id"].is_null());
    EXPECT_EQ(syntax["error"].get<std::string>().rfind("line 5: invalid JSON", 0), 0U);
    const json layers = json::parse(process_line(layer_stack_doc().dump(), 6, ctx).text);
    EXPECT_NE(layers["error"].get<std::string>().find("every-layer problems"), std::string::npos);
}

TEST(BatchLine, FullyMaskedRowsAreNoted) {
    json doc = json::parse(kSeedDot);
    doc["mask"] = json::parse("[[0, 0, 0], [1, 1, 1]]");
    const io::LineResult r = process_line(doc.dump(), 1, LineContext{});
    EXPECT_FALSE(r.failed);
    EXPECT_TRUE(r.noted);
    json nan_doc = json::parse(kSeedDot);
    nan_doc["key"][0][0] = "inf";
    LineContext finite;
    finite.check_finite = true;
    EXPECT_TRUE(process_line(nan_doc.dump(), 1, finite).failed);
    EXPECT_FALSE(process_line(nan_doc.dump(), 1, LineContext{}).failed);
}

TEST(BatchPlanTest, LinesInParallelThreadsSplitTheCores) {
    const unsigned cores = usable_cores();
    EXPECT_GE(cores, 1U);
    cli::BatchFlags f;
    f.scale = "0.5";
    f.no_weights = true;
    BatchPlan plan = cli::plan_batch(f, "/data");
    EXPECT_EQ(plan.jobs, cores);
    EXPECT_EQ(plan.lines.solve.threads, 1U);
    EXPECT_FALSE(plan.lines.solve.want_weights);
    EXPECT_EQ(plan.lines.base, fs::path("/data"));
    EXPECT_EQ(plan.lines.defaults, json::parse(R"({"scale": 0.5})"));
    f.jobs = 1;
    EXPECT_EQ(cli::plan_batch(f, ".").lines.solve.threads, cores);
    f.threads = 3;
    EXPECT_EQ(cli::plan_batch(f, ".").lines.solve.threads, 3U);
    f.scale = "x";
    EXPECT_INPUT_ERROR(cli::plan_batch(f, "."), "--scale: expected a finite number");
}

TEST(BatchWarnings, NoneForAnUntouchedWriter) {
    const io::LineWriter writer;
    EXPECT_TRUE(batch_warnings(writer).empty());
}

} // namespace
} // namespace attn::problem

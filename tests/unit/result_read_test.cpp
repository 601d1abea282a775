// Reading back what attn writes (problem::read_result_bytes): the result document of a
// real solve() and bare arrays, NPY sniffed by io::looks_like_npy; and the comparison of
// `attn diff` (problem::compare_arrays, compare_results) against numpy.allclose's rule.
#include "attn/io/array.hpp"
#include "attn/problem/compare.hpp"
#include "attn/problem/result_read.hpp"
#include "attn/problem/solve.hpp"
#include "unit/test_util.hpp"

#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::problem {
namespace {

using namespace attn::testing;

std::vector<std::uint8_t> bytes_of(const std::string& text) {
    return {text.begin(), text.end()};
}

io::Array exact(std::vector<std::size_t> shape, std::vector<double> values) {
    io::Array a;
    a.shape = std::move(shape);
    a.values64 = std::move(values);
    for (const double v : a.values64) {
        a.values.push_back(static_cast<float>(v));
    }
    return a;
}

TEST(LooksLikeNpy, TheMagicAndNothingElse) {
    io::Array a = exact({2}, {1.0, 2.0});
    EXPECT_TRUE(io::looks_like_npy(io::encode_npy(a, false)));
    EXPECT_FALSE(io::looks_like_npy(bytes_of("[1, 2]")));
    EXPECT_FALSE(io::looks_like_npy(bytes_of("\x93NUMP")));
    EXPECT_FALSE(io::looks_like_npy({}));
}

TEST(ParseArrayBytes, SniffsNpyThenJson) {
    io::Array a = exact({2}, {0.5, -3.0});
    const io::Array from_npy =
        io::parse_array_bytes(io::encode_npy(a, false), "x", io::ArrayKind::numeric);
    EXPECT_EQ(from_npy.shape, a.shape);
    EXPECT_EQ(from_npy.values, a.values);
    const io::Array from_json =
        io::parse_array_bytes(bytes_of("[[1, 2, 3]]"), "x", io::ArrayKind::numeric);
    EXPECT_EQ(from_json.shape, (std::vector<std::size_t>{1, 3}));
    EXPECT_INPUT_ERROR(io::parse_array_bytes(bytes_of("[true]"), "x", io::ArrayKind::numeric),
                       "^x: ");
}

TEST(ReadResult, BareArrays) {
    const ResultFile j = read_result_bytes(bytes_of("[[1, 2]]"), "w.json");
    EXPECT_FALSE(j.document);
    ASSERT_TRUE(j.array);
    EXPECT_EQ(j.array->shape, (std::vector<std::size_t>{1, 2}));
    const ResultFile n = read_result_bytes(io::encode_npy(exact({3}, {1, 2, 3}), false), "<stdin>");
    ASSERT_TRUE(n.array);
    EXPECT_EQ(n.array->values, (std::vector<float>{1, 2, 3}));
    // A name that says JSON is read as JSON, whatever the bytes.
    EXPECT_INPUT_ERROR(
        read_result_bytes(
            io::encode_npy(exact({1}, {1}), false), "w.json", {}, io::ArrayFormat::json),
        "^w\\.json: ");
    EXPECT_INPUT_ERROR(read_result_bytes(bytes_of("3"), "w.json"),
                       exactly("w.json: expected an array or a result document, got number"));
}

TEST(ReadResult, ADocumentWithItsLabelsAndLayers) {
    const std::string doc = R"({"output": [[1, 2]], "weights": [[[[[1]]]], [[[[1]]]]],
        "layers": [0, 3], "tokens": ["a"], "key_tokens": ["k"]})";
    const ResultFile r = read_result_bytes(bytes_of(doc), "r.json");
    EXPECT_TRUE(r.document);
    ASSERT_TRUE(r.output && r.weights);
    EXPECT_EQ(r.weights->shape, (std::vector<std::size_t>{2, 1, 1, 1, 1})); // stacked: rank 5
    EXPECT_EQ(r.layers, (std::vector<std::size_t>{0, 3}));
    EXPECT_EQ(r.query_tokens, std::vector<std::string>{"a"}); // "tokens" fills the absent one
    EXPECT_EQ(r.key_tokens, std::vector<std::string>{"k"});   // the labels win
}

TEST(ReadResult, WhatSolveWrote) {
    const nlohmann::json doc = {{"input", {{1.0, 0.5}, {2.0, -1.0}, {3.0, 0.0}}},
                                {"causal", true},
                                {"query_tokens", {"a", "b", "c"}},
                                {"key_tokens", {"x", "y", "z"}}};
    const Problem p = decode_problem(doc, ".");
    const Solution s = solve(p, {});
    const std::string text = result_document(p, s);
    const ResultFile r =
        read_result_bytes(std::vector<std::uint8_t>(text.begin(), text.end()), "r.json");
    ASSERT_TRUE(r.document && r.output && r.weights);
    EXPECT_EQ(r.output->shape, s.output.shape);
    EXPECT_EQ(r.output->values, s.output.values); // float32 round-trips through the text
    EXPECT_EQ(r.weights->shape, s.weights->shape);
    EXPECT_EQ(r.weights->values, s.weights->values);
    EXPECT_EQ(r.query_tokens, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(r.key_tokens, (std::vector<std::string>{"x", "y", "z"}));
    EXPECT_TRUE(r.layers.empty());
}

TEST(ReadResult, RefusesWhatIsNotAResult) {
    EXPECT_INPUT_ERROR(read_result_bytes(bytes_of(R"({"error": "query: bad"})"), "r.json"),
                       exactly("r.json: a result document with an error: query: bad"));
    EXPECT_INPUT_ERROR(read_result_bytes(bytes_of(R"({"id": 1})"), "r.json"),
                       "^r\\.json: expected an array or a result document with \"output\"");
    EXPECT_INPUT_ERROR(read_result_bytes(bytes_of(R"({"output": [1], "key_tokens": [1]})"), "r"),
                       exactly("r: key_tokens: [0]: expected a string, got number"));
    EXPECT_INPUT_ERROR(read_result_bytes(bytes_of(R"({"output": [1], "layers": [-1]})"), "r"),
                       exactly("r: layers: expected a list of layer numbers, got number"));
}

// numpy.allclose(a, b, rtol, atol) is |a - b| <= atol + rtol * |b|, NaN never equal
// (equal_nan=True: NaN equals NaN); the cases below were checked with numpy 1.24.
TEST(CompareArrays, AllcloseRule) {
    const Tolerance t{1e-5, 1e-6};
    const io::Array b = exact({3}, {1.0, 0.0, -2.0});
    EXPECT_TRUE(compare_arrays(b, b, t).identical());
    // 1 + 1.1e-5 against 1: |err| 1.1e-5 <= 1e-6 + 1e-5 = 1.1e-5 (within, at the edge).
    EXPECT_TRUE(compare_arrays(exact({3}, {1.0 + 1.0e-5, 0.0, -2.0}), b, t).within());
    const ArrayDiff d = compare_arrays(exact({3}, {1.0, 2e-6, -2.0}), b, t);
    EXPECT_FALSE(d.within());
    EXPECT_EQ(d.outside, 1u);
    EXPECT_EQ(d.at_worst, 1u);
    EXPECT_EQ(d.max_rel, std::numeric_limits<double>::infinity()); // against an exact 0
}

TEST(CompareArrays, NanAndInfinity) {
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    constexpr double inf = std::numeric_limits<double>::infinity();
    const Tolerance t{};
    EXPECT_TRUE(compare_arrays(exact({2}, {nan, inf}), exact({2}, {nan, inf}), t).within());
    const ArrayDiff d = compare_arrays(exact({2}, {nan, 1.0}), exact({2}, {0.0, 1.0}), t);
    EXPECT_EQ(d.nan_mismatch, 1u);
    EXPECT_FALSE(d.within());
    // inf against -inf is outside, even with an infinite tolerance (rtol * |-inf|).
    EXPECT_EQ(compare_arrays(exact({1}, {inf}), exact({1}, {-inf}), t).outside, 1u);
    EXPECT_FALSE(compare_arrays(exact({1}, {1}), exact({2}, {1, 1}), t).within());
}

TEST(CompareResults, TheReportDiffPrints) {
    ResultFile a, b;
    a.name = "a.json";
    b.name = "b.json";
    a.document = b.document = true;
    a.output = exact({2}, {1.0, 2.0});
    b.output = exact({2}, {1.0, 2.5});
    b.weights = exact({1, 1}, {1.0});
    const ResultDiff d = compare_results(a, b, {});
    EXPECT_FALSE(d.equal);
    EXPECT_EQ(d.report,
              "output: shape [2], 2 values; max abs err 0.5 at [1]; max rel err 0.2 at [1]; "
              "1 outside tolerance, worst at [1] (A 2, B 2.5)\n"
              "weights: only in B (not compared)\n"
              "different (rtol 1e-05, atol 1e-06)\n");
    // A bare array against a document: the document's part of the array's shape.
    ResultFile w;
    w.name = "w.npy";
    w.array = exact({1, 1}, {1.0});
    EXPECT_EQ(compare_results(w, b, {}).report,
              "weights: shape [1, 1], 1 value: identical\nequal (rtol 1e-05, atol 1e-06)\n");
    a.output.reset();
    a.weights = exact({1}, {1.0});
    b.weights.reset();
    EXPECT_INPUT_ERROR(compare_results(a, b, {}), "have no array in common");
}

} // namespace
} // namespace attn::problem

// Arrays handed over in memory by a front end (the Python module): decode_npy_values reads
// every dtype as the .npy reader reads the same bytes from a file, and decode_problem takes
// params weights handed over ("params.w_q") as if the params object held them. Also the
// one fully-masked warning both front ends print.
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "unit/npy_bytes.hpp"
#include "unit/test_util.hpp"

#include <cstdint>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace attn {
namespace {

using nlohmann::json;
using namespace attn::testing;

/// The payload of `file` (an NPY file built by make_npy) handed over as memory.
io::Array handed_over(const std::vector<std::uint8_t>& payload,
                      std::string_view descr,
                      const std::vector<std::size_t>& shape,
                      io::Precision precision = io::Precision::f32) {
    return io::decode_npy_values(payload, descr, shape, "query", precision);
}

TEST(Handover, EveryDtypeReadsAsTheNpyFileOfTheSameBytes) {
    const std::vector<double> f8 = {1.0 / 3.0, -2.5, 1e300, 0.0, -0.0, 7.0};
    const std::vector<std::int16_t> i2 = {-3, 0, 300, 32767, -32768, 1};
    const std::vector<std::uint8_t> b1 = {0, 1, 2, 0, 255, 1};
    struct DtypeCase {
        std::string descr;
        std::vector<std::uint8_t> payload;
    };
    const std::vector<DtypeCase> cases = {
        {"<f8", payload_of(f8)}, {">i2", payload_of(i2, true)}, {"|b1", payload_of(b1)}};
    for (const DtypeCase& c : cases) {
        SCOPED_TRACE(c.descr);
        const auto file = make_npy(dict_for(c.descr, "(2, 3)"), c.payload);
        for (const auto precision : {io::Precision::f32, io::Precision::f64}) {
            const io::Array want = io::parse_npy(file, "t.npy", precision);
            const io::Array got = handed_over(c.payload, c.descr, {2, 3}, precision);
            EXPECT_EQ(got.shape, want.shape);
            EXPECT_EQ(got.dtype, want.dtype);
            EXPECT_EQ(got.is_bool, want.is_bool);
            EXPECT_EQ(got.values, want.values);
            EXPECT_EQ(got.values64, want.values64);
        }
    }
}

TEST(Handover, RefusesAWrongSizeOrDtypeNamingTheField) {
    const auto payload = payload_of(std::vector<float>{1, 2, 3});
    EXPECT_EQ(message_of([&] {
                  handed_over(payload, "<f4", {2, 2});
              }),
              "query: an array of shape (2, 2) and dtype float32 needs 16 bytes, got 12");
    EXPECT_INPUT_ERROR(handed_over(payload, "<c8", {3}), "^query: unsupported dtype '<c8'");
    EXPECT_INPUT_ERROR(handed_over(payload, "<f4", {SIZE_MAX, 3}),
                       "^query: an array of shape .* more elements than memory can address");
}

/// A self-attention problem with params w_q, w_k, w_v of [2, 2]: as JSON literals, or
/// handed over.
problem::Problem decode_with_params(bool hand_over) {
    const json w = {{1.0, 0.5}, {-0.25, 2.0}};
    json doc = {{"input", {{1.0, 2.0}, {3.0, -1.0}, {0.5, 0.5}}}, {"params", json::object()}};
    problem::ArrayValues given;
    for (const char* name : {"w_q", "w_k", "w_v"}) {
        if (hand_over) {
            given[std::string("params.") + name] =
                io::parse_json_array(w, name, io::ArrayKind::numeric, io::Precision::f32);
        } else {
            doc["params"][name] = w;
        }
    }
    return problem::decode_problem(doc, ".", std::move(given));
}

TEST(Handover, ParamsWeightsHandedOverAreThoseOfTheParamsObject) {
    const problem::Problem literal = decode_with_params(false);
    const problem::Problem given = decode_with_params(true);
    ASSERT_TRUE(given.projections && given.projections->w_q && given.projections->w_v);
    EXPECT_EQ(*given.projections->w_q, *literal.projections->w_q);
    EXPECT_EQ(*given.projections->w_k, *literal.projections->w_k);
    EXPECT_EQ(*given.projections->w_v, *literal.projections->w_v);
    const auto a = problem::solve(literal, {});
    const auto b = problem::solve(given, {});
    EXPECT_EQ(a.output.values, b.output.values);
}

TEST(Handover, Float32ArraysInAnF64ProblemAreWidenedExactly) {
    const json x = {{0.5, -1.25}, {2.0, 0.75}, {-3.5, 1.0}};
    const json literal = {{"precision", "f64"}, {"query", x}, {"key", x}, {"value", x}};
    problem::ArrayValues given;
    for (const char* field : {"query", "key", "value"}) {
        // Read in float32 only: no float64 values.
        given[field] = io::parse_json_array(x, field, io::ArrayKind::numeric, io::Precision::f32);
    }
    const auto a = problem::solve(problem::decode_problem(literal, "."), {});
    const auto b =
        problem::solve(problem::decode_problem({{"precision", "f64"}}, ".", std::move(given)), {});
    ASSERT_FALSE(a.output.values64.empty());
    EXPECT_EQ(a.output.values64, b.output.values64);
}

TEST(Handover, RefusesArraysThatAreNotArrayFieldsOrGivenTwice) {
    const io::Array a =
        io::parse_json_array(json{{1.0}}, "x", io::ArrayKind::numeric, io::Precision::f32);
    const json doc = {{"input", {{1.0}}}};
    EXPECT_EQ(message_of([&] {
                  problem::decode_problem(doc, ".", {{"scale", a}});
              }),
              "scale: not an array field (arrays: query, key, value, input, context, mask, bias, "
              "key_padding_mask, token_ids, params.NAME)");
    EXPECT_EQ(message_of([&] {
                  problem::decode_problem(doc, ".", {{"input", a}});
              }),
              "input: given twice (in the problem and as an array)");
    EXPECT_EQ(message_of([&] {
                  problem::decode_problem(doc, ".", {{"params.w_q", a}});
              }),
              "params.w_q: a weight handed over needs params as an object");
    const json both = {{"input", {{1.0}}}, {"params", {{"w_q", {{1.0}}}}}};
    EXPECT_EQ(message_of([&] {
                  problem::decode_problem(both, ".", {{"params.w_q", a}});
              }),
              "params.w_q: given twice (in params and as an array)");
}

TEST(Handover, FullyMaskedWarningCountsRows) {
    problem::Solution s;
    EXPECT_EQ(problem::fully_masked_warning(s), "");
    s.rows_fully_masked = 3;
    EXPECT_EQ(problem::fully_masked_warning(s),
              "3 query row(s) (over all batches and heads) can see no key (fully masked): their "
              "weights are zeros and their attention output is zeros (before any output "
              "projection)");
    EXPECT_NE(problem::fully_masked_warning(s, true).find("over all layers, batches"),
              std::string::npos);
}

} // namespace
} // namespace attn

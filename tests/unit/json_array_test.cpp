// Tests of JSON array literals (parse_json_array, encode_json_array, .json array files)
// and of format_float, the shortest round-trip float32 text every JSON output uses.
// Pins the messages users see for ragged, too deep, mistyped and non-numeric input.
// Does not cover what a field may hold (ranks per field): that is the problem reader's job.
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "unit/test_files.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace attn::io {
namespace {

using nlohmann::json;
using testing::expect_same_float;
using Dims = std::vector<std::size_t>;

constexpr float inf = std::numeric_limits<float>::infinity();

Array parse(std::string_view text, ArrayKind kind = ArrayKind::numeric) {
    return parse_json_array(json::parse(text), "x", kind);
}

/// parse_json_array(text) must throw an InputError: one line, starting "NAME: ", containing
/// `needle`. Returns the message.
std::string expect_json_error(std::string_view text,
                              std::string_view needle,
                              ArrayKind kind = ArrayKind::numeric,
                              std::string_view name = "query") {
    return testing::expect_error_message<InputError>(
        [&] { (void)parse_json_array(json::parse(text), name, kind); },
        std::string(name) + ": ",
        needle);
}

// ----------------------------------------------------------------------------------------
// Shapes and values
// ----------------------------------------------------------------------------------------

TEST(JsonArray, Ranks1To4) {
    Array a = parse("[1, 2, 3]");
    EXPECT_EQ(a.shape, (Dims{3}));
    EXPECT_EQ(a.values, (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(a.dtype, "json");
    EXPECT_FALSE(a.is_bool);

    a = parse("[[1, 2], [3, 4], [5, 6]]");
    EXPECT_EQ(a.shape, (Dims{3, 2}));
    EXPECT_EQ(a.values, (std::vector<float>{1, 2, 3, 4, 5, 6}));

    a = parse("[[[1, 2, 3], [4, 5, 6]]]");
    EXPECT_EQ(a.shape, (Dims{1, 2, 3}));
    EXPECT_EQ(a.values, (std::vector<float>{1, 2, 3, 4, 5, 6}));

    a = parse("[[[[1], [2]], [[3], [4]]], [[[5], [6]], [[7], [8]]]]");
    EXPECT_EQ(a.shape, (Dims{2, 2, 2, 1}));
    EXPECT_EQ(a.values, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(JsonArray, EmptyArrays) {
    EXPECT_EQ(parse("[]").shape, (Dims{0}));
    EXPECT_EQ(parse("[[], []]").shape, (Dims{2, 0}));
    EXPECT_EQ(parse("[[]]").shape, (Dims{1, 0}));
    EXPECT_EQ(parse("[[[]], [[]]]").shape, (Dims{2, 1, 0}));
    EXPECT_TRUE(parse("[[], []]").values.empty());
    EXPECT_FALSE(parse("[]", ArrayKind::mask).is_bool); // no booleans seen
}

TEST(JsonArray, NumbersBecomeFloat32) {
    const Array a = parse("[0.1, -7, 18446744073709551615, -9223372036854775808, 1e39, -1e39, "
                          "1e-50, -0.0, 1e-40, 16777217, 3.4028235e38]");
    const std::vector<float> want = {0.1f,
                                     -7.0f,
                                     18446744073709551615.0f,
                                     -9223372036854775808.0f,
                                     inf, // beyond float range: ±inf, as numpy's float32 cast
                                     -inf,
                                     0.0f,
                                     -0.0f,
                                     static_cast<float>(1e-40),
                                     16777216.0f,
                                     std::numeric_limits<float>::max()};
    ASSERT_EQ(a.values.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        expect_same_float(a.values[i], want[i], i);
    }
}

TEST(JsonArray, InfAndNanStrings) {
    const Array a = parse(R"([["inf", "-inf"], ["nan", 1]])");
    EXPECT_EQ(a.shape, (Dims{2, 2}));
    EXPECT_EQ(a.values[0], inf);
    EXPECT_EQ(a.values[1], -inf);
    EXPECT_TRUE(std::isnan(a.values[2]));
    EXPECT_EQ(a.values[3], 1.0f);
}

TEST(JsonArray, OtherStringsAreRejectedWithTheirPath) {
    for (const char* text : {"Infinity", "NaN", "INF", " inf", "inf ", "+inf", "-nan", "1.5", ""}) {
        SCOPED_TRACE(text);
        const std::string doc = std::string(R"([[1, 2], [3, ")") + text + R"("]])";
        expect_json_error(doc, "query: [1][1]: expected a number, got the string");
    }
    EXPECT_EQ(expect_json_error(R"([1, "abc"])", "abc"),
              "query: [1]: expected a number, got the string \"abc\" (only \"inf\", \"-inf\" "
              "and \"nan\" stand for numbers)");
    // Control characters in the string do not break the one-line rule.
    expect_json_error("[\"a\\nb\"]", "a\\x0ab");
}

TEST(JsonArray, BooleansOnlyInMasks) {
    const Array m = parse("[[true, false], [false, true]]", ArrayKind::mask);
    EXPECT_EQ(m.values, (std::vector<float>{1, 0, 0, 1}));
    EXPECT_TRUE(m.is_bool);
    EXPECT_EQ(m.dtype, "json");

    const Array mixed = parse("[true, 0, 1]", ArrayKind::mask);
    EXPECT_EQ(mixed.values, (std::vector<float>{1, 0, 1}));
    EXPECT_FALSE(mixed.is_bool);
    EXPECT_FALSE(parse("[1, 0]", ArrayKind::mask).is_bool);

    EXPECT_EQ(expect_json_error("[[1, true]]", "booleans are allowed only in masks"),
              "query: [0][1]: expected a number, got a boolean (booleans are allowed only in "
              "masks)");
}

TEST(JsonArray, NullsAndObjects) {
    EXPECT_EQ(expect_json_error("[[1, 2], [null, 4]]", "null"),
              "query: [1][0]: expected a number, got null");
    EXPECT_EQ(expect_json_error("[[1, 2], [3, {\"a\": 1}]]", "object"),
              "query: [1][1]: expected a number, got an object");
    expect_json_error("[null]", "got null", ArrayKind::mask);
}

TEST(JsonArray, TopLevelMustBeAnArray) {
    expect_json_error("3", "query: expected an array");
    expect_json_error("\"inf\"", "expected an array");
    expect_json_error("{\"a\": [1]}", "expected an array");
    expect_json_error("null", "expected an array");
    expect_json_error("true", "expected an array", ArrayKind::mask);
}

TEST(JsonArray, RaggedArraysNameTheIndexPath) {
    EXPECT_EQ(expect_json_error("[[1, 2, 3], [4, 5]]", "expected", ArrayKind::mask, "mask"),
              "mask: [1]: expected 3 elements, got 2");
    EXPECT_EQ(expect_json_error("[[1, 2], 3]", "expected"),
              "query: [1]: expected an array of 2 elements, got a number");
    EXPECT_EQ(expect_json_error("[1, [2]]", "expected"),
              "query: [1]: expected a number, got an array (the array is ragged)");
    EXPECT_EQ(expect_json_error("[[], [1]]", "expected"), "query: [1]: expected 0 elements, got 1");
    EXPECT_EQ(expect_json_error("[[1], []]", "expected"), "query: [1]: expected 1 element, got 0");
    EXPECT_EQ(expect_json_error("[[[1, 2], [3, 4]], [[5, 6], [7, 8, 9]]]", "expected"),
              "query: [1][1]: expected 2 elements, got 3");
    EXPECT_EQ(expect_json_error("[[[[1, 2]], [[3]]]]", "expected"),
              "query: [0][1][0]: expected 2 elements, got 1");
}

TEST(JsonArray, DeeperThanRank4) {
    expect_json_error("[[[[[1]]]]]", "query: the array is nested deeper than rank 4");
    expect_json_error("[[[[[]]]]]", "deeper than rank 4");
    // A deeper list that is not first in its row is a ragged leaf, reported without
    // descending into it.
    expect_json_error("[[[[1, [[[[[[[[2]]]]]]]]]]]]",
                      "[0][0][0][1]: expected a number, got an array");
}

TEST(JsonArray, VeryDeepNestingIsRefusedWithoutRecursion) {
    // 30000 levels: the shape walk stops at level 5, so no stack is consumed.
    const std::size_t depth = 30000;
    const std::string text = std::string(depth, '[') + "1" + std::string(depth, ']');
    expect_json_error(text, "deeper than rank 4");
    const std::string second = "[1, " + std::string(depth, '[') + std::string(depth, ']') + "]";
    expect_json_error(second, "[1]: expected a number, got an array");
}

// ----------------------------------------------------------------------------------------
// format_float
// ----------------------------------------------------------------------------------------

TEST(FormatFloat, KnownValues) {
    EXPECT_EQ(format_float(1.0f), "1");
    EXPECT_EQ(format_float(10.0f), "10");
    EXPECT_EQ(format_float(-250.0f), "-250");
    EXPECT_EQ(format_float(0.1f), "0.1");
    EXPECT_EQ(format_float(0.0f), "0");
    EXPECT_EQ(format_float(-0.0f), "-0.0"); // "-0" would read back as the integer 0
    EXPECT_EQ(format_float(1e-07f), "1e-07");
    EXPECT_EQ(format_float(std::sqrt(0.5f)), "0.70710677");
    EXPECT_EQ(format_float(16777216.0f), "16777216");
    EXPECT_EQ(format_float(std::numeric_limits<float>::max()), "3.4028235e+38");
    EXPECT_EQ(format_float(std::numeric_limits<float>::denorm_min()), "1e-45");
    EXPECT_EQ(format_float(inf), "inf");
    EXPECT_EQ(format_float(-inf), "-inf");
    EXPECT_EQ(format_float(std::numeric_limits<float>::quiet_NaN()), "nan");
    EXPECT_EQ(format_float(-std::numeric_limits<float>::quiet_NaN()), "nan");
}

TEST(FormatFloat, RandomFloatsRoundTripThroughStrtofAndJson) {
    std::mt19937 rng(42);
    for (int i = 0; i < 200000; ++i) {
        const auto bits = static_cast<std::uint32_t>(rng());
        const float x = std::bit_cast<float>(bits);
        if (!std::isfinite(x)) {
            continue;
        }
        const std::string text = format_float(x);
        const float back = std::strtof(text.c_str(), nullptr);
        ASSERT_EQ(std::bit_cast<std::uint32_t>(back), bits) << text;
        if (i % 50 == 0) {
            // Valid JSON, and nlohmann's double reads back to the same float.
            const json j = json::parse(text);
            ASSERT_TRUE(j.is_number()) << text;
            ASSERT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(j.get<double>())), bits)
                << text;
        }
    }
}

// ----------------------------------------------------------------------------------------
// encode_json_array
// ----------------------------------------------------------------------------------------

TEST(JsonEncode, CompactNestedLists) {
    const std::vector<float> v = {1, 2, 3, 4, 5, 6};
    EXPECT_EQ(encode_json_array({6}, v.data()), "[1,2,3,4,5,6]");
    EXPECT_EQ(encode_json_array({2, 3}, v.data()), "[[1,2,3],[4,5,6]]");
    EXPECT_EQ(encode_json_array({3, 2}, v.data()), "[[1,2],[3,4],[5,6]]");
    EXPECT_EQ(encode_json_array({2, 1, 3}, v.data()), "[[[1,2,3]],[[4,5,6]]]");
    EXPECT_EQ(encode_json_array({1, 2, 1, 3}, v.data()), "[[[[1,2,3]],[[4,5,6]]]]");
    EXPECT_EQ(encode_json_array({1, 1}, v.data()), "[[1]]");
}

TEST(JsonEncode, NonFiniteAsStringsAndScalars) {
    const std::vector<float> v = {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.5f};
    EXPECT_EQ(encode_json_array({4}, v.data()), R"(["inf","-inf","nan",0.5])");
    EXPECT_EQ(encode_json_array({}, v.data() + 3), "0.5");
    EXPECT_EQ(encode_json_array({}, v.data()), "\"inf\"");
}

TEST(JsonEncode, ZeroDimensions) {
    const float* const no_values = nullptr; // zero elements: never read
    EXPECT_EQ(encode_json_array({0}, no_values), "[]");
    EXPECT_EQ(encode_json_array({0, 3}, no_values), "[]");
    EXPECT_EQ(encode_json_array({2, 0}, no_values), "[[],[]]");
    EXPECT_EQ(encode_json_array({2, 0, 3}, no_values), "[[],[]]");
    EXPECT_EQ(encode_json_array({1, 2, 0}, no_values), "[[[],[]]]");
}

TEST(JsonEncode, RoundTripThroughNlohmann) {
    std::mt19937 rng(99);
    const std::vector<Dims> shapes = {
        {1}, {7}, {3, 4}, {1, 1}, {2, 3, 4}, {2, 1, 3, 2}, {3, 3, 1, 1}};
    for (const Dims& shape : shapes) {
        std::size_t count = 1;
        for (const std::size_t d : shape) {
            count *= d;
        }
        std::vector<float> values(count);
        for (std::size_t i = 0; i < count; ++i) {
            switch (i % 5) {
            case 0:
                values[i] = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
                break;
            case 1:
                values[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
                break;
            case 2:
                values[i] = i % 2 == 0 ? -0.0f : inf;
                break;
            case 3:
                values[i] = i % 3 == 0 ? -inf : std::numeric_limits<float>::quiet_NaN();
                break;
            default:
                values[i] = static_cast<float>(rng() % 1000);
                break;
            }
        }
        const std::string text = encode_json_array(shape, values.data());
        const Array a = parse_json_array(json::parse(text), "rt", ArrayKind::numeric);
        EXPECT_EQ(a.shape, shape) << text;
        ASSERT_EQ(a.values.size(), count);
        for (std::size_t i = 0; i < count; ++i) {
            expect_same_float(a.values[i], values[i], i);
        }
    }
}

// ----------------------------------------------------------------------------------------
// .json array files
// ----------------------------------------------------------------------------------------

class JsonArrayFile : public attn::testing::TempDirTest {
  protected:
    std::string error_of(const std::filesystem::path& path, ArrayKind kind = ArrayKind::numeric) {
        try {
            (void)attn::io::read_array_file(path, kind);
        } catch (const InputError& e) {
            return e.what();
        }
        ADD_FAILURE() << "no exception for " << path;
        return {};
    }
};

TEST_F(JsonArrayFile, ReadsByExtensionAnyCase) {
    const Array a =
        attn::io::read_array_file(write("m.JSON", "[[true, false]]\n"), ArrayKind::mask);
    EXPECT_EQ(a.shape, (Dims{1, 2}));
    EXPECT_TRUE(a.is_bool);
    EXPECT_EQ(
        attn::io::read_array_file(write("q.json", " [1, \"nan\", 2] "), ArrayKind::numeric).shape,
        (Dims{3}));
}

TEST_F(JsonArrayFile, InvalidJsonNamesFileAndByte) {
    const auto path = write("bad.json", "[1, 2,\n 3");
    const std::string message = error_of(path);
    EXPECT_EQ(message.rfind(path.string() + ": invalid JSON: byte 10: ", 0), 0U) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.find("[json.exception"), std::string::npos) << message;

    const std::string empty = error_of(write("empty.json", ""));
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "invalid JSON: byte", empty);
    const std::string nan = error_of(write("nan.json", "[NaN]"));
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "invalid JSON: byte 2: ", nan);
}

TEST_F(JsonArrayFile, ContentErrorsNameTheFile) {
    const auto path = write("r.json", "[[1, 2], [3]]");
    EXPECT_EQ(error_of(path), path.string() + ": [1]: expected 2 elements, got 1");
    const auto b = write("b.json", "[true]");
    EXPECT_EQ(error_of(b),
              b.string() +
                  ": [0]: expected a number, got a boolean (booleans are allowed only in masks)");
}

} // namespace
} // namespace attn::io

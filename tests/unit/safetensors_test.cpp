// Tests of the strict safetensors reader in attn/model/safetensors.hpp: every weight dtype (F32,
// F16, BF16, F64 with their specials), one test per header defect that must be refused with
// a one-line InputError naming the file and the tensor, the file reader and decode_problem
// with a checkpoint. The layouts are safetensors_layouts_test.cpp. Files are built byte by
// byte in the tests (unit/safetensors_bytes.hpp); only the file tests touch disk.
#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/problem.hpp"
#include "unit/safetensors_bytes.hpp"
#include "unit/test_files.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {
namespace {

using namespace testing;
namespace fs = std::filesystem;
using nlohmann::json;

void expect_same_float(float actual, float expected, std::size_t index) {
    if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(actual)) << "at " << index;
        EXPECT_EQ(std::bit_cast<std::uint32_t>(actual), std::bit_cast<std::uint32_t>(expected))
            << "NaN payload at " << index;
    } else {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(actual), std::bit_cast<std::uint32_t>(expected))
            << "at " << index << ": got " << actual << ", want " << expected;
    }
}

// ----------------------------------------------------------------------------------------
// Every dtype
// ----------------------------------------------------------------------------------------

TEST(Safetensors, F32RoundTripsBitForBit) {
    const std::vector<float> v = {1.5f,
                                  -0.0f,
                                  std::numeric_limits<float>::denorm_min(),
                                  std::numeric_limits<float>::max(),
                                  -std::numeric_limits<float>::infinity(),
                                  std::bit_cast<float>(0x7fc12345u)};
    const auto tensors = parse_safetensors(
        file_of("{" + entry("w", "F32", "[2,3]", 0, 24) + "}", f32_bytes(v)), "m.safetensors");
    const io::Array& a = tensors.at("w");
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(a.dtype, "float32");
    for (std::size_t i = 0; i < v.size(); ++i) {
        expect_same_float(a.values[i], v[i], i);
    }
}

TEST(Safetensors, F16ExactWithSpecials) {
    // 1, -2, 65504 (max), 2^-24 (smallest subnormal), 2^-14 (smallest normal), -0, +inf,
    // NaN with a payload, 0.1 rounded to half (0x2e66).
    const std::vector<std::uint16_t> h = {
        0x3c00, 0xc000, 0x7bff, 0x0001, 0x0400, 0x8000, 0x7c00, 0x7e01, 0x2e66};
    const std::vector<float> want = {1.0f,
                                     -2.0f,
                                     65504.0f,
                                     0x1p-24f,
                                     0x1p-14f,
                                     -0.0f,
                                     std::numeric_limits<float>::infinity(),
                                     std::bit_cast<float>(0x7fc02000u),
                                     0.0999755859375f};
    const auto tensors = parse_safetensors(
        file_of("{" + entry("h", "F16", "[9]", 0, 18) + "}", u16_bytes(h)), "m.safetensors");
    const io::Array& a = tensors.at("h");
    EXPECT_EQ(a.dtype, "float16");
    for (std::size_t i = 0; i < want.size(); ++i) {
        expect_same_float(a.values[i], want[i], i);
    }
}

TEST(Safetensors, Bf16IsTheTopHalfOfF32) {
    const std::vector<std::uint16_t> h = {
        0x3f80, 0xc040, 0x0001, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0x7f7f};
    const auto tensors = parse_safetensors(
        file_of("{" + entry("b", "BF16", "[2,2,2]", 0, 16) + "}", u16_bytes(h)), "m.safetensors");
    const io::Array& a = tensors.at("b");
    EXPECT_EQ(a.dtype, "bfloat16");
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 2, 2}));
    for (std::size_t i = 0; i < h.size(); ++i) {
        expect_same_float(a.values[i], std::bit_cast<float>(std::uint32_t{h[i]} << 16), i);
    }
    EXPECT_EQ(a.values[0], 1.0f);
    EXPECT_EQ(a.values[1], -3.0f);
}

TEST(Safetensors, F64RoundsToNearestFloat) {
    const std::vector<double> v = {0.1, -1e300, 1.0 + 0x1p-30};
    const auto tensors = parse_safetensors(
        file_of("{" + entry("d", "F64", "[3]", 0, 24) + "}", f64_bytes(v)), "m.safetensors");
    const io::Array& a = tensors.at("d");
    EXPECT_EQ(a.values[0], 0.1f);
    EXPECT_EQ(a.values[1], -std::numeric_limits<float>::infinity());
    EXPECT_EQ(a.values[2], 1.0f);
}

TEST(Safetensors, ScalarsEmptyTensorsMetadataAndPadding) {
    // Two tensors out of name order in the data, a scalar, an empty tensor, metadata and the
    // space padding the reference writer adds.
    const std::string header =
        "{\"__metadata__\":{\"format\":\"pt\"}," + entry("z", "F32", "[0,4]", 4, 4) + "," +
        entry("b", "F32", "[]", 4, 8) + "," + entry("a", "F16", "[2]", 0, 4) + "}    ";
    Bytes data = u16_bytes({0x3c00, 0x4000});
    const Bytes more = f32_bytes({7.0f});
    data.insert(data.end(), more.begin(), more.end());
    const Bytes file = file_of(header, data);
    const auto h = parse_safetensors_header(file, file.size(), "m.safetensors");
    ASSERT_EQ(h.tensors.size(), 3U);
    EXPECT_EQ(h.tensors[0].name, "a"); // sorted by name
    EXPECT_EQ(h.metadata.at("format"), "pt");
    EXPECT_EQ(h.data_start, 8 + header.size());
    EXPECT_EQ(h.data_size, 8U);
    ASSERT_NE(h.find("b"), nullptr);
    EXPECT_EQ(h.find("b")->begin, 4U);
    EXPECT_EQ(h.find("c"), nullptr);
    const auto t = parse_safetensors(file, "m.safetensors");
    EXPECT_EQ(t.at("b").shape, std::vector<std::size_t>{});
    EXPECT_EQ(t.at("b").values, std::vector<float>{7.0f});
    EXPECT_EQ(t.at("z").values.size(), 0U);
    EXPECT_EQ(t.at("a").values, (std::vector<float>{1.0f, 2.0f}));
}

TEST(Safetensors, EmptyHeaderObjectIsAValidFile) {
    EXPECT_TRUE(parse_safetensors(file_of("{}"), "m.safetensors").empty());
}

// ----------------------------------------------------------------------------------------
// Every defect: InputError, one line, naming the file and the tensor
// ----------------------------------------------------------------------------------------

TEST(Safetensors, RefusesShortFiles) {
    expect_file_error({}, "not a safetensors file: 0 bytes, too short for the 8-byte header");
    expect_file_error({1, 0, 0}, "not a safetensors file: 3 bytes");
}

TEST(Safetensors, RefusesHeaderLengthBeyondTheFile) {
    Bytes f = file_of("{}");
    f[0] = 200;
    expect_file_error(f, "truncated: the header length says 200 bytes, but only 2 follow");
    Bytes huge;
    append_le(huge, std::numeric_limits<std::uint64_t>::max(), 8);
    expect_file_error(huge, "truncated: the header length says 18446744073709551615 bytes");
}

TEST(Safetensors, RefusesHeadersOverTheFormatLimit) {
    Bytes f;
    append_le(f, 150'000'000, 8);
    expect_error([&] { (void)parse_safetensors_header(f, 200'000'000, "m.safetensors"); },
                 "header length 150000000 is more than the format's limit of 100000000 bytes");
}

TEST(Safetensors, RefusesHeadersOverTheMemoryLimit) {
    const ScopedLimit limit(std::uint64_t{16} * 1024);
    Bytes f;
    append_le(f, 2048, 8);
    expect_error([&] { (void)parse_safetensors_header(f, 1 << 20, "m.safetensors"); },
                 "a JSON header of 2.0 KiB may need up to 16 times that");
}

TEST(Safetensors, RefusesHeadersThatAreNotJsonObjects) {
    expect_file_error(file_of(""), "the header does not start with '{'");
    expect_file_error(file_of("[]"), "the header does not start with '{'");
    expect_file_error(file_of(" {}"), "the header does not start with '{'");
    expect_file_error(file_of("{\"a\":"), "invalid JSON header: byte 6:");
    expect_file_error(file_of("{} x"), "invalid JSON header");
    expect_file_error(file_of("{\"\xff\":1}"), "invalid JSON header");
    expect_file_error(file_of(std::string(200, '{')), "JSON nested deeper than 128 levels");
}

TEST(Safetensors, RefusesDuplicateKeys) {
    const std::string e = entry("w", "F32", "[1]", 0, 4);
    expect_file_error(file_of("{" + e + "," + e + "}", f32_bytes({1})),
                      "header has the key 'w' twice");
    expect_file_error(
        file_of(
            "{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}",
            f32_bytes({1})),
        "header has the key 'dtype' twice");
}

TEST(Safetensors, RefusesBadMetadata) {
    expect_file_error(file_of("{\"__metadata__\":[1]}"),
                      "__metadata__: expected an object of strings, got array");
    expect_file_error(file_of("{\"__metadata__\":{\"n\":1}}"),
                      "__metadata__: 'n': expected a string, got number");
}

TEST(Safetensors, RefusesMalformedEntries) {
    expect_file_error(file_of("{\"w\":[0,4]}"),
                      "tensor 'w': expected an object {\"dtype\", \"shape\", \"data_offsets\"}");
    expect_file_error(
        file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}",
                f32_bytes({1})),
        "tensor 'w': unexpected field 'x' (expected dtype, shape, data_offsets)");
    expect_file_error(file_of("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", f32_bytes({1})),
                      "tensor 'w': missing \"dtype\"");
    expect_file_error(file_of("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", f32_bytes({1})),
                      "tensor 'w': missing \"shape\"");
    expect_file_error(file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", f32_bytes({1})),
                      "tensor 'w': missing \"data_offsets\"");
}

TEST(Safetensors, RefusesUnknownDtypes) {
    expect_file_error(file_of("{" + entry("w", "F33", "[1]", 0, 4) + "}", f32_bytes({1})),
                      "tensor 'w': unknown dtype 'F33' (expected F32, F16, BF16, F64");
    expect_file_error(file_of("{" + entry("w", "f32", "[1]", 0, 4) + "}", f32_bytes({1})),
                      "tensor 'w': unknown dtype 'f32'");
    expect_file_error(
        file_of("{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", f32_bytes({1})),
        "tensor 'w': dtype: expected a string such as \"F32\", got 4");
}

TEST(Safetensors, RefusesBadShapes) {
    expect_file_error(file_of("{" + entry("w", "F32", "3", 0, 12) + "}", f32_bytes({1, 2, 3})),
                      "tensor 'w': shape: expected a list of non-negative integers, got 3");
    expect_file_error(file_of("{" + entry("w", "F32", "[-3]", 0, 12) + "}", f32_bytes({1, 2, 3})),
                      "tensor 'w': shape: [0]: expected a non-negative integer, got -3");
    expect_file_error(file_of("{" + entry("w", "F32", "[1,1.5]", 0, 4) + "}", f32_bytes({1})),
                      "tensor 'w': shape: [1]: expected a non-negative integer, got 1.5");
    std::string many = "[1";
    for (int i = 0; i < 32; ++i) {
        many += ",1";
    }
    many += "]";
    expect_file_error(file_of("{" + entry("w", "F32", many, 0, 4) + "}", f32_bytes({1})),
                      "tensor 'w': shape has 33 dimensions, more than 32");
    expect_file_error(
        file_of("{" + entry("w", "F32", "[4294967296,4294967296]", 0, 4) + "}", f32_bytes({1})),
        "tensor 'w': shape [4294967296, 4294967296] is too large (its element "
        "count overflows)");
    expect_file_error(
        file_of("{" + entry("w", "F32", "[4611686018427387904]", 0, 4) + "}", f32_bytes({1})),
        "is too large (its byte size overflows)");
}

TEST(Safetensors, RefusesBadOffsets) {
    const Bytes four = f32_bytes({1});
    expect_file_error(
        file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}}", four),
        "tensor 'w': data_offsets: expected [begin, end] (two non-negative integers), got [4]");
    expect_file_error(
        file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", four),
        "data_offsets: expected [begin, end]");
    expect_file_error(
        file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", four),
        "data_offsets: expected [begin, end]");
    expect_file_error(
        file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0-4\"}}", four),
        "data_offsets: expected [begin, end]");
    expect_file_error(file_of("{" + entry("w", "F32", "[0]", 4, 0) + "}", four),
                      "tensor 'w': data_offsets [4, 0]: begin is after end");
    expect_file_error(file_of("{" + entry("w", "F32", "[2]", 0, 8) + "}", four),
                      "tensor 'w': data_offsets [0, 8] reach past the end of the data (4 bytes)");
    expect_file_error(file_of("{" + entry("w", "F32", "[2]", 0, 4) + "}", four),
                      "tensor 'w': data_offsets [0, 4] hold 4 bytes, but F32 [2] needs 8");
    expect_file_error(
        file_of("{" + entry("w", "F32", "[1]", 0, 18446744073709551615ULL) + "}", four),
        "reach past the end of the data");
}

TEST(Safetensors, RefusesOverlapsGapsAndTrailingBytes) {
    const Bytes eight = f32_bytes({1, 2});
    expect_file_error(
        file_of("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[1]", 4, 8) + "}",
                eight),
        "tensors 'a' [0, 8] and 'b' [4, 8] overlap");
    expect_file_error(
        file_of("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 0, 4) + "}",
                eight),
        "tensors 'a' [0, 4] and 'b' [0, 4] overlap");
    expect_file_error(file_of("{" + entry("a", "F32", "[1]", 4, 8) + "}", eight),
                      "data bytes [0, 4) belong to no tensor (the format allows no gaps)");
    expect_file_error(file_of("{" + entry("a", "F32", "[1]", 0, 4) + "}", eight),
                      "data bytes [4, 8) belong to no tensor");
    expect_file_error(file_of("{}", eight), "data bytes [0, 8) belong to no tensor");
}

TEST(Safetensors, RefusesNonFloatWeightsWhenRead) {
    Bytes data;
    append_le(data, 3, 8);
    const Bytes file = file_of("{" + entry("n", "I64", "[1]", 0, 8) + "}", data);
    // The header is fine (I64 is a format dtype); converting it to weights is not.
    EXPECT_EQ(parse_safetensors_header(file, file.size(), "m.safetensors").tensors.size(), 1U);
    expect_file_error(file,
                      "tensor 'n': dtype I64 is not supported for weights (expected F32, "
                      "F16, BF16 or F64)");
}

TEST(Safetensors, RefusesTensorsOverTheMemoryLimit) {
    const ScopedLimit limit(1024);
    const Bytes file = file_of("{" + entry("w", "F16", "[1024]", 0, 2048) + "}", Bytes(2048, 0));
    expect_file_error(file,
                      "tensor 'w': the array of shape [1024] needs 4.0 KiB to load as "
                      "float32, more than the memory limit of 1.0 KiB (--max-memory)");
}

TEST(Safetensors, QuotesHostileNamesSafely) {
    const std::string header = "{" + entry("a\\nb\\u001b", "X", "[1]", 0, 4) + "}";
    expect_file_error(file_of(header, f32_bytes({1})), "tensor 'a\\x0ab\\x1b': unknown dtype 'X'");
}

// ----------------------------------------------------------------------------------------
// Files and decode_problem
// ----------------------------------------------------------------------------------------

class SafetensorsFileTest : public attn::testing::TempDirTest {};

TEST_F(SafetensorsFileTest, ReadsTheHeaderThenOnlyWhatIsAsked) {
    const std::string header = "{" + entry("x.w_q", "F32", "[2,2]", 0, 16) + "," +
                               entry("x.w_k", "BF16", "[2,2]", 16, 24) + "}";
    Bytes data = f32_bytes({1, 2, 3, 4});
    const Bytes k = u16_bytes({0x3f80, 0x4000, 0x4040, 0x4080});
    data.insert(data.end(), k.begin(), k.end());
    const fs::path p = write("m.safetensors", file_of(header, data));
    const attn::model::SafetensorsFile f(p);
    ASSERT_EQ(f.header().tensors.size(), 2U);
    const io::Array a = f.read(*f.header().find("x.w_k"));
    EXPECT_EQ(a.values, (std::vector<float>{1, 2, 3, 4}));

    // The file shrinks after the header was read: read() says so.
    fs::resize_file(p, 8 + header.size() + 10);
    expect_error([&] { (void)f.read(*f.header().find("x.w_k")); },
                 "truncated: the file ended while it was read",
                 p.string());
}

TEST_F(SafetensorsFileTest, NamesTheFileWhenItCannotBeRead) {
    expect_error([&] { attn::model::SafetensorsFile f(dir_ / "missing.safetensors"); },
                 "missing.safetensors: cannot read: No such file or directory",
                 (dir_ / "missing.safetensors").string());
    expect_error([&] { attn::model::SafetensorsFile f(dir_); },
                 ": cannot read: Is a directory",
                 dir_.string());
    Bytes bad;
    append_le(bad, 1'000'000, 8);
    const fs::path p = write("bad.safetensors", bad);
    expect_error([&] { attn::model::SafetensorsFile f(p); },
                 "truncated: the header length says 1000000 bytes, but only 0 follow",
                 p.string());
}

TEST_F(SafetensorsFileTest, DecodeProblemLoadsACheckpointLayer) {
    // A Llama-style layer with 4 query heads and 2 key/value heads: num_kv_heads is implied.
    const std::string pre = "model.layers.0.self_attn.";
    std::vector<float> q(std::size_t{8} * 4, 0.0f);
    std::vector<float> kv(std::size_t{4} * 4, 0.5f);
    for (std::size_t i = 0; i < 4; ++i) {
        q[i * 4 + i] = 1.0f;
    }
    q[5] = std::numeric_limits<float>::quiet_NaN();
    Bytes data = f32_bytes(q);
    for (int r = 0; r < 2; ++r) {
        const Bytes b = f32_bytes(kv);
        data.insert(data.end(), b.begin(), b.end());
    }
    const std::string header = "{" + entry(pre + "q_proj.weight", "F32", "[8,4]", 0, 128) + "," +
                               entry(pre + "k_proj.weight", "F32", "[4,4]", 128, 192) + "," +
                               entry(pre + "v_proj.weight", "F32", "[4,4]", 192, 256) + "}";
    write("llama.safetensors", file_of(header, data));
    const json doc = {
        {"input", json::array({json::array({1, 2, 3, 4}), json::array({4, 3, 2, 1})})},
        {"num_heads", 4},
        {"params", {{"file", "llama.safetensors"}, {"prefix", pre}}}};
    const attn::problem::Problem p = attn::problem::decode_problem(doc, dir_);
    ASSERT_TRUE(p.projections);
    EXPECT_EQ(p.num_kv_heads, 2U);
    EXPECT_EQ(attn::shape_of(*p.projections->w_q), (std::vector<std::size_t>{8, 4}));
    EXPECT_FALSE(p.projections->w_o);
    // Sources: the file, then every tensor read, for --check-finite and the output check.
    ASSERT_EQ(p.sources.size(), 5U);
    EXPECT_EQ(p.sources[1].field, "params");
    EXPECT_EQ(p.sources[2].field, "params." + pre + "q_proj.weight");
    EXPECT_EQ(p.sources[2].first_nonfinite, std::optional<std::size_t>(5));
    expect_error([&] { attn::problem::check_finite(p); },
                 "params." + pre + "q_proj.weight: " + (dir_ / "llama.safetensors").string() +
                     ": non-finite value nan at [1, 1] (check_finite)",
                 "params.");

    // An explicit num_kv_heads wins (and here disagrees with the shapes: the layer says so).
    json explicit_doc = doc;
    explicit_doc["num_kv_heads"] = 4;
    EXPECT_EQ(attn::problem::decode_problem(explicit_doc, dir_).num_kv_heads, 4U);

    // Not at that prefix: the message lists where the file has attention weights.
    json wrong = doc;
    wrong["params"]["prefix"] = "model.layers.1.self_attn.";
    expect_error([&] { (void)attn::problem::decode_problem(wrong, dir_); },
                 "no attention weights at prefix 'model.layers.1.self_attn.' (looked for w_q, "
                 "w_k, w_v, w_o, in_proj_weight, q_proj_weight, out_proj.weight, c_attn.weight, "
                 "q_proj.weight, self.query.weight); the file has them at prefix "
                 "'model.layers.0.self_attn.': set "
                 "\"prefix\"",
                 "params: ");
    wrong["params"] = {{"file", "llama.safetensors"}, {"prefix", pre}, {"layout", "gpt2"}};
    expect_error([&] { (void)attn::problem::decode_problem(wrong, dir_); },
                 "no gpt2 attention weights at prefix '" + pre +
                     "' (looked for c_attn.weight); the file's 3 tensors hold none",
                 "params: ");
    wrong["params"] = {{"file", 3}};
    expect_error([&] { (void)attn::problem::decode_problem(wrong, dir_); },
                 "params.file: expected a string, got number",
                 "params.file");
}

} // namespace
} // namespace attn::model

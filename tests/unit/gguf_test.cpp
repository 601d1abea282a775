// The GGUF reader and dequantizers against files llama.cpp's gguf-py wrote
// (fixtures/gguf/, gguf_fixtures.py): every dequantizable type equals gguf-py's numpy
// dequantization bit for bit, metadata of every value type reads back as written, and
// hostile headers (gguf_bytes.hpp builds them) are refused with one line, never a crash.
#include "attn/error.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/npz.hpp"
#include "attn/model/gguf.hpp"
#include "gguf_bytes.hpp"
#include "test_files.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace attn::testing {
namespace {

using model::GgufHeader;
using model::GgufType;
using model::GgufValue;

TEST(GgufQuants, EveryTypeEqualsGgufPyBitForBit) {
    const model::GgufFile file(gguf_fixture("quants.gguf"));
    const std::vector<std::uint8_t> npz = fixture_bytes("gguf/quants_expected.npz");
    const std::vector<std::string> members = io::npz_members(npz, "quants_expected.npz");
    std::set<std::string> types_seen;
    for (const std::string& member : members) {
        SCOPED_TRACE(member);
        const io::Array want = io::parse_npy(io::npz_member_bytes(npz, member, "expected"), member);
        const model::GgufTensor* t = file.header().find(member);
        ASSERT_NE(t, nullptr);
        types_seen.insert(std::string(model::ggml_type_traits(t->type)->name));
        const io::Array got = file.read(*t);
        ASSERT_EQ(got.shape, want.shape);
        ASSERT_EQ(got.values.size(), want.values.size());
        for (std::size_t i = 0; i < got.values.size(); ++i) {
            expect_same_float(got.values[i], want.values[i], i);
        }
    }
    EXPECT_EQ(types_seen.size(), 13U) << "every dequantizable type has a reference";
}

TEST(GgufQuants, UnsupportedTypeIsRefusedByName) {
    const model::GgufFile file(gguf_fixture("quants.gguf"));
    expect_error_message<InputError>(
        [&] { (void)file.read("iq4_nl.random"); }, "", "ggml type IQ4_NL is not supported");
}

TEST(GgufQuants, TypeTable) {
    EXPECT_EQ(model::ggml_type_traits(12)->name, "Q4_K");
    EXPECT_EQ(model::ggml_type_traits(12)->block_bytes, 144U);
    EXPECT_EQ(model::ggml_type_traits(4), nullptr);  // Q4_2, removed
    EXPECT_EQ(model::ggml_type_traits(31), nullptr); // Q4_0_4_4, removed
    EXPECT_EQ(model::ggml_type_traits(1000), nullptr);
    EXPECT_FALSE(model::ggml_type_traits(34)->dequantizable); // TQ1_0
}

const GgufValue& value_of(const GgufHeader& h, const std::string& key) {
    const GgufValue* v = h.find_value(key);
    EXPECT_NE(v, nullptr) << key;
    static const GgufValue none;
    return v != nullptr ? *v : none;
}

/// A metadata value as JSON (the fixture's expected form).
nlohmann::json json_of(const GgufValue& v) {
    if (v.type == GgufType::string) {
        return v.text;
    }
    if (v.type == GgufType::boolean) {
        return v.bits != 0;
    }
    if (v.type == GgufType::array) {
        nlohmann::json out = nlohmann::json::array();
        if (v.element == GgufType::string) {
            for (const std::string& s : v.strings) {
                out.push_back(s);
            }
        } else if (v.element == GgufType::array) {
            for (const GgufValue& item : v.items) {
                out.push_back(json_of(item));
            }
        } else {
            for (std::size_t i = 0; i < v.count; ++i) {
                out.push_back(json_of(v.element_at(i)));
            }
        }
        return out;
    }
    if (v.type == GgufType::f32 || v.type == GgufType::f64) {
        return *v.as_double();
    }
    if (const auto u = v.as_uint()) {
        return *u;
    }
    return static_cast<std::int64_t>(*v.as_double());
}

TEST(GgufReader, MetadataOfEveryTypeReadsBackAsWritten) {
    const model::GgufFile file(gguf_fixture("metadata.gguf"));
    const GgufHeader& h = file.header();
    const nlohmann::json want = fixture_json("gguf/metadata_expected.json");
    EXPECT_EQ(h.version, 3U);
    EXPECT_EQ(h.alignment, 64U);
    EXPECT_EQ(h.data_start, want["data_start"].get<std::uint64_t>());
    for (const auto& [key, entry] : want["metadata"].items()) {
        SCOPED_TRACE(key);
        const GgufValue& v = value_of(h, key);
        EXPECT_EQ(model::gguf_type_name(v.type), entry[0].get<std::string>());
        if (v.type == GgufType::f32) {
            EXPECT_EQ(*v.as_double(), static_cast<double>(entry[1].get<float>()));
        } else if (key == "t.floats") {
            EXPECT_EQ(json_of(v), nlohmann::json({0.5, -1.25}));
        } else {
            EXPECT_EQ(json_of(v), entry[1]);
        }
    }
    EXPECT_EQ(h.metadata.size(), want["metadata"].size());
    EXPECT_EQ(value_of(h, "t.i64").as_uint(), std::nullopt);
    EXPECT_EQ(*value_of(h, "t.i64").as_double(), -9223372036854775808.0);
    for (const auto& [name, shape] : want["tensors"].items()) {
        SCOPED_TRACE(name);
        const io::Array a = file.read(name);
        EXPECT_EQ(a.shape, shape.get<std::vector<std::size_t>>());
        for (std::size_t i = 0; i < a.values.size(); ++i) {
            EXPECT_EQ(a.values[i], static_cast<float>(i));
        }
    }
}

// ---- hostile headers ----------------------------------------------------------------------

GgufBytes with_version(std::uint32_t version) {
    GgufBytes g;
    g.version = version;
    return g;
}

GgufBytes with_counts(std::optional<std::uint64_t> tensors, std::optional<std::uint64_t> kvs) {
    GgufBytes g;
    g.n_tensors_override = tensors;
    g.n_kv_override = kvs;
    return g;
}

GgufHeader parse(const std::vector<std::uint8_t>& bytes) {
    return model::parse_gguf_header(bytes, bytes.size(), "x.gguf");
}

TEST(GgufHostile, EveryTruncationOfARealFileIsRefused) {
    const std::vector<std::uint8_t> whole = fixture_bytes("gguf/metadata.gguf");
    (void)parse(whole);
    for (std::size_t n = 0; n < whole.size(); ++n) {
        const std::vector<std::uint8_t> cut(whole.begin(), whole.begin() + static_cast<long>(n));
        EXPECT_THROW((void)parse(cut), InputError) << "cut at " << n;
    }
}

TEST(GgufHostile, BadMagicAndVersions) {
    GgufBytes g;
    auto bytes = g.bytes();
    bytes[0] = 'X';
    expect_error_message<InputError>([&] { (void)parse(bytes); }, "x.gguf", "not a GGUF file");
    expect_error_message<InputError>(
        [&] { (void)parse(with_version(1).bytes()); }, "x.gguf", "version 1");
    expect_error_message<InputError>(
        [&] { (void)parse(with_version(0x03000000).bytes()); }, "x.gguf", "big-endian");
    expect_error_message<InputError>(
        [&] { (void)parse(with_version(7).bytes()); }, "x.gguf", "version 7");
    EXPECT_NO_THROW((void)parse(with_version(2).bytes()));
}

TEST(GgufHostile, HugeCountsAndLengths) {
    expect_error_message<InputError>([&] { (void)parse(with_counts(~0ULL, std::nullopt).bytes()); },
                                     "x.gguf",
                                     "tensor count: count 18446744073709551615");
    expect_error_message<InputError>(
        [&] { (void)parse(with_counts(std::nullopt, 1ULL << 62).bytes()); },
        "x.gguf",
        "metadata count");
    GgufBytes g;
    g.kv_string("k", "v");
    auto bytes = g.bytes();
    // The key's length field is at offset 24: make it point past the end.
    put_u64(bytes, 24, 1ULL << 40);
    expect_error_message<InputError>([&] { (void)parse(bytes); }, "x.gguf", "reaches past the end");
    GgufBytes a;
    a.kv_raw("arr", 9, [](std::vector<std::uint8_t>& b) {
        put_u32(b, 6);         // float32 elements
        put_u64(b, ~0ULL / 2); // far too many
    });
    expect_error_message<InputError>([&] { (void)parse(a.bytes()); }, "x.gguf", "count");
}

TEST(GgufHostile, UnknownTypesDuplicatesAndNesting) {
    GgufBytes g;
    g.kv_raw("k", 13, [](std::vector<std::uint8_t>&) {});
    expect_error_message<InputError>(
        [&] { (void)parse(g.bytes()); }, "x.gguf", "unknown value type 13");
    GgufBytes d;
    d.kv_string("k", "a");
    d.kv_string("k", "b");
    expect_error_message<InputError>(
        [&] { (void)parse(d.bytes()); }, "x.gguf", "'k' appears twice");
    GgufBytes deep;
    deep.kv_raw("deep", 9, [](std::vector<std::uint8_t>& b) {
        for (int i = 0; i < 20; ++i) {
            put_u32(b, 9);
            put_u64(b, 1);
        }
        put_u32(b, 0);
        put_u64(b, 0);
    });
    expect_error_message<InputError>(
        [&] { (void)parse(deep.bytes()); }, "x.gguf", "nested more than");
    GgufBytes t;
    t.tensor("w", {32}, 99, 0);
    expect_error_message<InputError>(
        [&] { (void)parse(t.bytes()); }, "x.gguf", "unknown ggml type 99");
    GgufBytes dup;
    dup.tensor("w", {8}, 0, 0);
    dup.tensor("w", {8}, 0, 32);
    expect_error_message<InputError>(
        [&] { (void)parse(dup.bytes()); }, "x.gguf", "'w' appears twice");
    GgufBytes b;
    b.kv_raw("flag", 7, [](std::vector<std::uint8_t>& v) { v.push_back(2); });
    expect_error_message<InputError>([&] { (void)parse(b.bytes()); }, "x.gguf", "bool value 2");
}

TEST(GgufHostile, TensorShapesOffsetsAndAlignment) {
    GgufBytes ok;
    ok.tensor("a", {8}, 0, 0);
    ok.tensor("b", {32}, 8, 32); // Q8_0: one block of 34 bytes
    ok.data_bytes = 32 + 64;
    const GgufHeader h = parse(ok.bytes());
    EXPECT_EQ(h.tensors[1].bytes, 34U);
    EXPECT_EQ(h.data_start % 32, 0U);

    GgufBytes odd = ok;
    odd.tensors[1].offset = 40;
    expect_error_message<InputError>(
        [&] { (void)parse(odd.bytes()); }, "x.gguf", "not a multiple of the alignment");
    GgufBytes gap = ok;
    gap.tensors[1].offset = 64;
    expect_error_message<InputError>([&] { (void)parse(gap.bytes()); }, "x.gguf", "expected 32");
    GgufBytes past = ok;
    past.data_bytes = 40;
    expect_error_message<InputError>(
        [&] { (void)parse(past.bytes()); }, "x.gguf", "reach past the end");
    GgufBytes rows;
    rows.tensor("q", {33}, 8, 0);
    rows.data_bytes = 64;
    expect_error_message<InputError>(
        [&] { (void)parse(rows.bytes()); }, "x.gguf", "not a whole number of Q8_0 blocks");
    GgufBytes dims;
    dims.tensor("d", {1, 1, 1, 1, 1}, 0, 0);
    expect_error_message<InputError>([&] { (void)parse(dims.bytes()); }, "x.gguf", "5 dimensions");
    GgufBytes big;
    big.tensor("big", {1ULL << 40, 1ULL << 40}, 0, 0);
    expect_error_message<InputError>([&] { (void)parse(big.bytes()); }, "x.gguf", "overflow");
    GgufBytes align;
    align.kv_raw("general.alignment", 4, [](std::vector<std::uint8_t>& v) { put_u32(v, 48); });
    expect_error_message<InputError>(
        [&] { (void)parse(align.bytes()); }, "x.gguf", "not a power of two");
    GgufBytes align_type;
    align_type.kv_raw(
        "general.alignment", 10, [](std::vector<std::uint8_t>& v) { put_u64(v, 64); });
    expect_error_message<InputError>(
        [&] { (void)parse(align_type.bytes()); }, "x.gguf", "expected a uint32");
}

TEST(GgufHostile, MemoryLimitBeforeDequantizing) {
    GgufBytes g;
    g.tensor("w", {64, 64}, 0, 0);
    g.data_bytes = std::size_t{64} * 64 * 4;
    const auto bytes = g.bytes();
    const GgufHeader h = parse(bytes);
    const ScopedLimit limit(1024);
    expect_error_message<InputError>(
        [&] {
            (void)model::decode_gguf_tensor(
                h.tensors[0],
                std::span<const std::uint8_t>(bytes).subspan(h.data_start, h.tensors[0].bytes),
                "x.gguf");
        },
        "x.gguf: tensor 'w'",
        "memory limit");
}

} // namespace
} // namespace attn::testing

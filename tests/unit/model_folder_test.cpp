// The shard index reader (model::parse_safetensors_index), the np.savez writer (io::encode_npz)
// and the MLP activations against values written out by hand from their definitions.
#include "attn/io/npz.hpp"
#include "attn/model/folder.hpp"
#include "test_util.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace {

using attn::model::parse_safetensors_index;

TEST(SafetensorsIndex, ReadsTheWeightMap) {
    const auto m = parse_safetensors_index(
        R"({"metadata": {"total_size": 8}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors",
            "b.weight": "model-00002-of-00002.safetensors"}})",
        "index.json");
    ASSERT_EQ(m.size(), 2U);
    EXPECT_EQ(m.at("a.weight"), "model-00001-of-00002.safetensors");
    EXPECT_EQ(m.at("b.weight"), "model-00002-of-00002.safetensors");
}

TEST(SafetensorsIndex, RefusesWhatIsNotAnIndex) {
    EXPECT_INPUT_ERROR(parse_safetensors_index("[]", "i.json"), "i.json: expected a JSON object");
    EXPECT_INPUT_ERROR(parse_safetensors_index("{}", "i.json"), "weight_map");
    EXPECT_INPUT_ERROR(parse_safetensors_index(R"({"weight_map": {}})", "i.json"),
                       "names no tensor");
    EXPECT_INPUT_ERROR(parse_safetensors_index(R"({"weight_map": {"a": 3}})", "i.json"),
                       "expected a shard file name");
    EXPECT_INPUT_ERROR(
        parse_safetensors_index(R"({"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}})",
                                "i.json"),
        "twice");
    for (const char* bad : {"../x.safetensors", "d/x.safetensors", "x.bin", ".safetensors"}) {
        EXPECT_INPUT_ERROR(parse_safetensors_index(
                               std::string(R"({"weight_map": {"a": ")") + bad + "\"}}", "i.json"),
                           "is not a .safetensors file name");
    }
}

TEST(Npz, StoredArchiveLayout) {
    const std::vector<std::uint8_t> a = {1, 2, 3};
    const auto z = attn::io::encode_npz({{"output", a}});
    // local header + "output.npy" + data, central header + name, end record
    ASSERT_EQ(z.size(), 30U + 10U + 3U + 46U + 10U + 22U);
    EXPECT_EQ(z[0], 0x50);
    EXPECT_EQ(z[1], 0x4B);
    EXPECT_EQ(z[2], 0x03);
    EXPECT_EQ(z[3], 0x04);
    // CRC-32 of {1, 2, 3} is 0x55BC801D (zlib's crc32).
    EXPECT_EQ(z[14], 0x1D);
    EXPECT_EQ(z[15], 0x80);
    EXPECT_EQ(z[16], 0xBC);
    EXPECT_EQ(z[17], 0x55);
    EXPECT_EQ(std::string(z.begin() + 30, z.begin() + 40), "output.npy");
}

} // namespace

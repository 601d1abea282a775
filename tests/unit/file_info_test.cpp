// io::*_info: what `attn info` prints of an array, a .npz archive (numpy's savez fixture)
// and a .safetensors checkpoint (the tests' writer), as text and as one JSON line; which
// reader a path goes to; io::has_extension, the one extension test.
#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/model/file_info.hpp"
#include "unit/safetensors_bytes.hpp"
#include "unit/test_files.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace attn::model {
namespace {

using attn::testing::f32_safetensors;

TEST(HasExtension, EndsWithItInAnyCase) {
    EXPECT_TRUE(io::has_extension("m.gguf", ".gguf"));
    EXPECT_TRUE(io::has_extension("dir/M.GGUF", ".gguf"));
    EXPECT_TRUE(io::has_extension(".npz", ".npz"));
    EXPECT_FALSE(io::has_extension("npz", ".npz"));
    EXPECT_FALSE(io::has_extension("m.gguf.txt", ".gguf"));
    EXPECT_FALSE(io::has_extension("", ".npz"));
}

TEST(InfoKind, ByName) {
    EXPECT_EQ(info_kind("a/Model.GGUF"), InfoKind::gguf);
    EXPECT_EQ(info_kind("w.SafeTensors"), InfoKind::safetensors);
    EXPECT_EQ(info_kind("x.npz"), InfoKind::npz);
    EXPECT_EQ(info_kind("x.npz:query"), InfoKind::array); // one member
    EXPECT_EQ(info_kind("q.npy"), InfoKind::array);
    EXPECT_EQ(info_kind("-"), InfoKind::array);
}

TEST(ArrayInfo, ShapeDtypeAndElements) {
    io::Array a;
    a.shape = {2, 3};
    a.dtype = "float32";
    const FileInfo info = array_info("q.npy", a);
    EXPECT_EQ(info.text, "q.npy: shape [2, 3], dtype float32, 6 elements\n");
    EXPECT_EQ(info.json, "{\"file\":\"q.npy\",\"shape\":[2,3],\"dtype\":\"float32\"}\n");
}

TEST(ArrayInfo, JsonArraysSayWhatTheyHeldAndAScalarIsOneElement) {
    io::Array a;
    a.dtype = "json";
    a.is_bool = true;
    EXPECT_EQ(array_info("m.json", a).text, "m.json: shape [], dtype bool (JSON), 1 element\n");
    a.is_bool = false;
    a.shape = {0};
    EXPECT_EQ(array_info("m.json", a).text, "m.json: shape [0], dtype number (JSON), 0 elements\n");
    EXPECT_EQ(array_info("m.json", a).json,
              "{\"file\":\"m.json\",\"shape\":[0],\"dtype\":\"json\"}\n");
}

TEST(ArrayInfo, InvalidUtf8InTheNameIsReplacedInJson) {
    io::Array a;
    a.dtype = "bool";
    const FileInfo info = array_info("\xff.npy", a);
    EXPECT_EQ(info.json, "{\"file\":\"\xEF\xBF\xBD.npy\",\"shape\":[],\"dtype\":\"bool\"}\n");
}

TEST(NpzInfo, EveryMemberInArchiveOrder) {
    const std::string path = std::string(ATTN_SOURCE_DIR) + "/tests/unit/fixtures/savez.npz";
    const std::vector<FileInfo> infos = npz_info(path);
    const nlohmann::json members = attn::testing::fixture_json("npz_members.json");
    ASSERT_EQ(infos.size(), members.size());
    for (std::size_t i = 0; i < infos.size(); ++i) {
        const nlohmann::json j = nlohmann::json::parse(infos[i].json);
        EXPECT_EQ(j["file"], path + ":" + members[i]["name"].get<std::string>());
        EXPECT_EQ(j["shape"], members[i]["shape"]);
    }
    EXPECT_EQ(infos[0].text, path + ":f2: shape [3], dtype float16, 3 elements\n");
}

class SafetensorsInfo : public attn::testing::TempDirTest {};

TEST_F(SafetensorsInfo, ATableOfTensorsAndTheLayersFound) {
    const std::string pre = "model.layers.0.self_attn.";
    const std::vector<float> w(16, 0.25f);
    const std::string path = write("m.safetensors",
                                   f32_safetensors({{pre + "q_proj.weight", {4, 4}, w},
                                                    {pre + "k_proj.weight", {4, 4}, w},
                                                    {pre + "v_proj.weight", {4, 4}, w},
                                                    {pre + "o_proj.weight", {4, 4}, w}}))
                                 .string();
    const FileInfo info = safetensors_info(path);
    EXPECT_EQ(spell_options(info.text),
              path + ": safetensors, 4 tensors, 256 B of data\n"
                     "  model.layers.0.self_attn.k_proj.weight  F32   [4, 4]  64 B\n" // file order
                     "  model.layers.0.self_attn.o_proj.weight  F32   [4, 4]  64 B\n"
                     "  model.layers.0.self_attn.q_proj.weight  F32   [4, 4]  64 B\n"
                     "  model.layers.0.self_attn.v_proj.weight  F32   [4, 4]  64 B\n"
                     "attention layers (params: {\"file\", \"prefix\", \"layout\"}, or params "
                     "FILE prefix P layout L):\n"
                     "  llama      prefix 'model.layers.0.self_attn.'\n"
                     "model: llama, 1 layer, heads ?, kv heads ?, head dim ?, norm none, rope "
                     "yes (no config.json beside it: give num_heads)\n");
    const nlohmann::json j = nlohmann::json::parse(info.json);
    EXPECT_EQ(j["format"], "safetensors");
    EXPECT_EQ(j["tensors"].size(), 4U);
}

TEST_F(SafetensorsInfo, NoLayerRecognised) {
    const std::string path = write("x.safetensors", f32_safetensors({{"a", {2}, {1, 2}}})).string();
    EXPECT_EQ(safetensors_info(path).text,
              path + ": safetensors, 1 tensor, 8 B of data\n"
                     "  a     F32   [2]  8 B\n"
                     "no attention layer attn recognises (layouts attn, torch-mha, gpt2, llama, "
                     "bert)\n");
}

TEST_F(SafetensorsInfo, AModelFolderNeedsItsConfig) {
    write("model.safetensors", f32_safetensors({{"a", {2}, {1, 2}}}));
    attn::testing::expect_error_message<InputError>(
        [&] { model_folder_info(dir_.string()); }, dir_.string(), ": no config.json");
}

} // namespace
} // namespace attn::model

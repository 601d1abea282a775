// model::TensorSource's stored bytes, which a kernel computing on the stored type reads: a
// GGUF tensor's are the file's own bytes at the tensor's offset (read independently here),
// in the mapping (no copy), with ggml's type and the fix read() applies; a safetensors
// tensor's are the payload written, as ggml's type of its dtype, read from its shard (one
// file or an index's shards). And find() gives the shape read() gives.
#include "attn/error.hpp"
#include "attn/model/folder.hpp"
#include "attn/model/quants.hpp"
#include "safetensors_bytes.hpp"
#include "test_files.hpp"
#include "test_util.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <iterator>

namespace attn::testing {
namespace {

std::filesystem::path gguf_fixture(const std::string& name) {
    return std::filesystem::path(ATTN_SOURCE_DIR) / "tests" / "unit" / "fixtures" / "gguf" / name;
}

Bytes file_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Bytes bytes_in(std::span<const std::uint8_t> s) {
    return {s.begin(), s.end()};
}

TEST(GgmlTypeNamed, NamesAreGgmls) {
    EXPECT_EQ(model::ggml_type_named("F32"), 0U);
    EXPECT_EQ(model::ggml_type_named("F16"), 1U);
    EXPECT_EQ(model::ggml_type_named("Q4_K"), 12U);
    EXPECT_EQ(model::ggml_type_named("BF16"), 30U);
    EXPECT_EQ(model::ggml_type_named("F64"), 28U);
    EXPECT_FALSE(model::ggml_type_named("BOOL").has_value());
    EXPECT_FALSE(model::ggml_type_named("").has_value());
}

/// Every tensor of the GGUF: stored() is the file's bytes of the GGUF tensor, in place.
void expect_gguf_stored(const std::string& fixture) {
    SCOPED_TRACE(fixture);
    const std::filesystem::path path = gguf_fixture(fixture);
    const model::GgufModel gguf(path);
    const model::ModelFolder folder(path);
    EXPECT_EQ(folder.names(), gguf.names());
    const Bytes file = file_bytes(path);
    const model::GgufHeader& h = gguf.file().header();
    std::size_t fixed = 0;
    for (const std::string& name : folder.names()) {
        SCOPED_TRACE(name);
        const model::TensorInfo* info = folder.find(name);
        ASSERT_NE(info, nullptr);
        const model::GgufTensor& t = *h.find(gguf.source(name)->gguf_name);
        const std::optional<model::StoredTensor> s = folder.stored(name);
        ASSERT_TRUE(s.has_value());
        EXPECT_EQ(s->type, t.type);
        EXPECT_EQ(model::ggml_type_traits(s->type)->name, info->dtype);
        EXPECT_EQ(s->shape, t.shape);
        EXPECT_EQ(s->fix, gguf.source(name)->fix);
        EXPECT_EQ(s->holder, nullptr);
        const auto at = static_cast<std::ptrdiff_t>(h.data_start + t.offset);
        EXPECT_EQ(
            bytes_in(s->bytes),
            Bytes(file.begin() + at, file.begin() + at + static_cast<std::ptrdiff_t>(t.bytes)));
        EXPECT_EQ(folder.stored(name)->bytes.data(), s->bytes.data()) << "a copy, not the map";
        const io::Array read = folder.read(name);
        EXPECT_EQ(read.shape, info->shape);
        if (s->fix == model::StoredFix::transpose) {
            EXPECT_EQ(s->shape, (std::vector<std::size_t>{info->shape[1], info->shape[0]}));
        }
        if (s->fix != model::StoredFix::none) {
            ++fixed;
            continue;
        }
        EXPECT_EQ(s->shape, info->shape);
        // What read() gives is these bytes dequantized, nothing more.
        std::vector<float> values(read.values.size());
        model::dequantize_ggml(s->type, s->bytes, values);
        for (std::size_t i = 0; i < values.size(); ++i) {
            expect_same_float(values[i], read.values[i], i);
        }
    }
    if (fixture.find("quant") == std::string::npos) {
        EXPECT_GT(fixed, 0U) << "a converted model has tensors read() fixes";
    }
    EXPECT_INPUT_ERROR(folder.stored("nope.weight"), "no tensor 'nope.weight'");
    EXPECT_INPUT_ERROR(gguf.stored("nope.weight"), "no tensor 'nope.weight'");
}

TEST(TensorSourceStored, GgufBytesAreTheFilesInPlace) {
    for (const char* name : {"quant_models/llama.gguf",
                             "quant_models/qwen2.gguf",
                             "models/llama.gguf",
                             "models/gpt2.gguf",
                             "models/gemma.gguf"}) {
        expect_gguf_stored(name);
    }
}

class TensorSourceFolder : public TempDirTest {};

TEST_F(TensorSourceFolder, SafetensorsBytesAreThePayloadAsGgmlTypes) {
    const Bytes f32 = f32_bytes({1.0F, -2.0F, 0.5F, 3.0F, 4.0F, 5.0F}); // [2, 3]
    const Bytes f16 = u16_bytes({0x3c00, 0xc000, 0x3800, 0x7bff});      // [2, 2]
    const Bytes bf16 = u16_bytes({0x3f80, 0xc000, 0x3f00});             // [3]
    const Bytes u8 = {7, 9};                                            // [2]
    Bytes data = f32;
    for (const Bytes* b : {&f16, &bf16, &u8}) {
        data.insert(data.end(), b->begin(), b->end());
    }
    write("model.safetensors",
          file_of("{" + entry("a.weight", "F32", "[2,3]", 0, 24) + "," +
                      entry("b.weight", "F16", "[2,2]", 24, 32) + "," +
                      entry("c.weight", "BF16", "[3]", 32, 38) + "," +
                      entry("d.mask", "U8", "[2]", 38, 40) + "}",
                  data));
    const model::ModelFolder folder(dir_);
    EXPECT_FALSE(folder.gguf_config_text().has_value());
    EXPECT_EQ(folder.source().files(), folder.shards());
    const struct {
        const char* name;
        std::uint32_t type;
        std::vector<std::size_t> shape;
        const Bytes& bytes;
    } want[] = {
        {"a.weight", 0, {2, 3}, f32}, {"b.weight", 1, {2, 2}, f16}, {"c.weight", 30, {3}, bf16}};
    for (const auto& w : want) {
        SCOPED_TRACE(w.name);
        const std::optional<model::StoredTensor> s = folder.stored(w.name);
        ASSERT_TRUE(s.has_value());
        EXPECT_EQ(s->type, w.type);
        EXPECT_EQ(s->shape, w.shape);
        EXPECT_EQ(folder.find(w.name)->shape, w.shape);
        EXPECT_EQ(s->fix, model::StoredFix::none);
        EXPECT_EQ(bytes_in(s->bytes), w.bytes);
        EXPECT_EQ(s->holder, nullptr) << "a shard is mapped: no copy is held";
        EXPECT_EQ(folder.stored(w.name)->bytes.data(), s->bytes.data()) << "a copy, not the map";
    }
    EXPECT_FALSE(folder.stored("d.mask").has_value()) << "U8 is no ggml type";
    EXPECT_INPUT_ERROR(folder.stored("e.weight"), "no tensor 'e.weight'");
    const ScopedLimit limit(16); // less than a.weight's 24 bytes: in place, nothing allocated
    EXPECT_EQ(bytes_in(folder.stored("a.weight")->bytes), f32);
}

TEST_F(TensorSourceFolder, ShardedSafetensorsBytesComeFromTheirShard) {
    const Bytes one = f32_bytes({1.0F, 2.0F});
    const Bytes two = u16_bytes({0x3c00, 0x4000, 0x4200}); // F16 1, 2, 3
    write("model-00001-of-00002.safetensors",
          file_of("{" + entry("x.weight", "F32", "[2]", 0, 8) + "}", one));
    write("model-00002-of-00002.safetensors",
          file_of("{" + entry("y.weight", "F16", "[1,3]", 0, 6) + "}", two));
    write("model.safetensors.index.json",
          R"({"weight_map": {"x.weight": "model-00001-of-00002.safetensors",
                             "y.weight": "model-00002-of-00002.safetensors"}})");
    const model::SafetensorsFolder source(dir_);
    EXPECT_EQ(source.names(), (std::vector<std::string>{"x.weight", "y.weight"}));
    EXPECT_EQ(source.files().size(), 2U);
    EXPECT_EQ(bytes_in(source.stored("x.weight")->bytes), one);
    EXPECT_EQ(bytes_in(source.stored("y.weight")->bytes), two);
    EXPECT_EQ(source.stored("y.weight")->type, 1U);
    EXPECT_EQ(source.read("y.weight").values, (std::vector<float>{1.0F, 2.0F, 3.0F}));
    EXPECT_INPUT_ERROR(source.read("z"), "no tensor 'z'");
}

} // namespace
} // namespace attn::testing

// model::safetensors_summary: what `attn info` prints of a checkpoint, as data, for a Llama
// layer written by the tests' safetensors writer, with and without config.json beside it.
#include "attn/model/safetensors.hpp"
#include "attn/model/safetensors_summary.hpp"
#include "unit/safetensors_bytes.hpp"
#include "unit/test_files.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace attn::model {
namespace {

using attn::testing::f32_safetensors;

class SafetensorsSummary : public attn::testing::TempDirTest {
  protected:
    std::filesystem::path llama() const {
        const std::string pre = "model.layers.0.self_attn.";
        const std::vector<float> w(16, 0.25f);
        return write(
            "m.safetensors",
            f32_safetensors({{pre + "q_proj.weight", {4, 4}, w},
                             {pre + "k_proj.weight", {4, 4}, w},
                             {pre + "v_proj.weight", {4, 4}, w},
                             {pre + "o_proj.weight", {4, 4}, w},
                             {"model.layers.0.input_layernorm.weight", {4}, {1, 1, 1, 1}}}));
    }
};

TEST_F(SafetensorsSummary, TensorsLayersAndTheModel) {
    const std::filesystem::path path = llama();
    const SafetensorsFile file(path);
    const nlohmann::json j = safetensors_summary(path.string(), file.header());
    EXPECT_EQ(j["format"], "safetensors");
    ASSERT_EQ(j["tensors"].size(), 5U);
    EXPECT_EQ(j["tensors"][0]["name"], "model.layers.0.input_layernorm.weight"); // file order
    EXPECT_EQ(j["tensors"][0]["bytes"], 16);
    EXPECT_EQ(j["tensors"][1]["shape"], nlohmann::json({4, 4}));
    EXPECT_EQ(
        j["layers"],
        nlohmann::json::parse(R"([{"layout": "llama", "prefix": "model.layers.0.self_attn."}])"));
    const nlohmann::json& m = j["model"];
    EXPECT_EQ(m["layout"], "llama");
    EXPECT_EQ(m["layers"], 1);
    EXPECT_EQ(m["norm"], "rms_norm");
    EXPECT_EQ(m["rope"], true);
    EXPECT_TRUE(m["heads"].is_null()); // no config.json: unknown
    EXPECT_FALSE(m.contains("config"));
}

TEST_F(SafetensorsSummary, HeadsFromTheConfigBesideIt) {
    const std::filesystem::path path = llama();
    write("config.json",
          R"({"model_type": "llama", "num_attention_heads": 2, "num_key_value_heads": 1,
              "hidden_size": 4})");
    const SafetensorsFile file(path);
    const nlohmann::json m = safetensors_summary(path.string(), file.header())["model"];
    EXPECT_EQ(m["heads"], 2);
    EXPECT_EQ(m["kv_heads"], 1);
    EXPECT_EQ(m["head_dim"], 2);
    EXPECT_EQ(m["config"], (dir_ / "config.json").string());
}

TEST_F(SafetensorsSummary, NoLayerNoModel) {
    const std::filesystem::path path =
        write("x.safetensors", f32_safetensors({{"x", {2}, {1.0f, 2.0f}}}));
    const SafetensorsFile file(path);
    const nlohmann::json j = safetensors_summary(path.string(), file.header());
    EXPECT_TRUE(j["layers"].empty());
    EXPECT_FALSE(j.contains("model"));
}

} // namespace
} // namespace attn::model

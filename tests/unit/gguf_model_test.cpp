// A GGUF file read back as its Hugging Face model: tiny llama, qwen2, gemma, phi3, gpt2 and
// issue #36's twelve architectures' models converted by llama.cpp's own convert_hf_to_gguf.py
// classes (fixtures/gguf/models/, gguf_model_fixtures.py) give back the Hugging Face tensors bit
// for bit (Q/K un-permuted, Gemma's norm + 1 undone, GPT-2's Conv1D transposed back) and the
// config.json values the converter was given.
#include "attn/error.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/npz.hpp"
#include "attn/model/gguf_model.hpp"
#include "attn/model/hf_config.hpp"
#include "test_files.hpp"

#include <gtest/gtest.h>
#include <set>

namespace attn::testing {
namespace {

std::filesystem::path model_fixture(const std::string& name) {
    return std::filesystem::path(ATTN_SOURCE_DIR) / "tests" / "unit" / "fixtures" / "gguf" /
           "models" / name;
}

class GgufModelTest : public ::testing::TestWithParam<std::string> {};
class GgufModernTest : public ::testing::TestWithParam<std::string> {};

/// Every Hugging Face tensor of fixture `type` read back from its GGUF bit for bit.
void expect_hf_tensors(const std::string& type) {
    const model::GgufModel model(model_fixture(type + ".gguf"));
    const std::vector<std::uint8_t> npz = fixture_bytes("gguf/models/" + type + "_hf.npz");
    std::set<std::string> hf_names;
    for (const std::string& name : io::npz_members(npz, type + "_hf.npz")) {
        SCOPED_TRACE(name);
        hf_names.insert(name);
        const io::Array want = io::parse_npy(io::npz_member_bytes(npz, name, "hf"), name);
        const bool gemma = type == "gemma" || type == "gemma2" || type == "gemma3_text";
        if (gemma && name == "lm_head.weight") {
            EXPECT_EQ(model.find(name), nullptr) << "the converter drops Gemma's lm_head";
            continue;
        }
        const io::Array got = model.read(name);
        ASSERT_EQ(got.shape, want.shape);
        const bool plus_one = gemma && name.ends_with("norm.weight");
        for (std::size_t i = 0; i < got.values.size(); ++i) {
            // Gemma: the converter stored w + 1 in float32; (w + 1) - 1 is the best back.
            const float expected = plus_one ? (want.values[i] + 1.0F) - 1.0F : want.values[i];
            expect_same_float(got.values[i], expected, i);
        }
    }
    for (const std::string& name : model.names()) {
        if (hf_names.count(name) == 0) {
            EXPECT_EQ(name, "lm_head.weight") << "only GPT-2's tied output is extra";
            EXPECT_EQ(model.read(name).values, model.read("transformer.wte.weight").values);
        }
    }
}

TEST_P(GgufModelTest, TensorsAreTheHuggingFaceOnes) {
    expect_hf_tensors(GetParam());
    EXPECT_EQ(model::GgufModel(model_fixture(GetParam() + ".gguf")).architecture(), GetParam());
}

// Issue #36's architectures: experts read one slice of ffn_*_exps each, BLOOM's q|k|v
// regrouped per head, Gemma 2/3's sandwich and q/k norms minus 1, phi2/starcoder/falcon names.
TEST_P(GgufModernTest, TensorsAreTheHuggingFaceOnes) {
    const std::string type = GetParam();
    expect_hf_tensors(type);
    EXPECT_EQ(model::GgufModel(model_fixture(type + ".gguf")).architecture(),
              type == "falcon_grouped" ? "falcon" : type);
}

INSTANTIATE_TEST_SUITE_P(Converted,
                         GgufModernTest,
                         ::testing::Values("qwen3",
                                           "gemma2",
                                           "gemma3_text",
                                           "olmo2",
                                           "mixtral",
                                           "qwen2_moe",
                                           "phi",
                                           "starcoder2",
                                           "stablelm",
                                           "gpt_bigcode",
                                           "falcon",
                                           "falcon_grouped",
                                           "bloom"));

TEST(GgufModel, RegroupUndoesTheConvertersQkv) {
    // 2 heads, 1 kv head, head dim 1: file rows q0 q1 k v -> the group (q0 q1 k v); with
    // 2 kv heads (BLOOM: per head q, k, v): file q0 q1 k0 k1 v0 v1 -> q0 k0 v0 q1 k1 v1.
    EXPECT_EQ(model::regroup_qkv_row_map({4, 3}, 2, 1, "w"),
              (std::vector<std::size_t>{0, 1, 2, 3}));
    EXPECT_EQ(model::regroup_qkv_row_map({6}, 2, 2, "w"),
              (std::vector<std::size_t>{0, 2, 4, 1, 3, 5}));
    expect_error_message<InputError>(
        [&] { model::regroup_qkv_row_map({7}, 2, 2, "w"); }, "w", "q|k|v rows");
}

TEST_P(GgufModelTest, ConfigIsWhatTheConverterWasGiven) {
    const std::string type = GetParam();
    const model::GgufModel model(model_fixture(type + ".gguf"));
    const nlohmann::json given = fixture_json("gguf/models/" + type + "_config.json");
    const model::HfConfig got = model::parse_hf_config(model.config().dump(), type + ".gguf");
    const model::HfConfig want = model::parse_hf_config(given.dump(), type + "_config.json");
    EXPECT_EQ(got.model_type->value, want.model_type->value);
    EXPECT_EQ(got.num_heads->value, want.num_heads->value);
    EXPECT_EQ(got.num_kv_heads ? got.num_kv_heads->value : got.num_heads->value,
              want.num_kv_heads ? want.num_kv_heads->value : want.num_heads->value);
    EXPECT_EQ(model::hf_head_dim(got), model::hf_head_dim(want));
    EXPECT_EQ(got.hidden_size->value, want.hidden_size->value);
    EXPECT_EQ(got.num_layers->value, want.num_layers->value);
    EXPECT_EQ(got.vocab_size->value, want.vocab_size->value);
    EXPECT_EQ(got.norm_eps->value, want.norm_eps->value);
    if (type != "gpt2") {
        EXPECT_EQ(got.max_positions->value, want.max_positions->value);
        EXPECT_EQ(got.rope_theta ? got.rope_theta->value : 10000.0,
                  want.rope_theta ? want.rope_theta->value : 10000.0);
        EXPECT_FALSE(got.partial_rotary_factor.has_value());
    }
}

INSTANTIATE_TEST_SUITE_P(Converted,
                         GgufModelTest,
                         ::testing::Values("llama", "qwen2", "gemma", "phi3", "gpt2"));

TEST(GgufModel, UnpermuteUndoesTheConvertersPermute) {
    // LlamaModel.permute on 2 heads of 4 rows: rows (0 1 2 3) -> (0 2 1 3) per head.
    io::Array w;
    w.shape = {8};
    w.values = {0, 2, 1, 3, 4, 6, 5, 7};
    model::unpermute_rows(w, 2, "w");
    EXPECT_EQ(w.values, (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
    io::Array odd;
    odd.shape = {6, 1};
    odd.values.assign(6, 0.0F);
    expect_error_message<InputError>(
        [&] { model::unpermute_rows(odd, 2, "w"); }, "w", "heads of even size");
}

TEST(GgufModel, NamesLlamaCppDoesNotMapAreRefused) {
    EXPECT_FALSE(model::gguf_to_hf("llama", "rope_freqs.weight").has_value());
    EXPECT_FALSE(model::gguf_to_hf("llama", "blk.01.attn_q.weight").has_value());
    EXPECT_FALSE(model::gguf_to_hf("llama", "blk.0.attn_qkv.weight").has_value());
    const auto q = model::gguf_to_hf("llama", "blk.3.attn_q.bias");
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->first, "model.layers.3.self_attn.q_proj.bias");
    EXPECT_EQ(q->second.fix, model::GgufFix::unpermute_q);
    EXPECT_EQ(model::gguf_to_hf("qwen2", "blk.3.attn_q.weight")->second.fix, model::GgufFix::none);
    EXPECT_EQ(model::gguf_to_hf("gpt2", "blk.0.attn_qkv.bias")->second.fix, model::GgufFix::none);
    EXPECT_EQ(model::gguf_to_hf("mixtral", "blk.1.ffn_down_exps.weight")->first,
              "model.layers.1.block_sparse_moe.experts.{}.w2.weight");
    EXPECT_EQ(model::gguf_to_hf("bloom", "blk.0.attn_qkv.bias")->second.fix,
              model::GgufFix::regroup_qkv);
    EXPECT_FALSE(model::gguf_to_hf("llama", "blk.0.ffn_gate_exps.weight").has_value());
    EXPECT_EQ(model::gguf_hf_model_type("llama", true), "mixtral");
    EXPECT_EQ(model::gguf_hf_model_type("starcoder", false), "gpt_bigcode");
    EXPECT_FALSE(model::gguf_hf_model_type("mamba", false).has_value());
}

TEST(GgufModel, UnsupportedArchitectureIsNamed) {
    const model::GgufFile file(model_fixture("llama.gguf"));
    model::GgufHeader h = file.header();
    for (auto& [key, value] : h.metadata) {
        if (key == "general.architecture") {
            value.text = "mamba";
        }
    }
    expect_error_message<InputError>([&] { (void)model::gguf_hf_config(h, "m.gguf"); },
                                     "m.gguf",
                                     "architecture 'mamba' is not supported (GGUF architectures: "
                                     "llama (mixtral when it has experts), qwen2, qwen3, "
                                     "qwen2moe, olmo2, gemma, gemma2, gemma3, phi3, phi2, "
                                     "stablelm, starcoder2, gpt2, starcoder, bloom, falcon)");
}

} // namespace
} // namespace attn::testing

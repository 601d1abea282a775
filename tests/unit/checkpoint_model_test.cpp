// The model around a checkpoint layer: layer order, the block prefix.
#include "attn/model/checkpoint_model.hpp"

#include <gtest/gtest.h>

namespace {

attn::model::SafetensorsHeader header_of(const std::vector<std::string>& names) {
    attn::model::SafetensorsHeader h;
    for (const std::string& n : names) {
        attn::model::SafetensorsEntry e;
        e.name = n;
        h.tensors.push_back(e);
    }
    return h;
}

TEST(CheckpointModel, LayersInNumericOrder) {
    const auto layers = attn::model::checkpoint_layers(header_of({"h.10.attn.c_attn.weight",
                                                                  "h.2.attn.c_attn.weight",
                                                                  "h.2.attn.bias",
                                                                  "h.2.ln_1.weight",
                                                                  "wte.weight",
                                                                  "h.0.attn.c_attn.weight"}));
    ASSERT_TRUE(layers.has_value());
    EXPECT_EQ(layers->layout, attn::model::ParamsLayout::gpt2);
    EXPECT_EQ(layers->prefixes, (std::vector<std::string>{"h.0.attn.", "h.2.attn.", "h.10.attn."}));
}

TEST(CheckpointModel, MainLayoutHasTheMostLayers) {
    const auto layers = attn::model::checkpoint_layers(
        header_of({"bert.encoder.layer.1.attention.self.query.weight",
                   "bert.encoder.layer.0.attention.self.query.weight",
                   "pooler.w_q"}));
    ASSERT_TRUE(layers.has_value());
    EXPECT_EQ(layers->layout, attn::model::ParamsLayout::bert);
    EXPECT_EQ(layers->prefixes,
              (std::vector<std::string>{"bert.encoder.layer.0.attention.",
                                        "bert.encoder.layer.1.attention."}));
    EXPECT_FALSE(attn::model::checkpoint_layers(header_of({"wte.weight"})).has_value());
}

TEST(CheckpointModel, BlockPrefix) {
    EXPECT_EQ(attn::model::block_prefix("transformer.h.0.attn."), "transformer.h.0.");
    EXPECT_EQ(attn::model::block_prefix("model.layers.3.self_attn"), "model.layers.3.");
    EXPECT_EQ(attn::model::block_prefix("attn."), "");
    EXPECT_EQ(attn::model::block_prefix(""), "");
}

} // namespace

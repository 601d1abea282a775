// The numbered layers of a checkpoint (attn/model/checkpoint_layers.hpp) from tensor names,
// the "0,3,5-7" layer selection, and the varlen key rule (attn/visibility.hpp): batch b's
// rule is the rule of its real keys alone.
#include "attn/error.hpp"
#include "attn/model/checkpoint_layers.hpp"
#include "attn/visibility.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace attn {
namespace {

std::vector<std::string> gpt2_names(std::size_t layers) {
    std::vector<std::string> out = {"transformer.wte.weight", "transformer.ln_f.weight"};
    for (std::size_t l = 0; l < layers; ++l) {
        const std::string p = "transformer.h." + std::to_string(l) + ".";
        out.push_back(p + "attn.c_attn.weight");
        out.push_back(p + "attn.c_proj.weight");
        out.push_back(p + "ln_1.weight");
    }
    return out;
}

std::string error_of(const std::vector<std::string>& names) {
    try {
        model::checkpoint_layers(names, "params: m.safetensors");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

TEST(CheckpointLayers, NumbersFromTheNamesInOrder) {
    const auto layers = model::checkpoint_layers(gpt2_names(12), "m");
    ASSERT_EQ(layers.size(), 12U); // 10 sorts before 2 as text, not as a number
    for (std::size_t l = 0; l < 12; ++l) {
        EXPECT_EQ(layers[l].index, l);
        EXPECT_EQ(layers[l].prefix, "transformer.h." + std::to_string(l) + ".attn.");
        EXPECT_EQ(layers[l].layout, model::ParamsLayout::gpt2);
    }
}

TEST(CheckpointLayers, OneUnnumberedLayerIsLayerZero) {
    const auto layers = model::checkpoint_layers({"w_q", "w_k", "w_v"}, "m");
    ASSERT_EQ(layers.size(), 1U);
    EXPECT_EQ(layers[0].prefix, "");
}

TEST(CheckpointLayers, GapsAndCompetingPatternsAreRefused) {
    std::vector<std::string> gap = gpt2_names(3);
    gap.erase(std::remove_if(gap.begin(),
                             gap.end(),
                             [](const std::string& n) { return n.find(".h.1.") != n.npos; }),
              gap.end());
    EXPECT_EQ(error_of(gap),
              "params: m.safetensors: layer 1 is missing (no attention weights at prefix "
              "'transformer.h.1.attn.', but layer 2 exists): layers must be numbered 0 to N-1");
    std::vector<std::string> two = gpt2_names(2);
    two.emplace_back("decoder.layers.0.self_attn.q_proj.weight");
    EXPECT_NE(error_of(two).find("the attention layers follow 2 patterns"), std::string::npos)
        << error_of(two);
    // "prefix" picks one of them.
    EXPECT_EQ(model::checkpoint_layers(two, "m", std::nullopt, "decoder.").size(), 1U);
    EXPECT_EQ(model::checkpoint_layers(two, "m", "gpt2").size(), 2U);
    EXPECT_NE(error_of({"wte.weight"}).find("no attention weights"), std::string::npos);
}

TEST(LayerList, RangesAndErrors) {
    EXPECT_EQ(model::parse_layer_list("0,3,5-7", "--layers"),
              (std::vector<std::size_t>{0, 3, 5, 6, 7}));
    EXPECT_EQ(model::parse_layer_list(" 2 , 0 ", "--layers"), (std::vector<std::size_t>{2, 0}));
    for (const char* bad : {"", "1,", "3-1", "1,1", "a", "1-", "-1", "1;2", "9999999999"}) {
        EXPECT_THROW(model::parse_layer_list(bad, "--layers"), InputError) << bad;
    }
}

TEST(Varlen, BatchRuleIsTheRuleOfItsRealKeys) {
    const std::size_t lq = 3, lk = 8;
    Mask pad = Mask::from_shape({2, 1, 1, lk});
    for (std::size_t j = 0; j < lk; ++j) {
        pad(0, 0, 0, j) = 1;
        pad(1, 0, 0, j) = j < 5 ? 1 : 0;
    }
    AttentionSpec spec;
    spec.causal = Causal::bottom_right;
    spec.window = {1, -1};
    spec.key_padding = &pad;
    spec.varlen = true;
    for (std::size_t b = 0; b < 2; ++b) {
        const std::size_t n = b == 0 ? lk : 5;
        EXPECT_EQ(real_keys(&pad, b, lk), n);
        const KeyRule alone(Causal::bottom_right, spec.window, Align::top_left, lq, n);
        const KeyRule rule = key_rule(spec, b, lq, lk);
        const Visibility vis(spec, lq, lk);
        EXPECT_EQ(rule.diagonal_offset(), static_cast<std::int64_t>(n) - 3);
        for (std::size_t i = 0; i < lq; ++i) {
            for (std::size_t j = 0; j < lk; ++j) {
                const bool want = j < n && alone.sees(i, j);
                EXPECT_EQ(rule.sees(i, j) && j < n, want) << b << " " << i << " " << j;
                EXPECT_EQ(vis.sees(b, 0, i, j), want) << b << " " << i << " " << j;
            }
        }
    }
    spec.varlen = false;
    EXPECT_EQ(key_rule(spec, 1, lq, lk).diagonal_offset(), 5); // the padded Lk - Lq
}

} // namespace
} // namespace attn

// Tests of the checkpoint layouts in attn/model/safetensors.hpp: detection by the main weight,
// the mappings (Conv1D transposed, fused q|k|v split, GQA heads, llama names), the table of
// required projections and layout names, and which params name a checkpoint.
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

// ----------------------------------------------------------------------------------------
// Layouts
// ----------------------------------------------------------------------------------------

io::Array array(std::vector<std::size_t> shape, std::vector<float> values) {
    io::Array a;
    a.shape = std::move(shape);
    a.values = std::move(values);
    a.dtype = "float32";
    return a;
}

/// 0, 1, 2, ... in the given shape.
io::Array iota(std::vector<std::size_t> shape) {
    std::size_t n = 1;
    for (const std::size_t d : shape) {
        n *= d;
    }
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<float>(i);
    }
    return array(std::move(shape), std::move(v));
}

/// map_layout(layout, tensors, "params: m", prefix) must throw an InputError: one line,
/// starting "params: m: " and containing `needle`.
void expect_layout_error(ParamsLayout layout,
                         const std::map<std::string, io::Array>& tensors,
                         const std::string& prefix,
                         std::string_view needle) {
    expect_error(
        [&] { (void)map_layout(layout, tensors, "params: m", prefix); }, needle, "params: m: ");
}

TEST(SafetensorsLayout, DetectsLayoutsByTheirMainWeight) {
    using attn::model::detect_layouts;
    EXPECT_EQ(detect_layouts({"w_q", "b_q"}), std::vector<ParamsLayout>{ParamsLayout::attn});
    EXPECT_EQ(detect_layouts({"in_proj_weight"}),
              std::vector<ParamsLayout>{ParamsLayout::torch_mha});
    EXPECT_EQ(detect_layouts({"c_attn.weight", "bias"}),
              std::vector<ParamsLayout>{ParamsLayout::gpt2});
    EXPECT_EQ(detect_layouts({"q_proj.weight", "rotary_emb.inv_freq"}),
              std::vector<ParamsLayout>{ParamsLayout::llama});
    EXPECT_EQ(detect_layouts({"w_o", "q_proj.weight"}),
              (std::vector<ParamsLayout>{ParamsLayout::attn, ParamsLayout::llama}));
    EXPECT_TRUE(detect_layouts({"mlp.c_fc.weight", "b_q"}).empty());
}

TEST(SafetensorsLayout, Gpt2Conv1DIsTransposedAndSplitByColumns) {
    // c_attn.weight [in = 2, 3·out = 6]: q = columns 0-1, k = 2-3, v = 4-5, each transposed.
    std::map<std::string, io::Array> t;
    t.emplace("c_attn.weight", iota({2, 6}));
    t.emplace("c_attn.bias", iota({6}));
    t.emplace("c_proj.weight", iota({2, 3})); // [in 2, out 3] -> w_o [3, 2]
    const auto p = attn::model::map_layout(ParamsLayout::gpt2, t, "params: m", "h.0.attn.");
    ASSERT_TRUE(p.w_q && p.w_k && p.w_v && p.w_o && p.b_q && p.b_v);
    EXPECT_EQ(attn::shape_of(*p.w_q), (std::vector<std::size_t>{2, 2}));
    // W = [[0..5], [6..11]]; w_q = W[:, 0:2]ᵀ = [[0, 6], [1, 7]].
    EXPECT_EQ(std::vector<float>(p.w_q->begin(), p.w_q->end()), (std::vector<float>{0, 6, 1, 7}));
    EXPECT_EQ(std::vector<float>(p.w_v->begin(), p.w_v->end()), (std::vector<float>{4, 10, 5, 11}));
    EXPECT_EQ(std::vector<float>(p.b_k->begin(), p.b_k->end()), (std::vector<float>{2, 3}));
    EXPECT_EQ(attn::shape_of(*p.w_o), (std::vector<std::size_t>{3, 2}));
    EXPECT_EQ(std::vector<float>(p.w_o->begin(), p.w_o->end()),
              (std::vector<float>{0, 3, 1, 4, 2, 5}));
    EXPECT_FALSE(p.b_o);
}

TEST(SafetensorsLayout, TorchMhaFusedRowsAndSeparateWeights) {
    std::map<std::string, io::Array> t;
    t.emplace("in_proj_weight", iota({6, 2}));
    t.emplace("in_proj_bias", iota({6}));
    t.emplace("out_proj.weight", iota({2, 2}));
    auto p = attn::model::map_layout(ParamsLayout::torch_mha, t, "params: m", "");
    EXPECT_EQ(std::vector<float>(p.w_k->begin(), p.w_k->end()), (std::vector<float>{4, 5, 6, 7}));
    EXPECT_EQ(std::vector<float>(p.b_v->begin(), p.b_v->end()), (std::vector<float>{4, 5}));
    EXPECT_TRUE(p.w_o && !p.b_o);

    std::map<std::string, io::Array> s;
    s.emplace("q_proj_weight", iota({2, 2}));
    s.emplace("k_proj_weight", iota({2, 3}));
    s.emplace("v_proj_weight", iota({2, 1}));
    p = attn::model::map_layout(ParamsLayout::torch_mha, s, "params: m", "");
    EXPECT_EQ(attn::shape_of(*p.w_k), (std::vector<std::size_t>{2, 3}));
    EXPECT_FALSE(p.w_o);

    s.erase("v_proj_weight");
    expect_layout_error(ParamsLayout::torch_mha,
                        s,
                        "x.",
                        "params: m: layout torch-mha: missing tensor 'x.v_proj_weight'");
    t.emplace("bias_k", iota({1, 1, 2}));
    expect_layout_error(
        ParamsLayout::torch_mha,
        t,
        "",
        "params: m: tensor 'bias_k': add_bias_kv (an extra learned key/value row) is "
        "not supported");
}

TEST(SafetensorsLayout, LlamaNamesAndShapeErrors) {
    std::map<std::string, io::Array> t;
    t.emplace("q_proj.weight", iota({8, 4}));
    t.emplace("k_proj.weight", iota({4, 4}));
    t.emplace("v_proj.weight", iota({4, 4}));
    t.emplace("o_proj.weight", iota({4, 8}));
    t.emplace("q_proj.bias", iota({8}));
    const auto p = attn::model::map_layout(ParamsLayout::llama, t, "params: m", "model.layers.3.");
    EXPECT_TRUE(p.w_q && p.w_k && p.w_v && p.w_o && p.b_q && !p.b_k);
    EXPECT_EQ(attn::model::implied_num_kv_heads(p, 4), 2U); // head dim 2, k rows 4
    EXPECT_EQ(attn::model::implied_num_kv_heads(p, 8), 4U);
    EXPECT_EQ(attn::model::implied_num_kv_heads(p, 3), 3U); // 8 rows do not split in 3 heads
    EXPECT_EQ(attn::model::implied_num_kv_heads(p, 1), 1U); // head dim 8 > k rows

    t.erase("k_proj.bias");
    t.insert_or_assign("k_proj.weight", iota({4, 4, 1}));
    expect_layout_error(
        ParamsLayout::llama,
        t,
        "model.layers.3.",
        "params: m: tensor 'model.layers.3.k_proj.weight': expected a rank-2 [out, in] weight, "
        "got shape [4, 4, 1]");
    t.insert_or_assign("k_proj.weight", iota({4, 4}));
    t.insert_or_assign("q_proj.bias", iota({2, 4}));
    expect_layout_error(ParamsLayout::llama,
                        t,
                        "",
                        "tensor 'q_proj.bias': expected a rank-1 [out] bias, got shape [2, 4]");
}

TEST(SafetensorsLayout, TableRequiredProjectionsAndLayoutNames) {
    // llama needs q, k and v; the missing one is named with its layout.
    std::map<std::string, io::Array> t;
    t.emplace("q_proj.weight", iota({4, 4}));
    t.emplace("v_proj.weight", iota({4, 4}));
    expect_layout_error(
        ParamsLayout::llama, t, "x.", "params: m: layout llama: missing tensor 'x.k_proj.weight'");
    // attn: once one input projection is there, a missing one is named (never an
    // identity); a layer without any maps what it has.
    std::map<std::string, io::Array> a;
    a.emplace("w_q", iota({4, 4}));
    a.emplace("b_o", iota({4}));
    expect_layout_error(ParamsLayout::attn, a, "", "params: m: layout attn: missing tensor 'w_k'");
    a.erase("w_q");
    const auto p = attn::model::map_layout(ParamsLayout::attn, a, "params: m", "");
    EXPECT_TRUE(!p.w_q && !p.w_k && !p.w_v && !p.w_o && !p.b_q && p.b_o);
    // The names in messages come from the table, in its order.
    expect_error(
        [&] {
            std::vector<attn::io::ProblemSource> sources;
            (void)attn::model::load_checkpoint_params(
                json{{"file", "m.safetensors"}, {"layout", "t5"}}, ".", sources);
        },
        "params.layout: expected \"attn\", \"torch-mha\", \"gpt2\", \"llama\", \"bert\" or "
        "\"opt\", got "
        "\"t5\"",
        "params.layout: ");
}

TEST(SafetensorsLayout, RecognizesCheckpointParams) {
    using attn::model::is_checkpoint_params;
    EXPECT_TRUE(is_checkpoint_params(json("model.safetensors")));
    EXPECT_TRUE(is_checkpoint_params(json("dir/MODEL.SafeTensors")));
    EXPECT_TRUE(is_checkpoint_params(json{{"file", "x"}}));
    EXPECT_FALSE(is_checkpoint_params(json("params.json")));
    EXPECT_FALSE(is_checkpoint_params(json(".safetensor")));
    EXPECT_FALSE(is_checkpoint_params(json{{"w_q", json::array()}}));
    EXPECT_FALSE(is_checkpoint_params(json(3)));
}

} // namespace
} // namespace attn::model

// Masks and biases broadcast as F.scaled_dot_product_attention broadcasts them, and the
// rule that a blocked key contributes nothing: the kernels (every SIMD target, with and
// without weights, float64) against the float64 reference and against the same mask
// written out in full; the problem decoder's broadcast shapes, hints and warnings.
#include "attn/attention.hpp"
#include "attn/kernels.hpp"
#include "attn/problem/problem.hpp"
#include "reference/naive_attention.hpp"
#include "test_util.hpp"

#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

namespace attn {
namespace {

using nlohmann::json;
using testing::all_close;
using testing::f32_tol;
using testing::kInf;
using testing::kNaN;
using testing::random_mask;
using testing::random_tensor;
using testing::simd_label;
using testing::simd_targets;

/// `t` [.., .., 1|Lq, Lk] written out to [.., .., lq, Lk].
template <class T> xt::xtensor<T, 4> spread_queries(const xt::xtensor<T, 4>& t, std::size_t lq) {
    const auto& s = t.shape();
    auto out = xt::xtensor<T, 4>::from_shape({s[0], s[1], lq, s[3]});
    for (std::size_t b = 0; b < s[0]; ++b) {
        for (std::size_t h = 0; h < s[1]; ++h) {
            for (std::size_t i = 0; i < lq; ++i) {
                for (std::size_t j = 0; j < s[3]; ++j) {
                    out(b, h, i, j) = t(b, h, s[2] == 1 ? 0 : i, j);
                }
            }
        }
    }
    return out;
}

class Broadcast : public ::testing::TestWithParam<Simd> {};

TEST_P(Broadcast, QueryDimOfOneServesEveryQuery) {
    std::mt19937 rng(5);
    const std::size_t b = 2, h = 3, lq = 70, lk = 150, d = 8;
    const Tensor q = random_tensor(rng, {b, h, lq, d});
    const Tensor k = random_tensor(rng, {b, h, lk, d});
    const Tensor v = random_tensor(rng, {b, h, lk, 4});
    const Mask mask = random_mask(rng, {b, 1, 1, lk}, 0.6); // Hugging Face's extended mask
    Tensor bias = random_tensor(rng, {1, h, 1, lk});
    bias(0, 1, 0, 3) = -kInf;
    const Mask full_mask = spread_queries(mask, lq);
    const Tensor full_bias = spread_queries(bias, lq);
    for (const bool weights : {true, false}) {
        SCOPED_TRACE(weights ? "weights" : "streaming");
        const AttentionSpec spec{
            .keep_mask = &mask, .bias = &bias, .want_weights = weights, .simd = GetParam()};
        AttentionSpec full = spec;
        full.keep_mask = &full_mask;
        full.bias = &full_bias;
        const auto got = attend(q, k, v, spec);
        const auto want = reference::naive_attention(q, k, v, full);
        EXPECT_TRUE(all_close(got.output, want.output, f32_tol(lk), f32_tol(lk)));
        const auto same = attend(q, k, v, full);
        EXPECT_EQ(got.output, same.output); // read in place, the same arithmetic
        if (weights) {
            EXPECT_EQ(*got.weights, *same.weights);
        }
        EXPECT_EQ(got.rows_fully_masked, want.empty_rows);
    }
    // attend_check takes Lq or 1 there, nothing else.
    const Mask bad = random_mask(rng, {b, 1, 2, lk}, 0.5);
    EXPECT_INPUT_ERROR(attend(q, k, v, {.keep_mask = &bad, .simd = GetParam()}),
                       R"(mask: expected shape \[2, 3, 70, 150\], got \[2, 1, 2, 150\])");
}

TEST_P(Broadcast, BlockedKeysContributeNothingWhateverTheyHold) {
    std::mt19937 rng(9);
    const std::size_t lq = 5, lk = 140, d = 4;
    Tensor q = random_tensor(rng, {1, 2, lq, d});
    Tensor k = random_tensor(rng, {1, 2, lk, d});
    Tensor v = random_tensor(rng, {1, 2, lk, 3});
    // Key 10: NaN key, blocked by a -inf bias. Key 20: NaN value, blocked by the mask.
    // Key 30: inf value, blocked by padding. Key 139: NaN value, past the causal limit of
    // every row but the last (bottom-right) and in the same key block as visible keys.
    k(0, 1, 10, 2) = kNaN;
    v(0, 0, 20, 1) = kNaN;
    v(0, 1, 30, 0) = kInf;
    v(0, 0, 139, 2) = kNaN;
    Tensor bias = Tensor::from_shape({1, 1, 1, lk});
    bias.fill(0.0f);
    bias(0, 0, 0, 10) = -kInf;
    Mask mask = Mask::from_shape({1, 1, lq, lk});
    mask.fill(1);
    for (std::size_t i = 0; i < lq; ++i) {
        mask(0, 0, i, 20) = 0;
    }
    Mask pad = Mask::from_shape({1, 1, 1, lk});
    pad.fill(1);
    pad(0, 0, 0, 30) = 0;
    // The same problem with numbers at the blocked keys.
    Tensor k_ok = k, v_ok = v;
    k_ok(0, 1, 10, 2) = 0.5f;
    v_ok(0, 0, 20, 1) = 0.5f;
    v_ok(0, 1, 30, 0) = 0.5f;
    v_ok(0, 0, 139, 2) = 0.5f;
    for (const bool weights : {true, false}) {
        SCOPED_TRACE(weights ? "weights" : "no weights");
        const AttentionSpec spec{.causal = Causal::bottom_right,
                                 .keep_mask = &mask,
                                 .bias = &bias,
                                 .key_padding = &pad,
                                 .want_weights = weights,
                                 .simd = GetParam()};
        const auto got = attend(q, k, v, spec);
        // Without weights a NaN value sends attend() to the materialized kernel: the same
        // numbers as the streaming one within rounding, and the same bits as itself.
        const auto ok =
            weights ? attend(q, k_ok, v_ok, spec) : attend_materialized(q, k_ok, v_ok, spec);
        const auto want = reference::naive_attention(q, k, v, spec);
        const auto want_ok = reference::naive_attention(q, k_ok, v_ok, spec);
        for (std::size_t i = 0; i + 1 < lq; ++i) { // rows that do not see key 139
            for (std::size_t hd = 0; hd < 2; ++hd) {
                for (std::size_t x = 0; x < 3; ++x) {
                    EXPECT_EQ(got.output(0, hd, i, x), ok.output(0, hd, i, x))
                        << "head " << hd << " row " << i;
                    const std::size_t at = ((hd * lq) + i) * 3 + x;
                    EXPECT_NEAR(got.output(0, hd, i, x), want_ok.output[at], f32_tol(lk));
                    EXPECT_EQ(want.output[at], want_ok.output[at]);
                }
            }
        }
        // The last row sees key 139 (head 0): NaN there, as the reference says.
        EXPECT_TRUE(std::isnan(got.output(0, 0, lq - 1, 2)));
        EXPECT_TRUE(std::isnan(want.output[(0 * lq + lq - 1) * 3 + 2]));
        EXPECT_TRUE(std::isfinite(got.output(0, 1, lq - 1, 0)));
        if (weights) {
            EXPECT_EQ((*got.weights)(0, 1, 0, 10), 0.0f);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Kernels,
                         Broadcast,
                         ::testing::ValuesIn(simd_targets()),
                         [](const auto& param_info) { return simd_label(param_info.param); });

TEST(BroadcastF64, BlockedNaNAndQueryBroadcastInDouble) {
    BasicTensor<double> q = BasicTensor<double>::from_shape({1, 1, 3, 1});
    BasicTensor<double> k = BasicTensor<double>::from_shape({1, 1, 3, 1});
    BasicTensor<double> v = BasicTensor<double>::from_shape({1, 1, 3, 1});
    q.fill(1.0);
    k(0, 0, 0, 0) = 0.0;
    k(0, 0, 1, 0) = 1.0;
    k(0, 0, 2, 0) = std::nan("");
    v(0, 0, 0, 0) = 1.0;
    v(0, 0, 1, 0) = 2.0;
    v(0, 0, 2, 0) = std::nan("");
    BasicTensor<double> bias = BasicTensor<double>::from_shape({1, 1, 1, 3});
    bias.fill(0.0);
    bias(0, 0, 0, 2) = -std::numeric_limits<double>::infinity();
    const auto r = attend(q, k, v, {.scale = 1.0, .bias = &bias});
    const double w1 = std::exp(1.0) / (1.0 + std::exp(1.0));
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_NEAR(r.output(0, 0, i, 0), (1.0 - w1) * 1.0 + w1 * 2.0, 1e-15);
        EXPECT_EQ((*r.weights)(0, 0, i, 2), 0.0);
    }
}

// --- the problem decoder -----------------------------------------------------------------

problem::Problem decode(const json& doc) {
    return problem::decode_problem(doc, std::filesystem::temp_directory_path());
}

json qkv(std::size_t b, std::size_t h, std::size_t l, std::size_t d) {
    const json row = json(std::vector<float>(d, 0.5f));
    json x = json::array();
    for (std::size_t i = 0; i < b; ++i) {
        json heads = json::array();
        for (std::size_t j = 0; j < h; ++j) {
            heads.push_back(json(std::vector<json>(l, row)));
        }
        x.push_back(heads);
    }
    return x;
}

TEST(BroadcastDecode, ShapesLineUpFromTheRight) {
    const json base = {
        {"query", qkv(2, 4, 5, 8)}, {"key", qkv(2, 4, 5, 8)}, {"value", qkv(2, 4, 5, 8)}};
    const auto mask_shape = [&](const json& m) {
        json doc = base;
        doc["mask"] = m;
        return shape_of(*decode(doc).mask);
    };
    using S = std::vector<std::size_t>;
    const json keep5 = {true, true, true, false, true};
    EXPECT_EQ(mask_shape(json::array(
                  {json::array({json::array({keep5})}), json::array({json::array({keep5})})})),
              (S{2, 1, 1, 5})); // [2, 1, 1, 5]: no copy over heads and queries
    EXPECT_EQ(mask_shape(json::array({keep5})), (S{1, 1, 1, 5})); // [1, Lk]
    EXPECT_EQ(mask_shape(keep5), (S{1, 1, 1, 5}));                // [Lk]
    EXPECT_EQ(mask_shape(json::array({json::array({keep5}), json::array({keep5})})),
              (S{2, 1, 1, 5})); // rank 3 is [B, Lq, Lk]: [2, 1, 5]
    // A size-1 key dim is written out: [Lq, 1] -> [1, 1, Lq, Lk].
    const json col = json::array({json::array({true}),
                                  json::array({false}),
                                  json::array({true}),
                                  json::array({true}),
                                  json::array({true})});
    json doc = base;
    doc["mask"] = col;
    const auto p = decode(doc);
    EXPECT_EQ(shape_of(*p.mask), (S{1, 1, 5, 5}));
    EXPECT_EQ((*p.mask)(0, 0, 1, 3), 0);
    EXPECT_EQ((*p.mask)(0, 0, 2, 4), 1);
    // The same for a bias, which stays [B, 1, 1, Lk] (no [B, H, Lq, Lk] copy).
    doc = base;
    doc["bias"] = json::array({json::array({json::array({json::array({0, 0, 0, "-inf", 0})})}),
                               json::array({json::array({json::array({0, 0, 0, 0, 0})})})});
    EXPECT_EQ(shape_of(*decode(doc).bias), (S{2, 1, 1, 5}));
}

TEST(BroadcastDecode, RefusedShapesNameTheRule) {
    json doc = {{"query", qkv(2, 4, 7, 8)}, {"key", qkv(2, 4, 7, 8)}, {"value", qkv(2, 4, 7, 8)}};
    doc["mask"] = json::array({std::vector<int>(7, 1), std::vector<int>(7, 1)}); // [B, Lk]
    EXPECT_INPUT_ERROR(decode(doc),
                       testing::exactly("mask: expected shape [Lq, Lk] = [7, 7], got [2, 7] (any "
                                        "dim may be 1: it broadcasts); a [B, Lk] padding mask "
                                        "(Hugging Face's attention_mask) goes in "
                                        "key_padding_mask (--key-padding)"));
    doc.erase("mask");
    doc["bias"] = json::array({std::vector<int>(7, 0), std::vector<int>(7, 0)});
    EXPECT_INPUT_ERROR(decode(doc),
                       testing::exactly("bias: expected shape [Lq, Lk] = [7, 7], got [2, 7] (any "
                                        "dim may be 1: it broadcasts)"));
}

TEST(BroadcastDecode, PolarityWarningOnlyForPaddingShapedKeepMasks) {
    const json x = json::array({std::vector<float>{1, 0},
                                std::vector<float>{0, 1},
                                std::vector<float>{1, 1},
                                std::vector<float>{0, 0}});
    json doc = {{"input", x}};
    doc["key_padding_mask"] = {false, false, false, true};
    const auto inverted = decode(doc);
    ASSERT_EQ(inverted.warnings.size(), 1u);
    EXPECT_EQ(inverted.warnings[0].rfind("key_padding_mask: keeps only the last keys (or none) in "
                                         "1 of 1 rows, like an inverted padding mask; true/1 "
                                         "means keep here",
                                         0),
              0u)
        << inverted.warnings[0];
    doc["key_padding_mask"] = {true, true, true, false};
    EXPECT_TRUE(decode(doc).warnings.empty());
    doc["key_padding_mask"] = {false, false, true, true}; // half: not "more"
    EXPECT_TRUE(decode(doc).warnings.empty());
    doc["key_padding_mask"] = {true, false, false, false}; // right padding, mostly padded
    EXPECT_TRUE(decode(doc).warnings.empty());
    doc["key_padding_mask"] = {false, true, false, false}; // no padding pattern
    EXPECT_TRUE(decode(doc).warnings.empty());
    doc["key_padding_mask"] = {false, false, false, true};
    doc["mask_convention"] = "keep"; // said so
    EXPECT_TRUE(decode(doc).warnings.empty());
    doc.erase("key_padding_mask");
    doc.erase("mask_convention");
    doc["mask"] = json::array({json::array({true, false, false, false}),
                               json::array({false, true, false, false}),
                               json::array({false, false, true, false}),
                               json::array({false, false, false, true})});
    EXPECT_TRUE(decode(doc).warnings.empty()); // a full [Lq, Lk] pattern: not checked
    doc["mask"] = json::array({json::array({false, false, false, true})});
    EXPECT_EQ(decode(doc).warnings.size(), 1u); // [1, Lk]: one row for every query
}

TEST(BroadcastDecode, MissingInputProjectionIsAnErrorNullIsIdentity) {
    const json w = json::array({std::vector<float>{1, 2}, std::vector<float>{3, 4}});
    const json x = json::array({std::vector<float>{1, 0}, std::vector<float>{0, 1}});
    json doc = {{"input", x}, {"params", {{"w_q", w}, {"w_v", w}}}};
    EXPECT_INPUT_ERROR(decode(doc), R"(^params\.w_k: missing \(params gives w_q, w_v;)");
    doc["params"]["w_k"] = nullptr;
    const auto p = decode(doc);
    EXPECT_TRUE(p.projections->w_q && p.projections->w_v);
    EXPECT_FALSE(p.projections->w_k);
    doc["params"] = {{"w_o", w}}; // no input projection at all: fine
    EXPECT_FALSE(decode(doc).projections->w_q);
}

} // namespace
} // namespace attn

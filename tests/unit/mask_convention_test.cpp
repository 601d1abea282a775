// Tests of the mask conventions in attn/io/mask_convention.hpp: the polarity of keep and
// torch-mha, additive masks as keep-masks (only 0 and -inf) or as bias (anything else), the
// broadcasting sum of bias terms, and decode_problem combining them with the bias field.
// The numeric end-to-end checks live in tests/oracle/features_io_test.py.
#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/mask_convention.hpp"
#include "attn/problem/problem.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using attn::InputError;
using attn::io::Array;
using attn::io::decode_mask;
using attn::io::MaskConvention;
using nlohmann::json;

constexpr float inf = std::numeric_limits<float>::infinity();

Array array(std::vector<std::size_t> shape, std::vector<float> values, bool is_bool = false) {
    Array a;
    a.shape = std::move(shape);
    a.values = std::move(values);
    a.is_bool = is_bool;
    return a;
}

template <class T> std::vector<double> values_of(const T& t) {
    std::vector<double> out;
    for (const auto x : t) {
        out.push_back(static_cast<double>(x));
    }
    return out;
}

TEST(MaskConvention, KeepAndTorchMhaAreOpposites) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Array a = array({1, 5}, {0.0f, 1.0f, -2.0f, nan, -inf});
    const attn::Shape s{1, 1, 1, 5};
    const auto keep = decode_mask(a, s, MaskConvention::keep, "mask");
    const auto mha = decode_mask(a, s, MaskConvention::torch_mha, "mask");
    ASSERT_TRUE(keep.keep && mha.keep);
    EXPECT_FALSE(keep.bias || mha.bias);
    EXPECT_EQ(values_of(*keep.keep), (std::vector<double>{0, 1, 1, 1, 1}));
    EXPECT_EQ(values_of(*mha.keep), (std::vector<double>{1, 0, 0, 0, 0}));
}

TEST(MaskConvention, AdditiveZeroAndMinusInfinityIsAKeepMask) {
    const auto m = decode_mask(
        array({2, 2}, {0.0f, -inf, -0.0f, 0.0f}), {1, 1, 2, 2}, MaskConvention::additive, "mask");
    ASSERT_TRUE(m.keep);
    EXPECT_FALSE(m.bias);
    EXPECT_EQ(values_of(*m.keep), (std::vector<double>{1, 0, 1, 1}));
}

TEST(MaskConvention, AdditiveValuesAreABias) {
    const auto m = decode_mask(
        array({2, 2}, {0.0f, -inf, 0.5f, -1e4f}), {1, 1, 2, 2}, MaskConvention::additive, "mask");
    ASSERT_TRUE(m.bias);
    EXPECT_FALSE(m.keep);
    EXPECT_EQ(values_of(*m.bias), (std::vector<double>{0, -HUGE_VAL, 0.5, -1e4}));
}

TEST(MaskConvention, AdditiveRefusesBooleans) {
    EXPECT_INPUT_ERROR(
        (void)decode_mask(
            array({2}, {1, 0}, true), {1, 1, 1, 2}, MaskConvention::additive, "key_padding_mask"),
        attn::testing::exactly(
            "key_padding_mask: mask_convention \"additive\" takes numbers (0 = keep, "
            "-inf = block), got a boolean array"));
}

TEST(MaskConvention, NamesAreChecked) {
    EXPECT_EQ(attn::io::decode_mask_convention(json("torch-mha")), MaskConvention::torch_mha);
    EXPECT_EQ(attn::io::decode_mask_convention(json("keep")), MaskConvention::keep);
    EXPECT_EQ(attn::io::decode_mask_convention(json("additive")), MaskConvention::additive);
    EXPECT_INPUT_ERROR(
        (void)attn::io::decode_mask_convention(json(true)),
        attn::testing::exactly(
            "mask_convention: expected \"keep\", \"torch-mha\" or \"additive\", got true"));
}

TEST(MaskConvention, AddBiasBroadcastsBatchHeadsAndQueries) {
    std::optional<attn::Tensor> bias;
    attn::Tensor kpm = attn::Tensor::from_shape({2, 1, 1, 3}); // [B, 1, 1, Lk]
    std::copy_n(std::vector<float>{1, 2, 3, 10, 20, 30}.begin(), 6, kpm.begin());
    attn::io::add_bias(bias, kpm, 2, 3, "key_padding_mask");
    ASSERT_TRUE(bias);
    EXPECT_EQ(attn::shape_of(*bias), (std::vector<std::size_t>{2, 1, 2, 3}));
    attn::Tensor heads = attn::Tensor::from_shape({1, 2, 2, 3});
    std::fill(heads.begin(), heads.end(), 0.5f);
    heads(0, 1, 1, 2) = -inf;
    attn::io::add_bias(bias, heads, 2, 3, "mask");
    EXPECT_EQ(attn::shape_of(*bias), (std::vector<std::size_t>{2, 2, 2, 3}));
    EXPECT_EQ((*bias)(1, 0, 1, 2), 30.5f);
    EXPECT_EQ((*bias)(0, 1, 0, 0), 1.5f);
    EXPECT_EQ((*bias)(1, 1, 1, 2), -inf);
}

TEST(MaskConvention, AddBiasRefusesBuffersOverTheMemoryLimit) {
    const std::uint64_t old = attn::io::memory_limit();
    attn::io::set_memory_limit(1024);
    std::optional<attn::Tensor> bias;
    attn::Tensor kpm = attn::Tensor::from_shape({1, 1, 1, 100});
    std::fill(kpm.begin(), kpm.end(), 0.5f);
    EXPECT_INPUT_ERROR(
        attn::io::add_bias(bias, kpm, 100, 100, "key_padding_mask"),
        attn::testing::exactly(
            "key_padding_mask: mask_convention \"additive\" with values other than 0 "
            "and -inf needs a bias of shape [1, 1, 100, 100], 39.1 KiB, more than the "
            "memory limit of 1.0 KiB (--max-memory)"));
    attn::io::set_memory_limit(old);
    EXPECT_FALSE(bias);
}

TEST(MaskConvention, DecodeProblemSumsAdditiveMasksAndBias) {
    const json doc = {
        {"query", {{1, 0}, {0, 1}}},
        {"key", {{1, 0}, {0, 1}, {1, 1}}},
        {"value", {{1, 0}, {0, 1}, {1, 1}}},
        {"mask_convention", "additive"},
        {"mask", {{0.5, 0, "-inf"}, {0, 0, 0}}},
        {"bias", {{1, 1, 1}, {2, 2, 2}}},
        {"key_padding_mask", {0, "-inf", 0}},
    };
    const attn::problem::Problem p = attn::problem::decode_problem(doc, ".");
    EXPECT_FALSE(p.mask);       // the mask has a 0.5: it is a bias
    ASSERT_TRUE(p.key_padding); // 0 / -inf only: a keep-mask
    EXPECT_EQ(values_of(*p.key_padding), (std::vector<double>{1, 0, 1}));
    ASSERT_TRUE(p.bias);
    EXPECT_EQ(values_of(*p.bias), (std::vector<double>{1.5, 1, -HUGE_VAL, 2, 2, 2}));

    json mha = doc;
    mha["mask_convention"] = "torch-mha";
    mha["mask"] = {{true, false, false}, {false, false, true}};
    mha["key_padding_mask"] = {0, 1, 0};
    const attn::problem::Problem q = attn::problem::decode_problem(mha, ".");
    ASSERT_TRUE(q.mask && q.key_padding && q.bias);
    EXPECT_EQ(values_of(*q.mask), (std::vector<double>{0, 1, 1, 1, 1, 0}));
    EXPECT_EQ(values_of(*q.key_padding), (std::vector<double>{1, 0, 1}));
    EXPECT_EQ(values_of(*q.bias), (std::vector<double>{1, 1, 1, 2, 2, 2}));
}

} // namespace

// io::add_bias in float64 (precision f64): the broadcasting sum of additive masks and the
// bias, term by term in double, against values derived by hand from the definition
// bias[b, h, i, j] = sum of each term at (b|0, h|0, i|0, j). The float32 sum and its
// memory check are in mask_convention_test.cpp.
#include "attn/io/mask_convention.hpp"
#include "attn/tensor.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <limits>
#include <optional>
#include <vector>

namespace {

using Tensor64 = attn::BasicTensor<double>;
constexpr double inf64 = std::numeric_limits<double>::infinity();

TEST(AddBiasF64, BroadcastsBatchHeadsAndQueriesInDouble) {
    std::optional<Tensor64> bias;
    Tensor64 kpm = Tensor64::from_shape({2, 1, 1, 3}); // [B, 1, 1, Lk]
    const std::vector<double> padding{0.1, 2, 3, 10, 20, 30};
    std::copy(padding.begin(), padding.end(), kpm.begin());
    attn::io::add_bias(bias, kpm, 2, 3, "key_padding_mask");
    ASSERT_TRUE(bias);
    EXPECT_EQ(attn::shape_of(*bias), (std::vector<std::size_t>{2, 1, 2, 3}));
    EXPECT_EQ((*bias)(0, 0, 1, 0), 0.1); // every query row reads the one row
    EXPECT_EQ((*bias)(1, 0, 1, 2), 30.0);

    Tensor64 heads = Tensor64::from_shape({1, 2, 2, 3}); // [1, H, Lq, Lk]
    std::fill(heads.begin(), heads.end(), 0.2);
    heads(0, 1, 1, 2) = -inf64;
    attn::io::add_bias(bias, heads, 2, 3, "mask");
    EXPECT_EQ(attn::shape_of(*bias), (std::vector<std::size_t>{2, 2, 2, 3}));
    // 0.1 + 0.2 in double is 0.30000000000000004; through float32 it would not be.
    EXPECT_EQ((*bias)(0, 1, 1, 0), 0.1 + 0.2);
    EXPECT_NE((*bias)(0, 1, 1, 0), static_cast<double>(0.1f + 0.2f));
    EXPECT_EQ((*bias)(1, 0, 0, 1), 20.0 + 0.2);
    EXPECT_EQ((*bias)(0, 1, 0, 2), 3.0 + 0.2);
    EXPECT_EQ((*bias)(1, 1, 1, 2), -inf64);
    EXPECT_EQ((*bias)(0, 1, 1, 2), -inf64);
}

TEST(AddBiasF64, AFullSizeFirstTermIsTakenAsItIs) {
    std::optional<Tensor64> bias;
    Tensor64 full = Tensor64::from_shape({1, 2, 2, 3});
    for (std::size_t n = 0; n < full.size(); ++n) {
        full.data()[n] = 0.5 + static_cast<double>(n);
    }
    attn::io::add_bias(bias, full, 2, 3, "mask");
    ASSERT_TRUE(bias);
    EXPECT_EQ(attn::shape_of(*bias), (std::vector<std::size_t>{1, 2, 2, 3}));
    EXPECT_TRUE(std::equal(full.begin(), full.end(), bias->begin()));
}

} // namespace

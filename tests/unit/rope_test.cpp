// Rotary position embeddings: hand-derived rotations (90° turns through linear scaling,
// partial rotary dims, llama3's three bands), properties (each pair keeps its norm;
// <rope(q, m), rope(k, n)> depends only on m − n) and the refusals.
// The numpy oracle (tests/oracle/numerics_oracle.py) covers random shapes and settings.
#include "attn/error.hpp"
#include "attn/rope.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <numbers>
#include <random>
#include <string>

namespace {

using attn::BasicTensor;
using attn::RopeScalingType;
using attn::RopeSpec;
using attn::RopeStyle;
using attn::Tensor;
using attn::testing::message_of;

/// theta = 1 makes every inverse frequency 1; linear factor 2/π turns position 1 into 90°.
/// llama-3 frequency scaling: factor, low and high frequency factors, original context.
attn::RopeScaling llama3(double factor, double low, double high, double original) {
    return {.type = RopeScalingType::llama3,
            .factor = factor,
            .low_freq_factor = low,
            .high_freq_factor = high,
            .original_max_position_embeddings = original};
}

RopeSpec quarter_turn(RopeStyle style) {
    RopeSpec s;
    s.theta = 1.0;
    s.style = style;
    s.scaling.type = RopeScalingType::linear;
    s.scaling.factor = 2.0 / std::numbers::pi;
    return s;
}

TEST(Rope, QuarterTurnNeoxPairsHalves) {
    BasicTensor<double> x = {{{{1.0, 2.0, 3.0, 4.0}}}};
    const std::vector<std::int64_t> pos = {1};
    attn::apply_rope(x, quarter_turn(RopeStyle::neox), pos);
    // pairs (x0, x2) = (1, 3) -> (-3, 1); (x1, x3) = (2, 4) -> (-4, 2)
    EXPECT_TRUE(attn::testing::all_close(x, {-3.0, -4.0, 1.0, 2.0}, 0.0, 1e-15));
}

TEST(Rope, QuarterTurnInterleavedPairsNeighbours) {
    BasicTensor<double> x = {{{{1.0, 2.0, 3.0, 4.0}}}};
    const std::vector<std::int64_t> pos = {1};
    attn::apply_rope(x, quarter_turn(RopeStyle::interleaved), pos);
    // pairs (x0, x1) = (1, 2) -> (-2, 1); (x2, x3) = (3, 4) -> (-4, 3)
    EXPECT_TRUE(attn::testing::all_close(x, {-2.0, 1.0, -4.0, 3.0}, 0.0, 1e-15));
}

TEST(Rope, PositionTwoIsAHalfTurnAndZeroIsIdentity) {
    Tensor x = {{{{1.0f, 2.0f, 3.0f, 4.0f}, {1.0f, 2.0f, 3.0f, 4.0f}, {5.0f, 6.0f, 7.0f, 8.0f}}}};
    const std::vector<std::int64_t> pos = {0, 2, 4};
    attn::apply_rope(x, quarter_turn(RopeStyle::neox), pos);
    EXPECT_TRUE(attn::testing::all_close(x, {1, 2, 3, 4, -1, -2, -3, -4, 5, 6, 7, 8}, 0.0, 4e-6));
}

TEST(Rope, PartialRotaryLeavesTheTailAlone) {
    RopeSpec s = quarter_turn(RopeStyle::neox);
    s.dim = 4;
    BasicTensor<double> x = {{{{1.0, 2.0, 3.0, 4.0, 5.0, 6.0}}}};
    const std::vector<std::int64_t> pos = {1};
    attn::apply_rope(x, s, pos);
    // neox within the first 4: pairs (x0, x2), (x1, x3); x4, x5 untouched
    EXPECT_TRUE(attn::testing::all_close(x, {-3.0, -4.0, 1.0, 2.0, 5.0, 6.0}, 0.0, 1e-15));
}

TEST(Rope, DefaultFrequenciesAreThetaPowers) {
    RopeSpec s;
    s.theta = 10000.0;
    const auto inv = attn::rope_inverse_frequencies(s, 8);
    ASSERT_EQ(inv.size(), 4u);
    // 1 / 10000^(2i/8): 1, 0.1, 0.01, 0.001
    EXPECT_TRUE(attn::testing::all_close(inv, {1.0, 0.1, 0.01, 0.001}, 1e-15, 0.0));
}

TEST(Rope, Llama3ScalingKeepsHighDividesLowBlendsMiddle) {
    // theta = 100, Dr = 4: inv_freq 1 (wavelength 2π ≈ 6.28) and 0.1 (≈ 62.8).
    // original 32, low 1, high 8: high band below 4, low band above 32.
    RopeSpec s;
    s.theta = 100.0;
    s.scaling = llama3(8.0, 1.0, 8.0, 32.0);
    auto inv = attn::rope_inverse_frequencies(s, 4);
    // 2π: between 4 and 32 -> smooth = (32 / 2π - 1) / 7, f = (1 - smooth) / 8 + smooth
    const double smooth = (32.0 / (2.0 * std::numbers::pi) - 1.0) / 7.0;
    // 20π > 32: divided by 8
    EXPECT_TRUE(
        attn::testing::all_close(inv, {(1.0 - smooth) / 8.0 + smooth, 0.1 / 8.0}, 1e-14, 0));
    // original 3 (high band below 3/8, low above 3): 2π and 20π are both low -> / 8
    s.scaling.original_max_position_embeddings = 3.0;
    inv = attn::rope_inverse_frequencies(s, 4);
    EXPECT_TRUE(attn::testing::all_close(inv, {1.0 / 8.0, 0.1 / 8.0}, 1e-15, 0));
    // original 400 (high band below 50): 2π kept; 20π ≈ 62.8 in the middle
    s.scaling.original_max_position_embeddings = 400.0;
    inv = attn::rope_inverse_frequencies(s, 4);
    const double smooth2 = (400.0 / (20.0 * std::numbers::pi) - 1.0) / 7.0;
    EXPECT_TRUE(attn::testing::all_close(
        inv, {1.0, (1.0 - smooth2) * 0.1 / 8.0 + smooth2 * 0.1}, 1e-14, 0));
}

TEST(Rope, EachPairKeepsItsNorm) {
    std::mt19937 rng(7);
    for (RopeStyle style : {RopeStyle::neox, RopeStyle::interleaved}) {
        Tensor x = attn::testing::random_tensor(rng, {2, 3, 5, 8});
        const Tensor before = x;
        RopeSpec s;
        s.style = style;
        s.dim = 6;
        const std::vector<std::int64_t> pos = {0, 3, 17, 1000, 123456};
        attn::apply_rope(x, s, pos);
        for (std::size_t b = 0; b < 2; ++b) {
            for (std::size_t h = 0; h < 3; ++h) {
                for (std::size_t l = 0; l < 5; ++l) {
                    for (std::size_t p = 0; p < 3; ++p) {
                        const std::size_t i = style == RopeStyle::neox ? p : 2 * p;
                        const std::size_t j = style == RopeStyle::neox ? p + 3 : 2 * p + 1;
                        const auto n0 =
                            static_cast<double>(std::hypot(before(b, h, l, i), before(b, h, l, j)));
                        const auto n1 =
                            static_cast<double>(std::hypot(x(b, h, l, i), x(b, h, l, j)));
                        EXPECT_NEAR(n1, n0, 4e-7) << b << h << l << p;
                    }
                    EXPECT_EQ(x(b, h, l, 6), before(b, h, l, 6));
                    EXPECT_EQ(x(b, h, l, 7), before(b, h, l, 7));
                }
            }
        }
    }
}

double dot_after_rope(
    const RopeSpec& s, const BasicTensor<double>& q, const BasicTensor<double>& k, long m, long n) {
    BasicTensor<double> a = q, b = k;
    const std::vector<std::int64_t> pm = {m}, pn = {n};
    attn::apply_rope(a, s, pm);
    attn::apply_rope(b, s, pn);
    double d = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d += a.data()[i] * b.data()[i];
    }
    return d;
}

TEST(Rope, ScoresDependOnlyOnRelativePosition) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    BasicTensor<double> q = BasicTensor<double>::from_shape({1, 1, 1, 16}),
                        k = BasicTensor<double>::from_shape({1, 1, 1, 16});
    for (auto& v : q) {
        v = u(rng);
    }
    for (auto& v : k) {
        v = u(rng);
    }
    for (RopeStyle style : {RopeStyle::neox, RopeStyle::interleaved}) {
        RopeSpec s;
        s.style = style;
        s.dim = 12;
        s.scaling = llama3(8.0, 1.0, 4.0, 64.0);
        const double d0 = dot_after_rope(s, q, k, 7, 3);
        for (long shift : {1L, 10L, 500L, -3L}) {
            EXPECT_NEAR(dot_after_rope(s, q, k, 7 + shift, 3 + shift), d0, 1e-12) << shift;
        }
        // and it does depend on m - n
        EXPECT_GT(std::abs(dot_after_rope(s, q, k, 8, 3) - d0), 1e-3);
    }
}

TEST(Rope, PerBatchPositions) {
    // Two batch rows with swapped positions: row 1 equals row 0 rotated the other way.
    BasicTensor<double> x = {{{{1.0, 0.0}, {1.0, 0.0}}}, {{{1.0, 0.0}, {1.0, 0.0}}}};
    const std::vector<std::int64_t> pos = {0, 1, 1, 0};
    attn::apply_rope(x, quarter_turn(RopeStyle::neox), pos);
    EXPECT_TRUE(attn::testing::all_close(x, {1, 0, 0, 1, 0, 1, 1, 0}, 0.0, 1e-15));
}

TEST(Rope, DefaultPositionsPutQueriesLast) {
    const auto p = attn::rope_positions(2, 5);
    EXPECT_EQ(p.query, (std::vector<std::int64_t>{3, 4}));
    EXPECT_EQ(p.key, (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(attn::rope_positions(3, 3).query, (std::vector<std::int64_t>{0, 1, 2}));
    EXPECT_EQ(attn::rope_positions(2, 5, 10).query, (std::vector<std::int64_t>{10, 11}));
}

TEST(Rope, QueryAndKeyTogetherUseTheDefaults) {
    // One query (last of 3 keys) at position 2: a half turn under quarter_turn.
    BasicTensor<double> q = {{{{1.0, 0.0}}}};
    BasicTensor<double> k = {{{{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}}}};
    attn::apply_rope(q, k, quarter_turn(RopeStyle::neox), {});
    EXPECT_TRUE(attn::testing::all_close(q, {-1.0, 0.0}, 0.0, 1e-15));
    EXPECT_TRUE(attn::testing::all_close(k, {1, 0, 0, 1, -1, 0}, 0.0, 1e-15));
}

TEST(Rope, RefusesBadSpecsAndPositions) {
    Tensor x = Tensor::from_shape({1, 1, 3, 8});
    x.fill(1.0f);
    const std::vector<std::int64_t> three = {0, 1, 2};
    RopeSpec odd;
    odd.dim = 5;
    EXPECT_EQ(message_of([&] { attn::apply_rope(x, odd, three); }),
              "rope.dim: expected an even number from 2 to the head dim 8, got 5");
    RopeSpec wide;
    wide.dim = 10;
    EXPECT_NE(message_of([&] { attn::apply_rope(x, wide, three); }).find("got 10"),
              std::string::npos);
    RopeSpec zero_theta;
    zero_theta.theta = 0.0;
    EXPECT_EQ(message_of([&] { attn::apply_rope(x, zero_theta, three); }),
              "rope.theta: expected a finite number > 0, got 0");
    RopeSpec bad_band;
    bad_band.scaling = llama3(8.0, 4.0, 4.0, 8192.0);
    EXPECT_NE(message_of([&] {
                  attn::apply_rope(x, bad_band, three);
              }).find("rope.scaling.high_freq_factor"),
              std::string::npos);
    const std::vector<std::int64_t> two = {0, 1};
    EXPECT_EQ(message_of([&] { attn::apply_rope(x, RopeSpec{}, two); }),
              "rope.positions: expected 3 positions (one per row) or 3 ([batch, rows]), got 2");
    Tensor k = Tensor::from_shape({1, 1, 3, 6});
    EXPECT_NE(message_of([&] { attn::apply_rope(x, k, RopeSpec{}, {}); }).find("rope: keys"),
              std::string::npos);
}

} // namespace

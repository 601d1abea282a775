// LayerNorm, RMSNorm and embedding lookups: hand-derived rows, properties (LayerNorm
// gives mean 0 / variance 1 before the affine part; RMSNorm is scale invariant at
// eps = 0) and the refusals. Random cases: tests/oracle/numerics_oracle.py.
#include "attn/embedding.hpp"
#include "attn/error.hpp"
#include "attn/norm.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <string>

namespace {

using attn::testing::message_of;

TEST(Norm, LayerNormByHand) {
    // [1, 2, 3, 4]: mean 2.5, biased variance 1.25.
    const attn::BasicTensor3<double> x = {{{1.0, 2.0, 3.0, 4.0}}};
    const attn::BasicVector<double> w = {1.0, 1.0, 2.0, 1.0};
    const attn::BasicVector<double> b = {0.0, 0.5, 0.0, 0.0};
    const double s = std::sqrt(1.25 + 0.25);
    const auto y = attn::layer_norm(x, w, &b, 0.25);
    EXPECT_TRUE(attn::testing::all_close(
        y, {-1.5 / s, -0.5 / s + 0.5, 2 * 0.5 / s, 1.5 / s}, 1e-15, 1e-15));
}

TEST(Norm, RmsNormByHand) {
    // [3, 4]: mean of squares 12.5.
    const attn::Tensor3 x = {{{3.0f, 4.0f}}};
    const attn::Vector w = {1.0f, 0.5f};
    const auto y = attn::rms_norm(x, w, 0.0);
    const double r = std::sqrt(12.5);
    EXPECT_TRUE(attn::testing::all_close(y, {3.0 / r, 0.5 * 4.0 / r}, 1e-7, 0.0));
}

TEST(Norm, LayerNormRowsHaveMeanZeroVarianceOne) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-5.0f, 50.0f);
    attn::Tensor3 x = attn::Tensor3::from_shape({2, 3, 64});
    for (auto& v : x) {
        v = u(rng);
    }
    attn::Vector w = attn::Vector::from_shape({64});
    w.fill(1.0f);
    const auto y = attn::layer_norm(x, w, nullptr, 0.0);
    for (std::size_t r = 0; r < 6; ++r) {
        double sum = 0.0, sq = 0.0;
        for (std::size_t i = 0; i < 64; ++i) {
            const auto v = static_cast<double>(y.data()[r * 64 + i]);
            sum += v;
            sq += v * v;
        }
        EXPECT_NEAR(sum / 64.0, 0.0, 1e-6);
        EXPECT_NEAR(sq / 64.0, 1.0, 1e-6);
    }
}

TEST(Norm, RmsNormIsScaleInvariant) {
    std::mt19937 rng(5);
    const attn::BasicTensor3<double> x = [&] {
        attn::BasicTensor3<double> t = attn::BasicTensor3<double>::from_shape({1, 4, 16});
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        for (auto& v : t) {
            v = u(rng);
        }
        return t;
    }();
    attn::BasicVector<double> w = attn::BasicVector<double>::from_shape({16});
    for (std::size_t i = 0; i < 16; ++i) {
        w(i) = 0.1 * static_cast<double>(i) - 0.5;
    }
    const attn::BasicTensor3<double> scaled = x * 37.5;
    const auto a = attn::rms_norm(x, w, 0.0);
    const auto b = attn::rms_norm(scaled, w, 0.0);
    EXPECT_TRUE(attn::testing::all_close(b, std::vector<double>(a.begin(), a.end()), 1e-14, 1e-15));
}

TEST(Norm, ApplyNormDispatchesOnKind) {
    const attn::Tensor3 x = {{{3.0f, 4.0f}}};
    attn::Norm n{.kind = attn::NormKind::rms_norm, .weight = {1.0f, 1.0f}, .bias = {}, .eps = 0.0};
    const auto r = attn::apply_norm(x, n);
    EXPECT_NEAR(r(0, 0, 0), 3.0 / std::sqrt(12.5), 1e-6);
    n.kind = attn::NormKind::layer_norm;
    const auto l = attn::apply_norm(x, n);
    EXPECT_NEAR(l(0, 0, 0), -1.0, 1e-6);
}

TEST(Norm, RefusesWrongWeightLengthAndEps) {
    const attn::Tensor3 x = attn::Tensor3::from_shape({1, 2, 4});
    const attn::Vector w3 = {1.0f, 1.0f, 1.0f};
    EXPECT_EQ(message_of([&] { (void)attn::rms_norm(x, w3, 1e-6, "input_layernorm"); }),
              "input_layernorm.weight: expected shape [4], got [3]");
    const attn::Vector w4 = {1.0f, 1.0f, 1.0f, 1.0f};
    EXPECT_EQ(message_of([&] { (void)attn::layer_norm(x, w4, &w3, 1e-5, "ln_1"); }),
              "ln_1.bias: expected shape [4], got [3]");
    EXPECT_NE(message_of([&] {
                  (void)attn::layer_norm(x, w4, nullptr, -1.0, "ln_1");
              }).find("ln_1.eps: expected a finite number >= 0"),
              std::string::npos);
}

attn::BasicEmbeddings<double> tiny_tables() {
    attn::BasicEmbeddings<double> e;
    e.token = {{1.0, 2.0}, {10.0, 20.0}, {100.0, 200.0}}; // V = 3, E = 2
    e.position = attn::BasicMatrix<double>{{0.1, 0.2}, {0.3, 0.4}, {0.5, 0.6}};
    return e;
}

TEST(Embedding, TokenPlusPositionRows) {
    const attn::TokenIds ids = {{2, 0}, {1, 1}};
    const auto y = attn::embed(ids, tiny_tables());
    EXPECT_TRUE(
        attn::testing::all_close(y, {100.1, 200.2, 1.3, 2.4, 10.1, 20.2, 10.3, 20.4}, 1e-15, 0.0));
    const auto shifted = attn::embed(ids, tiny_tables(), 1);
    EXPECT_TRUE(attn::testing::all_close(
        shifted, {100.3, 200.4, 1.5, 2.6, 10.3, 20.4, 10.5, 20.6}, 1e-15, 0.0));
}

TEST(Embedding, BertAddsTokenTypeZeroThenNorms) {
    attn::BasicEmbeddings<double> e = tiny_tables();
    e.token_type = attn::BasicMatrix<double>{{1.0, -1.0}, {7.0, 7.0}};
    e.norm = attn::BasicNorm<double>{
        .kind = attn::NormKind::layer_norm, .weight = {1.0, 1.0}, .bias = {}, .eps = 0.0};
    const attn::TokenIds ids = {{0}};
    // 1 + 1 + 0.1 = 2.1, 2 - 1 + 0.2 = 1.2: any two distinct values normalise to -1, 1.
    const auto y = attn::embed(ids, e);
    EXPECT_TRUE(attn::testing::all_close(y, {1.0, -1.0}, 0.0, 1e-12));
}

TEST(Embedding, RefusesIdsAndPositionsOutOfRange) {
    const attn::TokenIds big = {{0, 3}};
    EXPECT_EQ(message_of([&] { (void)attn::embed(big, tiny_tables()); }),
              "token_ids: id 3 at [0, 1] is outside the vocabulary of 3 tokens");
    const attn::TokenIds negative = {{0}, {-1}};
    EXPECT_EQ(message_of([&] { (void)attn::embed(negative, tiny_tables()); }),
              "token_ids: id -1 at [1, 0] is outside the vocabulary of 3 tokens");
    const attn::TokenIds four = {{0, 0, 0, 0}};
    EXPECT_EQ(message_of([&] { (void)attn::embed(four, tiny_tables()); }),
              "token_ids: position 3 of token [0, 3] is outside the 3 position embeddings");
    const attn::TokenIds two = {{0, 0}};
    EXPECT_EQ(message_of([&] { (void)attn::embed(two, tiny_tables(), 2); }),
              "token_ids: position 3 of token [0, 1] is outside the 3 position embeddings");
    attn::BasicEmbeddings<double> llama;
    llama.token = tiny_tables().token;
    EXPECT_NO_THROW((void)attn::embed(four, llama)); // no position table: no limit
}

} // namespace

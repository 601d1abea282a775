// attend() against the float64 reference, and the properties the contract promises:
// rows sum to 1, masked weights exactly 0, empty rows zero, permutation equivariance,
// bias shift invariance, GQA == repeated heads, thread-count and weights-path invariance;
// each on every SIMD target this CPU runs.
#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/kernels.hpp"
#include "reference/naive_attention.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <numeric>

namespace attn {
namespace {

using namespace testing;

// Each property test runs once per SIMD target this CPU runs:
// Attention/AttentionTarget.<test>/<target>.
class AttentionTarget : public ::testing::TestWithParam<Simd> {};

// Sizes straddling the kernel's 64-row query block, and odd ones.
const std::size_t kSizes[] = {1, 2, 3, 63, 64, 65, 113, 130};

TEST_P(AttentionTarget, SeedWorkedExampleDotProduct) {
    // shared/seeds: queries, keys, values of the dot-product example, scale 1.
    Tensor q = Tensor::from_shape({1, 1, 2, 3});
    Tensor k = Tensor::from_shape({1, 1, 3, 3});
    Tensor v = Tensor::from_shape({1, 1, 3, 2});
    const float qv[] = {1, 0, 1, 0, 1, 1};
    const float kv[] = {1, 0, 1, 1, 1, 0, 0, 1, 1};
    const float vv[] = {10, 0, 0, 10, 5, 5};
    std::copy(std::begin(qv), std::end(qv), q.begin());
    std::copy(std::begin(kv), std::end(kv), k.begin());
    std::copy(std::begin(vv), std::end(vv), v.begin());
    const auto r = attend(q, k, v, {.scale = 1.0f, .simd = GetParam()});
    // scores [[2,1,1],[1,1,2]]: softmax gives e/(e+2) and 1/(e+2).
    const double e = std::exp(1.0);
    const double big = e / (e + 2), small = 1 / (e + 2);
    EXPECT_TRUE(all_close(*r.weights, {big, small, small, small, small, big}, 1e-6, 1e-7));
    EXPECT_TRUE(
        all_close(r.output,
                  {10 * big + 5 * small, 15 * small, 10 * small + 5 * big, 10 * small + 5 * big},
                  1e-6,
                  1e-6));
    EXPECT_NEAR((*r.weights)(0, 0, 0, 0), 0.5761169, 1e-6);
}

struct Case {
    std::size_t b, h, hkv, lq, lk, d, dv;
    Causal causal;
    bool mask, bias, padding;
};

void check_against_reference(const Case& c, unsigned seed, Simd simd) {
    std::mt19937 rng(seed);
    const Tensor q = random_tensor(rng, {c.b, c.h, c.lq, c.d});
    const Tensor k = random_tensor(rng, {c.b, c.hkv, c.lk, c.d});
    const Tensor v = random_tensor(rng, {c.b, c.hkv, c.lk, c.dv});
    const Mask mask = random_mask(rng, {c.b, 1, c.lq, c.lk}, 0.7);
    Tensor bias = random_tensor(rng, {1, c.h, c.lq, c.lk}, -2.0f, 2.0f);
    bias(0, 0, 0, 0) = -kInf;
    const Mask pad = random_mask(rng, {c.b, 1, 1, c.lk}, 0.8);
    AttentionSpec spec{.causal = c.causal,
                       .keep_mask = c.mask ? &mask : nullptr,
                       .bias = c.bias ? &bias : nullptr,
                       .key_padding = c.padding ? &pad : nullptr,
                       .simd = simd};
    const auto got = attend(q, k, v, spec);
    const auto want = reference::naive_attention(q, k, v, spec);
    const double tol = f32_tol(c.lk) + f32_tol(c.d);
    EXPECT_TRUE(all_close(*got.weights, want.weights, tol, tol));
    EXPECT_TRUE(all_close(got.output, want.output, tol, tol));
    EXPECT_EQ(got.rows_fully_masked, want.empty_rows);
}

TEST_P(AttentionTarget, MatchesReferenceAcrossSizesAndMasks) {
    unsigned seed = 1;
    for (std::size_t lq : kSizes) {
        for (std::size_t lk : {std::size_t{1}, std::size_t{64}, std::size_t{65}, lq}) {
            for (Causal causal : {Causal::none, Causal::top_left, Causal::bottom_right}) {
                SCOPED_TRACE("lq=" + std::to_string(lq) + " lk=" + std::to_string(lk) +
                             " causal=" + std::to_string(static_cast<int>(causal)));
                check_against_reference(
                    {2, 2, 1, lq, lk, 8, 5, causal, false, false, false}, seed++, GetParam());
                check_against_reference(
                    {1, 4, 2, lq, lk, 16, 16, causal, true, true, true}, seed++, GetParam());
            }
        }
    }
}

TEST_P(AttentionTarget, RowsSumToOneAndMaskedWeightsAreExactlyZero) {
    std::mt19937 rng(7);
    for (std::size_t n : kSizes) {
        const Tensor q = random_tensor(rng, {1, 2, n, 8}, -3, 3);
        const Tensor k = random_tensor(rng, {1, 2, n, 8}, -3, 3);
        const Tensor v = random_tensor(rng, {1, 2, n, 4});
        const Mask mask = random_mask(rng, {1, 2, n, n}, 0.5);
        const auto r =
            attend(q, k, v, {.causal = Causal::top_left, .keep_mask = &mask, .simd = GetParam()});
        const auto& w = *r.weights;
        for (std::size_t h = 0; h < 2; ++h) {
            for (std::size_t i = 0; i < n; ++i) {
                double sum = 0.0;
                bool any = false;
                for (std::size_t j = 0; j < n; ++j) {
                    const bool blocked = j > i || mask(0, h, i, j) == 0;
                    if (blocked) {
                        ASSERT_EQ(w(0, h, i, j), 0.0f) << "h=" << h << " i=" << i << " j=" << j;
                    } else {
                        any = true;
                    }
                    sum += static_cast<double>(w(0, h, i, j));
                }
                EXPECT_NEAR(sum, any ? 1.0 : 0.0, 4 * 1.2e-7 * static_cast<double>(n));
            }
        }
    }
}

TEST_P(AttentionTarget, FullyMaskedRowsGiveZerosAndAreCounted) {
    std::mt19937 rng(3);
    const Tensor q = random_tensor(rng, {2, 1, 5, 4});
    const Tensor k = random_tensor(rng, {2, 1, 6, 4});
    Tensor v = random_tensor(rng, {2, 1, 6, 3});
    v(0, 0, 2, 1) = std::numeric_limits<float>::quiet_NaN(); // must not leak into empty rows
    Mask mask = Mask::from_shape({2, 1, 5, 6});
    mask.fill(1);
    for (std::size_t j = 0; j < 6; ++j) {
        mask(0, 0, 1, j) = 0; // row 1 of batch 0 sees nothing
        mask(1, 0, 4, j) = 0; // row 4 of batch 1 sees nothing
    }
    Tensor bias = Tensor::from_shape({1, 1, 5, 6});
    bias.fill(0.0f);
    for (std::size_t j = 0; j < 6; ++j) {
        bias(0, 0, 3, j) = -kInf; // row 3 of every batch: -inf bias everywhere
    }
    const auto r = attend(q, k, v, {.keep_mask = &mask, .bias = &bias, .simd = GetParam()});
    EXPECT_EQ(r.rows_fully_masked, 4);
    for (auto [b, i] : {std::pair{0, 1}, std::pair{1, 4}, std::pair{0, 3}, std::pair{1, 3}}) {
        for (std::size_t j = 0; j < 6; ++j) {
            EXPECT_EQ((*r.weights)(b, 0, i, j), 0.0f);
        }
        for (std::size_t x = 0; x < 3; ++x) {
            EXPECT_EQ(r.output(b, 0, i, x), 0.0f);
        }
    }
}

TEST_P(AttentionTarget, BottomRightCausalWithMoreQueriesThanKeys) {
    std::mt19937 rng(4);
    const Tensor q = random_tensor(rng, {1, 1, 7, 4});
    const Tensor k = random_tensor(rng, {1, 1, 5, 4});
    const Tensor v = random_tensor(rng, {1, 1, 5, 3});
    const auto r = attend(q, k, v, {.causal = Causal::bottom_right, .simd = GetParam()});
    // query i sees j <= i + 5 - 7 = i - 2: rows 0 and 1 see nothing.
    EXPECT_EQ(r.rows_fully_masked, 2);
    EXPECT_EQ((*r.weights)(0, 0, 2, 0), 1.0f);
    EXPECT_EQ((*r.weights)(0, 0, 2, 1), 0.0f);
    const auto want = reference::naive_attention(q, k, v, {.causal = Causal::bottom_right});
    EXPECT_TRUE(all_close(r.output, want.output, f32_tol(5), f32_tol(5)));
}

TEST_P(AttentionTarget, PermutingKeysAndValuesPermutesWeightColumns) {
    std::mt19937 rng(11);
    const std::size_t lq = 9, lk = 70;
    const auto [q, k, v] = random_qkv(rng, {1, 2, lq, 8}, {1, 2, lk, 8}, 5);
    const std::vector<std::size_t> perm = random_permutation(rng, lk);
    Tensor kp = k, vp = v;
    for (std::size_t h = 0; h < 2; ++h) {
        for (std::size_t j = 0; j < lk; ++j) {
            for (std::size_t x = 0; x < 8; ++x) {
                kp(0, h, j, x) = k(0, h, perm[j], x);
            }
            for (std::size_t x = 0; x < 5; ++x) {
                vp(0, h, j, x) = v(0, h, perm[j], x);
            }
        }
    }
    const auto a = attend(q, k, v, {.simd = GetParam()});
    const auto b = attend(q, kp, vp, {.simd = GetParam()});
    std::vector<double> expect_w;
    for (std::size_t h = 0; h < 2; ++h) {
        for (std::size_t i = 0; i < lq; ++i) {
            for (std::size_t j = 0; j < lk; ++j) {
                expect_w.push_back(static_cast<double>((*a.weights)(0, h, i, perm[j])));
            }
        }
    }
    EXPECT_TRUE(all_close(*b.weights, expect_w, 1e-6, 1e-7));
    std::vector<double> expect_o(a.output.begin(), a.output.end());
    EXPECT_TRUE(all_close(b.output, expect_o, f32_tol(lk), f32_tol(lk)));
}

TEST_P(AttentionTarget, PermutingQueriesPermutesOutputRows) {
    std::mt19937 rng(12);
    const std::size_t lq = 67, lk = 20;
    const auto [q, k, v] = random_qkv(rng, {1, 1, lq, 8}, {1, 1, lk, 8}, 3);
    const std::vector<std::size_t> perm = random_permutation(rng, lq);
    Tensor qp = q;
    for (std::size_t i = 0; i < lq; ++i) {
        for (std::size_t x = 0; x < 8; ++x) {
            qp(0, 0, i, x) = q(0, 0, perm[i], x);
        }
    }
    const auto a = attend(q, k, v, {.simd = GetParam()});
    const auto b = attend(qp, k, v, {.simd = GetParam()});
    std::vector<double> expect;
    for (std::size_t i = 0; i < lq; ++i) {
        for (std::size_t x = 0; x < 3; ++x) {
            expect.push_back(static_cast<double>(a.output(0, 0, perm[i], x)));
        }
    }
    EXPECT_TRUE(all_close(b.output, expect, f32_tol(lk), f32_tol(lk)));
}

TEST_P(AttentionTarget, ConstantBiasShiftPerRowChangesNothing) {
    std::mt19937 rng(13);
    const Tensor q = random_tensor(rng, {1, 1, 10, 8});
    const Tensor k = random_tensor(rng, {1, 1, 12, 8});
    const Tensor v = random_tensor(rng, {1, 1, 12, 4});
    Tensor bias = random_tensor(rng, {1, 1, 10, 12});
    Tensor shifted = bias;
    for (std::size_t i = 0; i < 10; ++i) {
        for (std::size_t j = 0; j < 12; ++j) {
            shifted(0, 0, i, j) += static_cast<float>(i) * 3.0f + 5.0f;
        }
    }
    const auto a = attend(q, k, v, {.bias = &bias, .simd = GetParam()});
    const auto b = attend(q, k, v, {.bias = &shifted, .simd = GetParam()});
    std::vector<double> wa(a.weights->begin(), a.weights->end());
    EXPECT_TRUE(all_close(*b.weights, wa, 1e-5, 1e-6));
}

TEST_P(AttentionTarget, GroupedQueryEqualsRepeatedHeads) {
    std::mt19937 rng(14);
    const std::size_t h = 6, hkv = 2, lq = 33, lk = 65;
    const auto [q, k, v] = random_qkv(rng, {2, h, lq, 8}, {2, hkv, lk, 8}, 4);
    const auto a = attend(q, k, v, {.causal = Causal::top_left, .simd = GetParam()});
    const auto b = attend(q,
                          repeat_heads(k, h),
                          repeat_heads(v, h),
                          {.causal = Causal::top_left, .simd = GetParam()});
    EXPECT_EQ(a.output, b.output);
    EXPECT_EQ(*a.weights, *b.weights);
}

TEST_P(AttentionTarget, ResultsDoNotDependOnThreadsOrOnKeepingWeights) {
    std::mt19937 rng(15);
    const Tensor q = random_tensor(rng, {2, 3, 130, 16});
    const Tensor k = random_tensor(rng, {2, 3, 77, 16});
    const Tensor v = random_tensor(rng, {2, 3, 77, 8});
    const auto one =
        attend(q, k, v, {.causal = Causal::bottom_right, .threads = 1, .simd = GetParam()});
    for (unsigned t : {2u, 3u, 5u}) {
        const auto many =
            attend(q, k, v, {.causal = Causal::bottom_right, .threads = t, .simd = GetParam()});
        EXPECT_EQ(one.output, many.output) << t << " threads";
        EXPECT_EQ(*one.weights, *many.weights) << t << " threads";
    }
    // Without weights attend() streams: a different summation order, so agreement is
    // within float32 tolerance (streaming_test.cpp pins it over many sizes).
    const auto lean = attend(
        q,
        k,
        v,
        {.causal = Causal::bottom_right, .want_weights = false, .threads = 2, .simd = GetParam()});
    EXPECT_FALSE(lean.weights.has_value());
    const std::vector<double> want(one.output.begin(), one.output.end());
    EXPECT_TRUE(all_close(lean.output, want, f32_tol(77), f32_tol(77)));
}

TEST_P(AttentionTarget, KeyValueBatchOfOneBroadcasts) {
    std::mt19937 rng(16);
    const Tensor q = random_tensor(rng, {3, 2, 5, 4});
    const Tensor k = random_tensor(rng, {1, 2, 6, 4});
    const Tensor v = random_tensor(rng, {1, 2, 6, 3});
    const auto r = attend(q, k, v, {.simd = GetParam()});
    const auto want = reference::naive_attention(q, k, v, {});
    EXPECT_TRUE(all_close(r.output, want.output, f32_tol(6), f32_tol(6)));
}

TEST_P(AttentionTarget, NonFiniteInputsPropagateAsInPyTorch) {
    std::mt19937 rng(17);
    Tensor q = random_tensor(rng, {1, 1, 2, 4});
    const Tensor k = random_tensor(rng, {1, 1, 3, 4});
    const Tensor v = random_tensor(rng, {1, 1, 3, 2});
    q(0, 0, 0, 1) = std::numeric_limits<float>::quiet_NaN();
    const auto r = attend(q, k, v, {.simd = GetParam()});
    EXPECT_TRUE(std::isnan(r.output(0, 0, 0, 0)));
    EXPECT_FALSE(std::isnan(r.output(0, 0, 1, 0)));
    EXPECT_EQ(r.rows_fully_masked, 0);
}

TEST_P(AttentionTarget, EmptyKeysGiveZeroRows) {
    const Tensor q = Tensor::from_shape({1, 1, 3, 4});
    const Tensor k = Tensor::from_shape({1, 1, 0, 4});
    const Tensor v = Tensor::from_shape({1, 1, 0, 2});
    Tensor qq = q;
    qq.fill(1.0f);
    const auto r = attend(qq, k, v, {.simd = GetParam()});
    EXPECT_EQ(r.rows_fully_masked, 3);
    for (float x : r.output) {
        EXPECT_EQ(x, 0.0f);
    }
}

// Zero-width features (D = 0: every score 0, uniform weights; Dv = 0: an empty output)
// with more keys and values than one tile of any target: empty operands are null pointers,
// and no kernel may form null plus an offset from them (clang's UBSan stops there; the
// AVX2 tile width once did, from a fuzz input `{"input": [[]], ...}`).
TEST_P(AttentionTarget, ZeroWidthFeaturesFormNoPointerFromNull) {
    std::mt19937 rng(18);
    const Tensor q = Tensor::from_shape({1, 2, 37, 0});
    const Tensor k = Tensor::from_shape({1, 2, 70, 0});
    const Tensor v = random_tensor(rng, {1, 2, 70, 33});
    for (const bool want_weights : {true, false}) {
        const auto r =
            attend(q, k, v, {.scale = 1.0f, .want_weights = want_weights, .simd = GetParam()});
        for (std::size_t h = 0; h < 2; ++h) {
            for (std::size_t c = 0; c < 33; ++c) {
                double mean = 0;
                for (std::size_t j = 0; j < 70; ++j) {
                    mean += static_cast<double>(v(0, h, j, c)) / 70.0;
                }
                for (std::size_t i = 0; i < 37; ++i) {
                    EXPECT_NEAR(r.output(0, h, i, c), mean, 1e-5) << want_weights;
                }
            }
        }
        if (want_weights) {
            for (const float w : *r.weights) {
                EXPECT_NEAR(w, 1.0f / 70.0f, 1e-7f);
            }
        }
    }
    const Tensor v0 = Tensor::from_shape({1, 2, 70, 0});
    const Tensor q1 = random_tensor(rng, {1, 2, 37, 20});
    const Tensor k1 = random_tensor(rng, {1, 2, 70, 20});
    for (const bool want_weights : {true, false}) {
        const auto r = attend(q1, k1, v0, {.want_weights = want_weights, .simd = GetParam()});
        EXPECT_EQ(r.output.size(), 0U);
    }
}

TEST(Attention, ShapeErrorsNameTheArgumentAndBothShapes) {
    const Tensor q = Tensor::from_shape({2, 8, 128, 64});
    const Tensor k_bad = Tensor::from_shape({2, 8, 128, 32});
    const Tensor k = Tensor::from_shape({2, 8, 128, 64});
    const Tensor v = Tensor::from_shape({2, 8, 128, 64});
    const Tensor v_bad = Tensor::from_shape({2, 8, 127, 64});
    EXPECT_INPUT_ERROR(
        attend(q, k_bad, v),
        attn::testing::exactly("key: expected shape [2, *, *, 64], got [2, 8, 128, 32]"));
    EXPECT_INPUT_ERROR(
        attend(q, k, v_bad),
        attn::testing::exactly("value: expected shape [2, 8, 128, *], got [2, 8, 127, 64]"));
    const Tensor k3 = Tensor::from_shape({2, 3, 128, 64});
    const Tensor v3 = Tensor::from_shape({2, 3, 128, 64});
    EXPECT_INPUT_ERROR(
        attend(q, k3, v3),
        attn::testing::exactly("key: 3 key/value heads do not divide 8 query heads (grouped-query "
                               "attention needs num_heads % num_kv_heads == 0)"));
    const Mask m = Mask::from_shape({1, 1, 128, 127});
    EXPECT_INPUT_ERROR(
        attend(q, k, v, {.keep_mask = &m}),
        attn::testing::exactly("mask: expected shape [2, 8, 128, 128], got [1, 1, 128, 127]"));
    const Mask pad = Mask::from_shape({3, 1, 1, 128});
    EXPECT_INPUT_ERROR(attend(q, k, v, {.key_padding = &pad}),
                       attn::testing::exactly(
                           "key_padding_mask: expected shape [2, 1, 1, 128], got [3, 1, 1, 128]"));
}

INSTANTIATE_TEST_SUITE_P(Attention,
                         AttentionTarget,
                         ::testing::ValuesIn(testing::simd_targets()),
                         [](const auto& param_info) {
                             return testing::simd_label(param_info.param);
                         });

} // namespace
} // namespace attn

// attend_streaming against the float64 reference and against attend_materialized, over
// sizes straddling its blocks (64 queries per task, 128 keys per block), with every mask
// kind, causal alignment, GQA, every SIMD target this CPU runs, and the non-finite rules.
#include "attn/attention.hpp"
#include "attn/kernels.hpp"
#include "reference/naive_attention.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <string>
#include <vector>

namespace attn {
namespace {

using namespace testing;

// bs = 64 (query block) and 128 (key block): 1, 2, 3, bs-1, bs, bs+1, 3·bs+2, and 113.
const std::size_t kQuerySizes[] = {1, 2, 3, 63, 64, 65, 113, 194};
const std::size_t kKeySizes[] = {1, 2, 3, 127, 128, 129, 113, 386};

std::vector<double> to_double(const Tensor& t) {
    return {t.begin(), t.end()};
}

struct StreamCase {
    std::size_t b, h, hkv, lq, lk, d, dv;
    Causal causal;
    bool mask, bias, padding;
    float spread; // inputs uniform in [-spread, spread]
};

std::string describe(const StreamCase& c, Simd simd) {
    return "lq=" + std::to_string(c.lq) + " lk=" + std::to_string(c.lk) +
           " d=" + std::to_string(c.d) + " dv=" + std::to_string(c.dv) +
           " causal=" + std::to_string(static_cast<int>(c.causal)) +
           " mask=" + std::to_string(c.mask) + " bias=" + std::to_string(c.bias) +
           " pad=" + std::to_string(c.padding) + " " + simd_label(simd);
}

/// Streaming vs the float64 reference and vs the materialized kernel, same spec, for
/// each SIMD target in `simds` (one reference computation serves them all).
void check_stream_case(const StreamCase& c, unsigned seed, const std::vector<Simd>& simds) {
    std::mt19937 rng(seed);
    const Tensor q = random_tensor(rng, {c.b, c.h, c.lq, c.d}, -c.spread, c.spread);
    const Tensor k = random_tensor(rng, {c.b, c.hkv, c.lk, c.d}, -c.spread, c.spread);
    const Tensor v = random_tensor(rng, {c.b, c.hkv, c.lk, c.dv});
    const Mask mask = random_mask(rng, {c.b, 1, c.lq, c.lk}, 0.7);
    Tensor bias = random_tensor(rng, {1, c.h, c.lq, c.lk}, -2.0f, 2.0f);
    bias(0, 0, 0, 0) = -kInf;
    Mask pad = random_mask(rng, {c.b, 1, 1, c.lk}, 0.8);
    if (c.lk > 200) {
        // A whole key block of padding: the kernel skips it.
        for (std::size_t j = 128; j < 256; ++j) {
            pad(0, 0, 0, j) = 0;
        }
    }
    AttentionSpec spec{.causal = c.causal,
                       .keep_mask = c.mask ? &mask : nullptr,
                       .bias = c.bias ? &bias : nullptr,
                       .key_padding = c.padding ? &pad : nullptr,
                       .want_weights = false,
                       .threads = 2};
    const auto want = reference::naive_attention(q, k, v, spec);
    const double tol = f32_tol(c.lk) + f32_tol(c.d);
    for (const Simd simd : simds) {
        SCOPED_TRACE(describe(c, simd));
        spec.simd = simd;
        const auto got = attend_streaming(q, k, v, spec);
        EXPECT_FALSE(got.weights.has_value());
        EXPECT_TRUE(all_close(got.output, want.output, tol, tol));
        EXPECT_EQ(got.rows_fully_masked, want.empty_rows);
        // attend_streaming == attend_materialized within float32 tolerance.
        const auto mat = attend_materialized(q, k, v, spec);
        EXPECT_TRUE(all_close(got.output, to_double(mat.output), 2 * tol, 2 * tol));
        EXPECT_EQ(got.rows_fully_masked, mat.rows_fully_masked);
    }
}

void check_stream_case(const StreamCase& c, unsigned seed, Simd simd) {
    check_stream_case(c, seed, std::vector<Simd>{simd});
}

TEST(Streaming, MatchesReferenceAndMaterializedAcrossBlockSizes) {
    unsigned seed = 100;
    for (std::size_t lq : kQuerySizes) {
        for (std::size_t lk : kKeySizes) {
            if (lq * lk > 20000 && !(lq == 194 && lk == 386)) {
                continue; // the float64 reference is slow in Debug; one big case suffices
            }
            for (Causal causal : {Causal::none, Causal::top_left, Causal::bottom_right}) {
                check_stream_case({1, 2, 1, lq, lk, 16, 24, causal, false, false, false, 1.0f},
                                  seed++,
                                  simd_targets());
            }
        }
    }
}

TEST(Streaming, MatchesReferenceWithMasksBiasPaddingAndGroups) {
    unsigned seed = 200;
    const std::pair<std::size_t, std::size_t> sizes[] = {
        {3, 2}, {3, 129}, {65, 2}, {65, 129}, {113, 129}, {65, 386}, {2, 386}};
    for (const auto& [lq, lk] : sizes) {
        {
            for (Causal causal : {Causal::none, Causal::top_left, Causal::bottom_right}) {
                const std::vector<Simd> targets = simd_targets();
                check_stream_case(
                    {2, 4, 2, lq, lk, 8, 5, causal, true, true, true, 1.0f}, seed++, targets);
                check_stream_case(
                    {1, 1, 1, lq, lk, 64, 64, causal, false, true, false, 1.0f}, seed++, targets);
                check_stream_case(
                    {2, 2, 2, lq, lk, 16, 17, causal, false, false, true, 1.0f}, seed++, targets);
            }
        }
    }
}

// Instantiated as Streaming/StreamingKernel.*/<target> for every target this CPU runs.
class StreamingKernel : public ::testing::TestWithParam<Simd> {};

TEST_P(StreamingKernel, WideScoreRangesRescaleAndUnderflowCorrectly) {
    // Scores spread over hundreds: the running max grows block after block (alpha < 1),
    // and most exp() arguments fall below the float range (exactly 0).
    unsigned seed = 300;
    for (std::size_t lk : {std::size_t{129}, std::size_t{386}}) {
        check_stream_case(
            {1, 2, 1, 65, lk, 32, 16, Causal::none, false, false, false, 6.0f}, seed++, GetParam());
        check_stream_case({1, 2, 1, 65, lk, 128, 128, Causal::top_left, false, false, false, 3.0f},
                          seed++,
                          GetParam());
    }
    // Keys sorted by ascending score: every block raises every row's max.
    const std::size_t lk = 300;
    Tensor q = Tensor::from_shape({1, 1, 3, 1});
    Tensor k = Tensor::from_shape({1, 1, lk, 1});
    std::mt19937 rng(5);
    const Tensor v = random_tensor(rng, {1, 1, lk, 4});
    q.fill(1.0f);
    for (std::size_t j = 0; j < lk; ++j) {
        k(0, 0, j, 0) = 0.05f * static_cast<float>(j);
    }
    const AttentionSpec spec{.want_weights = false, .simd = GetParam()};
    const auto got = attend_streaming(q, k, v, spec);
    const auto want = reference::naive_attention(q, k, v, spec);
    EXPECT_TRUE(all_close(got.output, want.output, f32_tol(lk), f32_tol(lk)));
}

TEST_P(StreamingKernel, ResultsAreBitIdenticalForEveryThreadCount) {
    std::mt19937 rng(15);
    const Tensor q = random_tensor(rng, {2, 4, 200, 16});
    const Tensor k = random_tensor(rng, {2, 2, 300, 16});
    const Tensor v = random_tensor(rng, {2, 2, 300, 8});
    const AttentionSpec one{.causal = Causal::bottom_right, .threads = 1, .simd = GetParam()};
    const auto a = attend_streaming(q, k, v, one);
    for (unsigned t : {2u, 3u, 5u}) {
        AttentionSpec many = one;
        many.threads = t;
        EXPECT_EQ(a.output, attend_streaming(q, k, v, many).output) << t << " threads";
    }
}

TEST_P(StreamingKernel, GroupedQueryEqualsRepeatedHeads) {
    std::mt19937 rng(14);
    const std::size_t h = 6, hkv = 2, lq = 70, lk = 140;
    const auto [q, k, v] = random_qkv(rng, {2, h, lq, 8}, {2, hkv, lk, 8}, 4);
    const AttentionSpec spec{.causal = Causal::top_left, .simd = GetParam()};
    EXPECT_EQ(attend_streaming(q, k, v, spec).output,
              attend_streaming(q, repeat_heads(k, h), repeat_heads(v, h), spec).output);
}

TEST_P(StreamingKernel, KeyValueBatchOfOneBroadcasts) {
    std::mt19937 rng(16);
    const Tensor q = random_tensor(rng, {3, 2, 5, 4});
    const Tensor k = random_tensor(rng, {1, 2, 130, 4});
    const Tensor v = random_tensor(rng, {1, 2, 130, 3});
    const AttentionSpec spec{.simd = GetParam()};
    const auto r = attend_streaming(q, k, v, spec);
    const auto want = reference::naive_attention(q, k, v, spec);
    EXPECT_TRUE(all_close(r.output, want.output, f32_tol(130), f32_tol(130)));
}

TEST_P(StreamingKernel, FullyMaskedRowsGiveZerosAndAreCounted) {
    std::mt19937 rng(3);
    const Tensor q = random_tensor(rng, {2, 1, 5, 4});
    const Tensor k = random_tensor(rng, {2, 1, 6, 4});
    Tensor v = random_tensor(rng, {2, 1, 6, 3});
    v(0, 0, 2, 1) = kNaN; // must not leak into empty rows
    Mask mask = Mask::from_shape({2, 1, 5, 6});
    mask.fill(1);
    Tensor bias = Tensor::from_shape({1, 1, 5, 6});
    bias.fill(0.0f);
    for (std::size_t j = 0; j < 6; ++j) {
        mask(0, 0, 1, j) = 0;
        mask(1, 0, 4, j) = 0;
        bias(0, 0, 3, j) = -kInf;
    }
    const auto r = attend_streaming(
        q, k, v, {.keep_mask = &mask, .bias = &bias, .want_weights = false, .simd = GetParam()});
    EXPECT_EQ(r.rows_fully_masked, 4);
    for (auto [b, i] : {std::pair{0, 1}, std::pair{1, 4}, std::pair{0, 3}, std::pair{1, 3}}) {
        for (std::size_t x = 0; x < 3; ++x) {
            EXPECT_EQ(r.output(b, 0, i, x), 0.0f);
        }
    }
    // More queries than keys, bottom-right: the first Lq - Lk rows see nothing.
    const Tensor q70 = random_tensor(rng, {1, 1, 70, 4});
    const Tensor k6 = random_tensor(rng, {1, 1, 6, 4});
    const Tensor v6 = random_tensor(rng, {1, 1, 6, 3});
    const AttentionSpec br_spec{
        .causal = Causal::bottom_right, .want_weights = false, .simd = GetParam()};
    const auto br = attend_streaming(q70, k6, v6, br_spec);
    EXPECT_EQ(br.rows_fully_masked, 64);
    EXPECT_EQ(br.output(0, 0, 63, 0), 0.0f);
    const auto want = reference::naive_attention(q70, k6, v6, br_spec);
    EXPECT_TRUE(all_close(br.output, want.output, f32_tol(6), f32_tol(6)));
}

TEST_P(StreamingKernel, NonFiniteInputsPropagateAsInPyTorch) {
    std::mt19937 rng(17);
    Tensor q = random_tensor(rng, {1, 1, 3, 4});
    Tensor k = random_tensor(rng, {1, 1, 200, 4});
    const Tensor v = random_tensor(rng, {1, 1, 200, 2});
    q(0, 0, 0, 1) = kNaN; // row 0: every score NaN
    Tensor bias = Tensor::from_shape({1, 1, 3, 200});
    bias.fill(0.0f);
    bias(0, 0, 1, 150) = kInf; // row 1: +inf - inf = NaN, as PyTorch
    // A NaN key that is masked out is blocked, NaN or not.
    k(0, 0, 7, 2) = kNaN;
    Mask mask = Mask::from_shape({1, 1, 3, 200});
    mask.fill(1);
    for (std::size_t i = 0; i < 3; ++i) {
        mask(0, 0, i, 7) = 0;
    }
    const AttentionSpec spec{
        .keep_mask = &mask, .bias = &bias, .want_weights = false, .simd = GetParam()};
    const auto r = attend_streaming(q, k, v, spec);
    const auto m = attend_materialized(q, k, v, spec);
    EXPECT_TRUE(std::isnan(r.output(0, 0, 0, 0)));
    EXPECT_TRUE(std::isnan(r.output(0, 0, 1, 0)));
    EXPECT_TRUE(std::isnan(m.output(0, 0, 1, 0)));
    EXPECT_TRUE(std::isfinite(r.output(0, 0, 2, 0)));
    EXPECT_NEAR(r.output(0, 0, 2, 1), m.output(0, 0, 2, 1), 1e-6);
    EXPECT_EQ(r.rows_fully_masked, 0);
}

TEST_P(StreamingKernel, EmptyShapesWork) {
    const AttentionSpec spec{.want_weights = false, .simd = GetParam()};
    Tensor q = Tensor::from_shape({1, 1, 3, 4});
    q.fill(1.0f);
    const auto no_keys = attend_streaming(
        q, Tensor::from_shape({1, 1, 0, 4}), Tensor::from_shape({1, 1, 0, 2}), spec);
    EXPECT_EQ(no_keys.rows_fully_masked, 3);
    for (float x : no_keys.output) {
        EXPECT_EQ(x, 0.0f);
    }
    const auto no_queries = attend_streaming(Tensor::from_shape({1, 1, 0, 4}),
                                             Tensor::from_shape({1, 1, 5, 4}),
                                             Tensor::from_shape({1, 1, 5, 2}),
                                             spec);
    EXPECT_EQ(no_queries.output.size(), 0u);
}

TEST_P(StreamingKernel, MaterializedMatchesReferenceWithThisInstructionSet) {
    // The weights path with the same instruction set: weights and output.
    std::mt19937 rng(21);
    for (std::size_t n : {std::size_t{1}, std::size_t{17}, std::size_t{65}, std::size_t{300}}) {
        const Tensor q = random_tensor(rng, {1, 2, n, 24}, -2, 2);
        const Tensor k = random_tensor(rng, {1, 2, n + 3, 24}, -2, 2);
        const Tensor v = random_tensor(rng, {1, 2, n + 3, 19});
        const Mask mask = random_mask(rng, {1, 2, n, n + 3}, 0.6);
        const Tensor bias = random_tensor(rng, {1, 1, n, n + 3});
        const AttentionSpec spec{
            .causal = Causal::bottom_right, .keep_mask = &mask, .bias = &bias, .simd = GetParam()};
        const auto got = attend_materialized(q, k, v, spec);
        const auto want = reference::naive_attention(q, k, v, spec);
        const double tol = f32_tol(n + 3) + f32_tol(24);
        EXPECT_TRUE(all_close(*got.weights, want.weights, tol, tol)) << n;
        EXPECT_TRUE(all_close(got.output, want.output, tol, tol)) << n;
        EXPECT_EQ(got.rows_fully_masked, want.empty_rows);
    }
}

INSTANTIATE_TEST_SUITE_P(Streaming,
                         StreamingKernel,
                         ::testing::ValuesIn(simd_targets()),
                         [](const auto& param_info) { return simd_label(param_info.param); });

TEST(StreamingDispatch, AttendWithoutWeightsIsTheStreamingKernel) {
    std::mt19937 rng(22);
    const Tensor q = random_tensor(rng, {1, 2, 70, 8});
    const Tensor k = random_tensor(rng, {1, 2, 150, 8});
    const Tensor v = random_tensor(rng, {1, 2, 150, 8});
    const AttentionSpec spec{.causal = Causal::top_left, .want_weights = false};
    const auto a = attend(q, k, v, spec);
    EXPECT_FALSE(a.weights.has_value());
    EXPECT_EQ(a.output, attend_streaming(q, k, v, spec).output);
}

} // namespace
} // namespace attn

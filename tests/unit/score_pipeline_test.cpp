// The score pipeline (lib/src/core/kernel_score-inl.h), the one definition of the per-score
// transform and the row statistics, held two ways:
//   1. a table of rows through detail::score_row (the pipeline's scalar instantiation, in
//      float and double) against a float64 reference written here from PyTorch's
//      semantics: Gemma 2's softcap (scores / c, tanh, * c after scaling), an additive
//      bias and masked_fill(-inf), FlashAttention's alibi_slopes (-slope·|i + s - j|),
//      gpt-oss's sinks (an extra logit column in the softmax, dropped after), and the
//      default slopes against Hugging Face's get_slopes (bloom's build_alibi_tensor);
//   2. every kernel (streaming and materialized on each SIMD target, the float64 kernel)
//      against the weights and lse the pipeline gives in double for the same raw scores:
//      V = I makes each output row the weights row, so a kernel whose loop applies a step
//      differently from the pipeline fails here even where the features tests' tolerance
//      would let it pass.
#include "attn/attention.hpp"
#include "attn/kernels.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace attn {
namespace {

using namespace testing;

constexpr double kInf64 = std::numeric_limits<double>::infinity();

/// One row of the table: a query row's raw scores and what the spec holds for it.
struct RowCase {
    std::string name;
    std::vector<double> raw;
    double scale = 1.0;
    std::optional<double> softcap{};
    std::vector<double> bias{};              // the row's bias, empty: none
    std::vector<std::uint8_t> mask{}, pad{}; // keep = 1, empty: none
    std::vector<double> slopes{}, sinks{};   // per head (2 heads)
    Causal causal = Causal::none;
    Window window{};
    Align align = Align::top_left;
    std::size_t i = 3;  // the query row
    std::size_t h = 1;  // its head
    std::size_t lq = 5; // queries of the call
};

/// The float64 reference of one row, from the contract and PyTorch's formulas.
struct RefRow {
    std::vector<double> scores, weights;
    double lse;
};

RefRow reference_row(const RowCase& c) {
    const std::size_t lk = c.raw.size();
    const bool bottom_right = c.causal == Causal::bottom_right || c.align == Align::bottom_right;
    const auto s = static_cast<std::int64_t>(bottom_right ? lk - c.lq : 0);
    const auto i = static_cast<std::int64_t>(c.i);
    RefRow out{std::vector<double>(lk), std::vector<double>(lk, 0.0), -kInf64};
    for (std::size_t jj = 0; jj < lk; ++jj) {
        const auto j = static_cast<std::int64_t>(jj);
        double x = c.raw[jj] * c.scale; // q·kᵀ * scaling
        if (c.softcap) {                // Gemma 2: / softcap, tanh, * softcap
            x = std::tanh(x / *c.softcap) * *c.softcap;
        }
        if (!c.bias.empty()) { // SDPA's float attn_mask is added
            x += c.bias[jj];
        }
        if (!c.slopes.empty()) { // FlashAttention: -alibi_slope * |i + seqlen_k - seqlen_q - j|
            x += -c.slopes[c.h] * static_cast<double>(std::abs(i + s - j));
        }
        bool keep = (c.mask.empty() || c.mask[jj] != 0) && (c.pad.empty() || c.pad[jj] != 0) &&
                    (c.bias.empty() || c.bias[jj] != -kInf64);
        if (c.causal != Causal::none) {
            keep = keep && j <= i + s;
        }
        if (c.window.left >= 0) {
            keep = keep && j >= i + s - c.window.left;
        }
        if (c.window.right >= 0) {
            keep = keep && j <= i + s + c.window.right;
        }
        out.scores[jj] = keep ? x : -kInf64; // masked_fill(~keep, -inf)
    }
    // gpt-oss: cat([scores, sink]), subtract the max, softmax, drop the sink's column. A
    // row with no visible key is zeros (the contract; a sink alone does not make it seen).
    bool seen = false;
    double m = c.sinks.empty() ? -kInf64 : c.sinks[c.h];
    for (const double x : out.scores) {
        seen = seen || x != -kInf64;
        m = std::isnan(x) ? m : std::max(m, x);
    }
    if (!seen) {
        return out;
    }
    m = m == -kInf64 ? 0.0 : m;
    double sum = c.sinks.empty() ? 0.0 : std::exp(c.sinks[c.h] - m);
    for (const double x : out.scores) {
        sum += std::exp(x - m);
    }
    for (std::size_t j = 0; j < lk; ++j) {
        out.weights[j] = std::exp(out.scores[j] - m) / sum;
    }
    out.lse = m + std::log(sum);
    return out;
}

/// The case as a spec in T with its operands (bias [1, 2, Lq, Lk], masks), row i set.
template <class T> struct CaseSpec {
    BasicTensor<T> bias;
    Mask mask, pad;
    BasicAttentionSpec<T> spec;

    explicit CaseSpec(const RowCase& c) {
        const std::size_t lk = c.raw.size();
        spec.causal = c.causal;
        spec.window = c.window;
        spec.align = c.align;
        if (c.softcap) {
            spec.softcap = static_cast<T>(*c.softcap);
        }
        spec.alibi_slopes.assign(c.slopes.begin(), c.slopes.end());
        spec.sinks.assign(c.sinks.begin(), c.sinks.end());
        if (!c.bias.empty()) {
            bias = BasicTensor<T>::from_shape({1, 2, c.lq, lk});
            bias.fill(T{0});
            for (std::size_t j = 0; j < lk; ++j) {
                bias(0, c.h, c.i, j) = static_cast<T>(c.bias[j]);
            }
            spec.bias = &bias;
        }
        if (!c.mask.empty()) {
            mask = Mask::from_shape({1, 1, c.lq, lk});
            mask.fill(1);
            for (std::size_t j = 0; j < lk; ++j) {
                mask(0, 0, c.i, j) = c.mask[j];
            }
            spec.keep_mask = &mask;
        }
        if (!c.pad.empty()) {
            pad = Mask::from_shape({1, 1, 1, lk});
            for (std::size_t j = 0; j < lk; ++j) {
                pad(0, 0, 0, j) = c.pad[j];
            }
            spec.key_padding = &pad;
        }
    }
};

std::vector<RowCase> row_cases() {
    const std::vector<double> raw{0.7, -1.3, 2.9, 0.0, -0.4, 5.2, 1.1, -2.2, 0.35};
    std::vector<double> with_nan = raw;
    with_nan[2] = std::nan("");
    const std::vector<double> bias{0.25, -0.5, -kInf64, 1.0, 0.0, -3.0, 0.5, -kInf64, 2.0};
    const std::vector<std::uint8_t> mask{1, 1, 1, 0, 1, 1, 1, 1, 0};
    const std::vector<std::uint8_t> pad{1, 0, 1, 1, 1, 1, 1, 1, 1};
    return {
        {.name = "scale", .raw = raw, .scale = 0.125},
        {.name = "softcap after the scale", .raw = raw, .scale = 0.5, .softcap = 1.5},
        {.name = "bias, a -inf bias blocks a NaN score", .raw = with_nan, .bias = bias},
        {.name = "alibi top-left", .raw = raw, .slopes = {0.5, 0.25}},
        {.name = "alibi bottom-right",
         .raw = raw,
         .slopes = {0.5, 0.25},
         .align = Align::bottom_right},
        {.name = "keep-mask and padding", .raw = raw, .mask = mask, .pad = pad},
        {.name = "causal top-left", .raw = raw, .causal = Causal::top_left},
        {.name = "causal bottom-right", .raw = raw, .causal = Causal::bottom_right, .i = 1},
        {.name = "window 1,2", .raw = raw, .window = {1, 2}},
        {.name = "sinks", .raw = raw, .scale = 0.5, .sinks = {0.3, 2.0}},
        {.name = "a sink above every score", .raw = raw, .scale = 0.1, .sinks = {0.3, 9.0}},
        {.name = "a -inf sink", .raw = raw, .sinks = {0.0, -kInf64}},
        {.name = "a visible NaN", .raw = with_nan, .sinks = {0.0, 1.0}},
        {.name = "no visible key, with a sink",
         .raw = raw,
         .mask = std::vector<std::uint8_t>(9, 0),
         .sinks = {0.0, 1.0}},
        {.name = "everything",
         .raw = raw,
         .scale = 0.75,
         .softcap = 2.5,
         .bias = bias,
         .mask = mask,
         .pad = pad,
         .slopes = {0.5, 0.125},
         .sinks = {0.3, 0.8},
         .causal = Causal::bottom_right,
         .window = {3, 0},
         .i = 2},
    };
}

/// |got - want| <= tol·max(1, |want|), with -inf, +inf and NaN matched exactly.
bool near(double got, double want, double tol) {
    if (std::isnan(want) || std::isinf(want)) {
        return std::isnan(want) ? std::isnan(got) : got == want;
    }
    return std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

template <class T> void check_table(double tol) {
    for (const RowCase& c : row_cases()) {
        SCOPED_TRACE(c.name);
        const RefRow want = reference_row(c);
        const CaseSpec<T> cs(c);
        const std::vector<T> raw(c.raw.begin(), c.raw.end());
        const detail::ScoreRow<T> got =
            detail::score_row<T>(raw, static_cast<T>(c.scale), cs.spec, 0, c.h, c.i, c.lq);
        for (std::size_t j = 0; j < raw.size(); ++j) {
            EXPECT_PRED3(near, got.scores[j], want.scores[j], tol) << "score of key " << j;
            EXPECT_PRED3(near, got.weights[j], want.weights[j], tol) << "weight of key " << j;
            if (want.scores[j] == -kInf64) {
                EXPECT_EQ(got.weights[j], T{0}) << "a blocked key's weight is exactly 0";
            }
        }
        EXPECT_PRED3(near, got.lse, want.lse, tol);
    }
}

TEST(ScorePipeline, TransformAndRowStatisticsMatchPyTorchsSemanticsInDouble) {
    check_table<double>(1e-14);
}

TEST(ScorePipeline, TransformAndRowStatisticsMatchPyTorchsSemanticsInFloat) {
    check_table<float>(2e-6);
}

TEST(ScorePipeline, DefaultAlibiSlopesAreHuggingFacesGetSlopes) {
    // transformers' build_alibi_tensor (bloom): closest = 2^floor(log2 H), base =
    // 2^(-(2^-(log2(closest) - 3))), slopes base^1..closest, then for the remaining heads
    // extra_base = 2^(-(2^-(log2(2·closest) - 3))) at the odd powers 1, 3, 5, ...
    for (const std::size_t heads : {1U, 2U, 3U, 4U, 5U, 6U, 8U, 12U, 16U, 20U, 32U, 40U}) {
        const double closest = std::pow(2.0, std::floor(std::log2(static_cast<double>(heads))));
        const double base = std::pow(2.0, -std::pow(2.0, -(std::log2(closest) - 3.0)));
        const double extra_base = std::pow(2.0, -std::pow(2.0, -(std::log2(2.0 * closest) - 3.0)));
        std::vector<double> want;
        for (std::size_t p = 1; p <= static_cast<std::size_t>(closest); ++p) {
            want.push_back(std::pow(base, static_cast<double>(p)));
        }
        for (std::size_t p = 1; want.size() < heads; p += 2) {
            want.push_back(std::pow(extra_base, static_cast<double>(p)));
        }
        const std::vector<double> got = alibi_default_slopes<double>(heads);
        ASSERT_EQ(got.size(), heads);
        for (std::size_t h = 0; h < heads; ++h) {
            EXPECT_NEAR(got[h], want[h], 1e-15 * want[h]) << heads << " heads, head " << h;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Every kernel against the pipeline.

struct KernelFeatures {
    std::string name;
    bool masks = false; // bias (with -inf), keep-mask, padding
    Causal causal = Causal::none;
    Window window{};
    Align align = Align::top_left;
    std::optional<float> softcap{};
    bool alibi = false;
    bool sinks = false;
};

std::vector<KernelFeatures> kernel_features() {
    return {
        {.name = "plain"},
        {.name = "bias, keep-mask and padding", .masks = true},
        {.name = "causal bottom-right and a window",
         .causal = Causal::bottom_right,
         .window = {20, 0}},
        {.name = "softcap", .softcap = 2.0f},
        {.name = "alibi bottom-right", .align = Align::bottom_right, .alibi = true},
        {.name = "sinks", .sinks = true},
        {.name = "everything",
         .masks = true,
         .causal = Causal::top_left,
         .window = {30, -1},
         .softcap = 1.5f,
         .alibi = true,
         .sinks = true},
    };
}

/// Q [2, 2, 70, 8], K [1, 1, 150, 8] (grouped and broadcast over the batch), V = I
/// [1, 1, 150, 150]: output row (b, h, i) is the weights row. Sizes straddle the 64-query
/// and 128-key blocks. The spec in both precisions over the same numbers.
struct KernelProblem {
    static constexpr std::size_t kB = 2, kH = 2, kLq = 70, kLk = 150, kD = 8;
    Tensor q, k, v, bias;
    BasicTensor<double> q64, k64, v64, bias64;
    Mask mask, pad;
    AttentionSpec spec;
    BasicAttentionSpec<double> spec64;

    explicit KernelProblem(const KernelFeatures& f) {
        std::mt19937 rng(11);
        q = random_tensor(rng, {kB, kH, kLq, kD}, -1.5f, 1.5f);
        k = random_tensor(rng, {1, 1, kLk, kD}, -1.5f, 1.5f);
        v = Tensor::from_shape({1, 1, kLk, kLk});
        v.fill(0.0f);
        for (std::size_t j = 0; j < kLk; ++j) {
            v(0, 0, j, j) = 1.0f;
        }
        if (f.masks) {
            bias = random_tensor(rng, {1, kH, kLq, kLk}, -1.0f, 1.0f);
            bias(0, 1, 5, 7) = -std::numeric_limits<float>::infinity();
            for (std::size_t j = 0; j < kLk; ++j) {
                bias(0, 0, 9, j) = -std::numeric_limits<float>::infinity(); // a row bias blocks
            }
            mask = random_mask(rng, {kB, 1, kLq, kLk}, 0.8);
            pad = random_mask(rng, {kB, 1, 1, kLk}, 0.85);
            spec.bias = &bias;
            spec.keep_mask = &mask;
            spec.key_padding = &pad;
        }
        spec.causal = f.causal;
        spec.window = f.window;
        spec.align = f.align;
        spec.softcap = f.softcap;
        if (f.alibi) {
            spec.alibi_slopes = alibi_default_slopes(kH);
        }
        if (f.sinks) {
            spec.sinks = {1.5f, -std::numeric_limits<float>::infinity()};
        }
        spec.want_lse = true;
        q64 = q;
        k64 = k;
        v64 = v;
        bias64 = bias;
        spec64.causal = spec.causal;
        spec64.window = spec.window;
        spec64.align = spec.align;
        if (spec.softcap) {
            spec64.softcap = static_cast<double>(*spec.softcap);
        }
        spec64.alibi_slopes.assign(spec.alibi_slopes.begin(), spec.alibi_slopes.end());
        spec64.sinks.assign(spec.sinks.begin(), spec.sinks.end());
        spec64.bias = f.masks ? &bias64 : nullptr;
        spec64.keep_mask = spec.keep_mask;
        spec64.key_padding = spec.key_padding;
        spec64.want_lse = true;
    }

    /// The pipeline's weights [B, H, Lq, Lk] and lse [B, H, Lq] in double, from the raw
    /// scores q·k in double.
    void expected(std::vector<double>& weights, std::vector<double>& lse) const {
        const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
        for (std::size_t b = 0; b < kB; ++b) {
            for (std::size_t h = 0; h < kH; ++h) {
                for (std::size_t i = 0; i < kLq; ++i) {
                    std::vector<double> raw(kLk, 0.0);
                    for (std::size_t j = 0; j < kLk; ++j) {
                        for (std::size_t x = 0; x < kD; ++x) {
                            raw[j] += q64(b, h, i, x) * k64(0, 0, j, x);
                        }
                    }
                    const detail::ScoreRow<double> row =
                        detail::score_row(raw, scale, spec64, b, h, i, kLq);
                    weights.insert(weights.end(), row.weights.begin(), row.weights.end());
                    lse.push_back(row.lse);
                }
            }
        }
    }
};

/// all_close over an lse tensor, where an expected -inf (a row that sees no key) must be
/// exactly -inf.
template <class A>
::testing::AssertionResult lse_close(const A& got, std::vector<double> want, double tol) {
    std::vector<double> have(got.begin(), got.end());
    for (std::size_t i = 0; i < want.size() && i < have.size(); ++i) {
        if (want[i] == -kInf64) {
            if (have[i] != -kInf64) {
                return ::testing::AssertionFailure()
                       << "lse of row " << i << ": got " << have[i] << ", expected -inf";
            }
            have[i] = want[i] = 0.0;
        }
    }
    return all_close(have, want, tol, tol);
}

class EveryKernel : public ::testing::TestWithParam<Simd> {};

TEST_P(EveryKernel, ComputesThePipelinesWeightsAndLse) {
    for (const KernelFeatures& f : kernel_features()) {
        SCOPED_TRACE(f.name);
        KernelProblem p(f);
        p.spec.simd = GetParam();
        std::vector<double> weights, lse;
        p.expected(weights, lse);
        const double tol = 1e-5; // float32 scores of magnitude <= 6, over 150 keys

        AttentionResult streamed;
        attend_streaming_into(p.q, p.k, p.v, p.spec, streamed);
        EXPECT_TRUE(all_close(streamed.output, weights, tol, tol)) << "streaming";
        EXPECT_TRUE(lse_close(*streamed.diagnostics.lse, lse, tol)) << "streaming lse";

        // With lse every row takes the scalar feature row; without it and without a
        // feature, the vectorised softmax row.
        AttentionResult whole = attend_materialized(p.q, p.k, p.v, p.spec);
        EXPECT_TRUE(all_close(*whole.weights, weights, tol, tol)) << "materialized";
        EXPECT_TRUE(lse_close(*whole.diagnostics.lse, lse, tol)) << "materialized lse";
        AttentionSpec plain = p.spec;
        plain.want_lse = false;
        whole = attend_materialized(p.q, p.k, p.v, plain);
        EXPECT_TRUE(all_close(*whole.weights, weights, tol, tol)) << "materialized, no lse";

        const BasicAttentionResult<double> f64 = attend_materialized(p.q64, p.k64, p.v64, p.spec64);
        EXPECT_TRUE(all_close(*f64.weights, weights, 1e-12, 1e-12)) << "float64";
        EXPECT_TRUE(all_close(f64.output, weights, 1e-12, 1e-12)) << "float64 output";
        EXPECT_TRUE(lse_close(*f64.diagnostics.lse, lse, 1e-12)) << "float64 lse";
    }
}

INSTANTIATE_TEST_SUITE_P(ScorePipeline,
                         EveryKernel,
                         ::testing::ValuesIn(simd_targets()),
                         [](const auto& param_info) { return simd_label(param_info.param); });

} // namespace
} // namespace attn

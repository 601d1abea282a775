// The score features (sliding window in both alignments, softcap, ALiBi with given and
// default slopes, sinks, and the lse / entropy / argmax / top-k diagnostics) against the
// float64 reference (tests/reference/naive_attention.hpp), in both kernels (attend() with
// and without weights, and each kernel called directly) and both instruction sets, over
// sizes straddling the 64-query and 128-key blocks; bit-identical results for 1, 2 and 3
// threads; and the float64 path (precision f64) against the same reference at 1e-12.
#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/kernels.hpp"
#include "reference/naive_attention.hpp"
#include "unit/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace attn {
namespace {

using namespace testing;

/// One feature set on top of a base spec; `h` is the number of query heads.
struct Features {
    std::string name;
    Window window{};
    Align align = Align::top_left;
    Causal causal = Causal::none;
    std::optional<float> softcap{};
    int alibi = 0; ///< 0 none, 1 default slopes, 2 given slopes
    bool sinks = false;
    bool masks = false; ///< keep-mask, bias (with -inf) and key padding too
};

std::vector<Features> feature_sets() {
    return {
        {.name = "window 2,1", .window = {2, 1}},
        {.name = "window 0,0", .window = {0, 0}},
        {.name = "window -1,3", .window = {-1, 3}},
        {.name = "window 5,-1 bottom-right", .window = {5, -1}, .align = Align::bottom_right},
        {.name = "window 3,0 causal top-left", .window = {3, 0}, .causal = Causal::top_left},
        {.name = "window 4,0 causal bottom-right",
         .window = {4, 0},
         .causal = Causal::bottom_right},
        {.name = "softcap 0.5", .softcap = 0.5f},
        {.name = "softcap 3 with masks", .softcap = 3.0f, .masks = true},
        {.name = "alibi default", .alibi = 1},
        {.name = "alibi given bottom-right", .align = Align::bottom_right, .alibi = 2},
        {.name = "alibi default causal", .causal = Causal::top_left, .alibi = 1},
        {.name = "sinks", .sinks = true},
        {.name = "sinks with masks", .sinks = true, .masks = true},
        {.name = "all",
         .window = {6, 1},
         .causal = Causal::bottom_right,
         .softcap = 2.0f,
         .alibi = 1,
         .sinks = true,
         .masks = true},
    };
}

/// The inputs of one case, owning what the spec points to.
struct Problem {
    Tensor q, k, v, bias;
    Mask mask, pad;
    AttentionSpec spec;
};

Problem make_problem(const Features& f,
                     std::size_t h,
                     std::size_t hkv,
                     std::size_t lq,
                     std::size_t lk,
                     unsigned seed) {
    std::mt19937 rng(seed);
    Problem p;
    const std::size_t b = 2, d = 8, dv = 5;
    p.q = random_tensor(rng, {b, h, lq, d}, -1.5f, 1.5f);
    p.k = random_tensor(rng, {b, hkv, lk, d}, -1.5f, 1.5f);
    p.v = random_tensor(rng, {b, hkv, lk, dv});
    p.spec.window = f.window;
    p.spec.align = f.align;
    p.spec.causal = f.causal;
    p.spec.softcap = f.softcap;
    if (f.alibi == 1) {
        p.spec.alibi_slopes = alibi_default_slopes(h);
    } else if (f.alibi == 2) {
        for (std::size_t i = 0; i < h; ++i) {
            p.spec.alibi_slopes.push_back(0.3f / static_cast<float>(i + 1));
        }
    }
    if (f.sinks) {
        for (std::size_t i = 0; i < h; ++i) {
            p.spec.sinks.push_back(static_cast<float>(i) - 0.5f);
        }
    }
    if (f.masks) {
        p.mask = random_mask(rng, {b, 1, lq, lk}, 0.8);
        p.bias = random_tensor(rng, {1, h, lq, lk}, -1.0f, 1.0f);
        p.bias(0, 0, 0, 0) = -std::numeric_limits<float>::infinity();
        p.pad = random_mask(rng, {b, 1, 1, lk}, 0.85);
        p.spec.keep_mask = &p.mask;
        p.spec.bias = &p.bias;
        p.spec.key_padding = &p.pad;
    }
    return p;
}

/// Flattened [B, H, Lq] (or [.., K]) diagnostic tensor as doubles.
std::vector<double> flat(const Tensor& t) {
    return {t.begin(), t.end()};
}

/// lse and argmax (both kernels), entropy and top-k (when present) against the reference.
void check_diagnostics(const AttentionResult& got,
                       const reference::Result& want,
                       std::size_t lk,
                       const std::string& what) {
    const double tol = f32_tol(lk);
    ASSERT_TRUE(got.diagnostics.lse.has_value()) << what;
    // lse: -inf where the row is empty, compared exactly there.
    const auto lse = flat(*got.diagnostics.lse);
    for (std::size_t r = 0; r < lse.size(); ++r) {
        if (std::isinf(want.lse[r])) {
            ASSERT_EQ(lse[r], want.lse[r]) << what << " lse row " << r;
        } else {
            ASSERT_NEAR(lse[r], want.lse[r], tol * (1.0 + std::abs(want.lse[r])))
                << what << " lse row " << r;
        }
    }
    ASSERT_TRUE(got.diagnostics.argmax.has_value()) << what;
    const auto arg = flat(*got.diagnostics.argmax);
    for (std::size_t r = 0; r < arg.size(); ++r) {
        if (want.argmax[r] < 0) {
            ASSERT_EQ(arg[r], -1.0) << what << " argmax row " << r;
            continue;
        }
        // Robust to near-ties: the chosen key carries the row's largest weight.
        const auto j = static_cast<std::size_t>(arg[r]);
        ASSERT_LT(j, lk) << what;
        const double best = want.weights[r * lk + static_cast<std::size_t>(want.argmax[r])];
        ASSERT_NEAR(want.weights[r * lk + j], best, tol) << what << " argmax row " << r;
    }
    if (got.diagnostics.entropy) {
        EXPECT_TRUE(all_close(*got.diagnostics.entropy, want.entropy, tol, tol)) << what;
    }
    if (got.diagnostics.top_k_indices) {
        const std::size_t kk = got.diagnostics.top_k_indices->shape()[3];
        const auto idx = flat(*got.diagnostics.top_k_indices);
        const auto w = flat(*got.diagnostics.top_k_weights);
        for (std::size_t r = 0; r < arg.size(); ++r) {
            std::vector<double> row(want.weights.begin() + static_cast<std::ptrdiff_t>(r * lk),
                                    want.weights.begin() +
                                        static_cast<std::ptrdiff_t>((r + 1) * lk));
            std::vector<double> sorted = row;
            std::sort(sorted.begin(), sorted.end(), std::greater<>());
            for (std::size_t t = 0; t < kk; ++t) {
                const double expect = t < lk ? sorted[t] : 0.0;
                if (expect == 0.0) {
                    ASSERT_EQ(idx[r * kk + t], -1.0) << what << " top_k pad row " << r;
                    ASSERT_EQ(w[r * kk + t], 0.0) << what;
                    continue;
                }
                ASSERT_NEAR(w[r * kk + t], expect, tol) << what << " top_k row " << r;
                const auto j = static_cast<std::size_t>(idx[r * kk + t]);
                ASSERT_LT(j, lk) << what;
                ASSERT_NEAR(row[j], w[r * kk + t], tol) << what << " top_k index row " << r;
            }
        }
    }
}

/// Every element of every tensor `r` holds set to NaN and the count to garbage: the stale
/// contents of a result buffer handed back to attend_into().
template <class T> void poison(BasicAttentionResult<T>& r) {
    const T nan = std::numeric_limits<T>::quiet_NaN();
    r.output.fill(nan);
    for (auto* t : {&r.weights,
                    &r.diagnostics.lse,
                    &r.diagnostics.entropy,
                    &r.diagnostics.argmax,
                    &r.diagnostics.top_k_indices,
                    &r.diagnostics.top_k_weights}) {
        if (*t) {
            (*t)->fill(nan);
        }
    }
    r.rows_fully_masked = 12345;
}

/// Where each tensor of `r` keeps its elements (null for an absent one).
template <class T> std::vector<const T*> storage(const BasicAttentionResult<T>& r) {
    std::vector<const T*> out{r.output.data()};
    for (const auto* t : {&r.weights,
                          &r.diagnostics.lse,
                          &r.diagnostics.entropy,
                          &r.diagnostics.argmax,
                          &r.diagnostics.top_k_indices,
                          &r.diagnostics.top_k_weights}) {
        out.push_back(*t ? (*t)->data() : nullptr);
    }
    return out;
}

/// a and b hold the same tensors, bit for bit (NaN or -0 included), and the same count.
template <class T>
::testing::AssertionResult same_bits(const BasicAttentionResult<T>& a,
                                     const BasicAttentionResult<T>& b) {
    const auto same = [](const xt::xtensor<T, 4>& x, const xt::xtensor<T, 4>& y) {
        return x.shape() == y.shape() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
    };
    const auto same_opt = [&](const std::optional<xt::xtensor<T, 4>>& x,
                              const std::optional<xt::xtensor<T, 4>>& y) {
        return x.has_value() == y.has_value() && (!x || same(*x, *y));
    };
    const auto& da = a.diagnostics;
    const auto& db = b.diagnostics;
    const std::pair<const char*, bool> parts[] = {
        {"output", same(a.output, b.output)},
        {"weights", same_opt(a.weights, b.weights)},
        {"lse", same_opt(da.lse, db.lse)},
        {"entropy", same_opt(da.entropy, db.entropy)},
        {"argmax", same_opt(da.argmax, db.argmax)},
        {"top_k_indices", same_opt(da.top_k_indices, db.top_k_indices)},
        {"top_k_weights", same_opt(da.top_k_weights, db.top_k_weights)},
        {"rows_fully_masked", a.rows_fully_masked == b.rows_fully_masked}};
    for (const auto& [name, ok] : parts) {
        if (!ok) {
            return ::testing::AssertionFailure() << name << " differs";
        }
    }
    return ::testing::AssertionSuccess();
}

/// attend_into() on a caller-owned result gives attend()'s result bit for bit: first into
/// a result of another call (other shapes, the other want_weights, other diagnostics:
/// reallocated or dropped), then into its own poisoned buffers, whose storage it keeps.
template <class T>
void check_reuse(const BasicTensor<T>& q,
                 const BasicTensor<T>& k,
                 const BasicTensor<T>& v,
                 const BasicAttentionSpec<T>& spec,
                 const BasicTensor<T>& other_q,
                 const BasicTensor<T>& other_k,
                 const BasicTensor<T>& other_v,
                 const BasicAttentionSpec<T>& other_spec,
                 const std::string& what) {
    const BasicAttentionResult<T> fresh = attend(q, k, v, spec);
    BasicAttentionResult<T> reused;
    attend_into(other_q, other_k, other_v, other_spec, reused);
    poison(reused);
    attend_into(q, k, v, spec, reused);
    EXPECT_TRUE(same_bits(reused, fresh)) << what << " (after another call)";
    poison(reused);
    const std::vector<const T*> before = storage(reused);
    attend_into(q, k, v, spec, reused);
    EXPECT_TRUE(same_bits(reused, fresh)) << what << " (its own poisoned buffers)";
    EXPECT_EQ(storage(reused), before) << what << ": the buffers were not reused";
}

/// (want_weights, Simd)
class FeatureKernels : public ::testing::TestWithParam<std::tuple<bool, Simd>> {};

TEST_P(FeatureKernels, EachFeatureMatchesTheReference) {
    const auto [want_weights, simd] = GetParam();
    const std::size_t sizes[][2] = {{1, 1}, {3, 5}, {64, 64}, {65, 129}, {130, 40}};
    unsigned seed = 1;
    for (const Features& f : feature_sets()) {
        for (const auto& s : sizes) {
            const std::size_t lq = s[0], lk = s[1];
            Problem p = make_problem(f, lq > 8 ? 2 : 4, lq > 8 ? 1 : 2, lq, lk, seed++);
            p.spec.want_weights = want_weights;
            p.spec.simd = simd;
            p.spec.want_lse = true;
            p.spec.want_argmax = true;
            const auto want = reference::naive_attention(p.q, p.k, p.v, p.spec);
            const std::string what =
                f.name + " lq=" + std::to_string(lq) + " lk=" + std::to_string(lk);
            const double tol = f32_tol(lk);
            const AttentionResult got = attend(p.q, p.k, p.v, p.spec);
            EXPECT_TRUE(all_close(got.output, want.output, tol, tol)) << what;
            EXPECT_EQ(got.rows_fully_masked, want.empty_rows) << what;
            ASSERT_EQ(got.weights.has_value(), want_weights) << what;
            if (want_weights) {
                EXPECT_TRUE(all_close(*got.weights, want.weights, tol, tol)) << what;
            }
            check_diagnostics(got, want, lk, what);
            // The kernel attend() did not pick, called directly, agrees too.
            const AttentionResult other = want_weights ? attend_streaming(p.q, p.k, p.v, p.spec)
                                                       : attend_materialized(p.q, p.k, p.v, p.spec);
            EXPECT_TRUE(all_close(other.output, want.output, tol, tol)) << what << " other";
            check_diagnostics(other, want, lk, what + " other kernel");
        }
    }
}

TEST_P(FeatureKernels, EntropyAndTopKMatchTheReference) {
    const auto [want_weights, simd] = GetParam();
    unsigned seed = 100;
    for (const Features& f : feature_sets()) {
        for (const std::size_t top_k : {std::size_t{1}, std::size_t{3}, std::size_t{9}}) {
            Problem p = make_problem(f, 2, 1, 67, 8, seed++);
            p.spec.want_weights = want_weights;
            p.spec.simd = simd;
            p.spec.want_lse = true;
            p.spec.want_argmax = true;
            p.spec.want_entropy = true;
            p.spec.top_k = top_k; // 9 > Lk = 8: padded with -1 / 0
            const auto want = reference::naive_attention(p.q, p.k, p.v, p.spec);
            const AttentionResult got = attend(p.q, p.k, p.v, p.spec);
            const std::string what = f.name + " top_k=" + std::to_string(top_k);
            ASSERT_TRUE(got.diagnostics.entropy && got.diagnostics.top_k_indices) << what;
            EXPECT_EQ(got.weights.has_value(), want_weights) << what; // never the Lq×Lk result
            EXPECT_TRUE(all_close(got.output, want.output, f32_tol(8), f32_tol(8))) << what;
            check_diagnostics(got, want, 8, what);
        }
    }
}

TEST_P(FeatureKernels, ResultsAreBitIdenticalForOneTwoAndThreeThreads) {
    const auto [want_weights, simd] = GetParam();
    unsigned seed = 200;
    for (const Features& f : feature_sets()) {
        Problem p = make_problem(f, 3, 3, 130, 140, seed++);
        p.spec.want_weights = want_weights;
        p.spec.simd = simd;
        p.spec.want_lse = true;
        p.spec.want_argmax = true;
        p.spec.threads = 1;
        const AttentionResult one = attend(p.q, p.k, p.v, p.spec);
        for (const unsigned threads : {2U, 3U}) {
            p.spec.threads = threads;
            const AttentionResult many = attend(p.q, p.k, p.v, p.spec);
            EXPECT_EQ(many.output, one.output) << f.name << " threads=" << threads;
            EXPECT_EQ(many.weights, one.weights) << f.name << " threads=" << threads;
            EXPECT_EQ(*many.diagnostics.lse, *one.diagnostics.lse) << f.name;
            EXPECT_EQ(*many.diagnostics.argmax, *one.diagnostics.argmax) << f.name;
            EXPECT_EQ(many.rows_fully_masked, one.rows_fully_masked) << f.name;
        }
    }
}

TEST_P(FeatureKernels, ResultBuffersReusedAreOverwrittenBitIdentically) {
    const auto [want_weights, simd] = GetParam();
    unsigned seed = 250;
    // Every feature set, and plain rows (the vectorised softmax row: no feature, no
    // diagnostic) under causal masks. Every other set also asks for entropy and top-k,
    // which take the materialized kernel even without weights; the rest stream then.
    std::vector<Features> sets = feature_sets();
    sets.push_back({.name = "plain causal with masks", .causal = Causal::top_left, .masks = true});
    for (std::size_t n = 0; n < sets.size(); ++n) {
        const Features& f = sets[n];
        const bool plain = f.name.starts_with("plain");
        const std::size_t top_k = n % 2 == 1 && !plain ? 3 : 0;
        Problem p = make_problem(f, 3, 3, 130, 140, seed++);
        if (f.masks) {
            std::fill_n(&p.mask(1, 0, 70, 0), 140, std::uint8_t{0}); // a row that sees nothing
        }
        p.spec.want_weights = want_weights;
        p.spec.simd = simd;
        p.spec.threads = 2;
        p.spec.want_lse = !plain;
        p.spec.want_argmax = !plain;
        p.spec.want_entropy = top_k > 0;
        p.spec.top_k = top_k;
        Problem other = make_problem(f, 3, 1, 7, 9, seed++);
        other.spec.want_weights = !want_weights;
        other.spec.simd = simd;
        other.spec.want_entropy = true;
        other.spec.top_k = 5;
        check_reuse(p.q,
                    p.k,
                    p.v,
                    p.spec,
                    other.q,
                    other.k,
                    other.v,
                    other.spec,
                    f.name + " top_k=" + std::to_string(top_k));
    }
}

INSTANTIATE_TEST_SUITE_P(Features,
                         FeatureKernels,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::ValuesIn(testing::simd_targets())),
                         [](const auto& param_info) {
                             return std::string(std::get<0>(param_info.param) ? "weights_"
                                                                              : "no_weights_") +
                                    testing::simd_label(std::get<1>(param_info.param));
                         });

// --- precision f64 ------------------------------------------------------------------------

BasicTensor<double> widen(const Tensor& t) {
    BasicTensor<double> out = BasicTensor<double>::from_shape(t.shape());
    std::transform(t.begin(), t.end(), out.begin(), [](float x) { return static_cast<double>(x); });
    return out;
}

/// The float spec's features in double (slopes and sinks as the reference reads them).
BasicAttentionSpec<double> widen(const AttentionSpec& s, const BasicTensor<double>* bias) {
    BasicAttentionSpec<double> out;
    if (s.scale) {
        out.scale = static_cast<double>(*s.scale);
    }
    out.causal = s.causal;
    out.keep_mask = s.keep_mask;
    out.bias = bias;
    out.key_padding = s.key_padding;
    out.want_weights = s.want_weights;
    out.threads = s.threads;
    out.window = s.window;
    out.align = s.align;
    if (s.softcap) {
        out.softcap = static_cast<double>(*s.softcap);
    }
    out.alibi_slopes.assign(s.alibi_slopes.begin(), s.alibi_slopes.end());
    out.sinks.assign(s.sinks.begin(), s.sinks.end());
    out.want_lse = s.want_lse;
    out.want_entropy = s.want_entropy;
    out.want_argmax = s.want_argmax;
    out.top_k = s.top_k;
    return out;
}

class FeatureF64 : public ::testing::TestWithParam<bool> {};

TEST_P(FeatureF64, EachFeatureMatchesTheReferenceTo1e12) {
    // The reference computes in double from the same (float-valued) inputs: the f64 path
    // must agree to rounding, far below float32 precision.
    const bool want_weights = GetParam();
    const double tol = 1e-12;
    unsigned seed = 300;
    for (const Features& f : feature_sets()) {
        for (const auto& s :
             {std::array<std::size_t, 2>{3, 5}, std::array<std::size_t, 2>{65, 129}}) {
            Problem p = make_problem(f, 4, 2, s[0], s[1], seed++);
            p.spec.want_weights = want_weights;
            p.spec.want_lse = true;
            p.spec.want_argmax = true;
            p.spec.want_entropy = true;
            const auto want = reference::naive_attention(p.q, p.k, p.v, p.spec);
            const BasicTensor<double> bias = widen(p.bias);
            const BasicAttentionSpec<double> spec = widen(p.spec, f.masks ? &bias : nullptr);
            const BasicAttentionResult<double> got =
                attend(widen(p.q), widen(p.k), widen(p.v), spec);
            const std::string what = f.name + " lq=" + std::to_string(s[0]);
            EXPECT_TRUE(all_close(got.output, want.output, tol, tol)) << what;
            EXPECT_EQ(got.rows_fully_masked, want.empty_rows) << what;
            ASSERT_EQ(got.weights.has_value(), want_weights) << what;
            if (want_weights) {
                EXPECT_TRUE(all_close(*got.weights, want.weights, tol, tol)) << what;
            }
            std::vector<double> lse(got.diagnostics.lse->begin(), got.diagnostics.lse->end());
            for (std::size_t r = 0; r < lse.size(); ++r) {
                if (std::isinf(want.lse[r])) {
                    ASSERT_EQ(lse[r], want.lse[r]) << what;
                } else {
                    ASSERT_NEAR(lse[r], want.lse[r], tol * (1 + std::abs(want.lse[r]))) << what;
                }
            }
            EXPECT_TRUE(all_close(*got.diagnostics.entropy, want.entropy, tol, tol)) << what;
            std::vector<double> arg(want.argmax.begin(), want.argmax.end());
            EXPECT_TRUE(all_close(*got.diagnostics.argmax, arg, 0.0, 0.0)) << what;
        }
    }
}

TEST_P(FeatureF64, ResultsAreBitIdenticalForOneTwoAndThreeThreads) {
    unsigned seed = 400;
    for (const Features& f : feature_sets()) {
        Problem p = make_problem(f, 3, 1, 150, 100, seed++);
        p.spec.want_weights = GetParam();
        p.spec.want_lse = true;
        p.spec.top_k = 2;
        const BasicTensor<double> bias = widen(p.bias);
        BasicAttentionSpec<double> spec = widen(p.spec, f.masks ? &bias : nullptr);
        const BasicTensor<double> q = widen(p.q), k = widen(p.k), v = widen(p.v);
        spec.threads = 1;
        const BasicAttentionResult<double> one = attend(q, k, v, spec);
        for (const unsigned threads : {2U, 3U}) {
            spec.threads = threads;
            const BasicAttentionResult<double> many = attend(q, k, v, spec);
            EXPECT_EQ(many.output, one.output) << f.name << " threads=" << threads;
            EXPECT_EQ(many.weights, one.weights) << f.name;
            EXPECT_EQ(*many.diagnostics.lse, *one.diagnostics.lse) << f.name;
            EXPECT_EQ(*many.diagnostics.top_k_indices, *one.diagnostics.top_k_indices) << f.name;
        }
    }
}

TEST_P(FeatureF64, ResultBuffersReusedAreOverwrittenBitIdentically) {
    unsigned seed = 450;
    for (const Features& f : feature_sets()) {
        Problem p = make_problem(f, 3, 1, 130, 70, seed++);
        if (f.masks) {
            std::fill_n(&p.mask(0, 0, 3, 0), 70, std::uint8_t{0}); // a row that sees nothing
        }
        p.spec.want_weights = GetParam();
        p.spec.threads = 2;
        p.spec.want_lse = true;
        p.spec.want_entropy = true;
        p.spec.top_k = 2;
        Problem other = make_problem(f, 3, 3, 5, 4, seed++);
        other.spec.want_weights = !GetParam();
        other.spec.want_argmax = true;
        const BasicTensor<double> bias = widen(p.bias);
        const BasicTensor<double> other_bias = widen(other.bias);
        check_reuse(widen(p.q),
                    widen(p.k),
                    widen(p.v),
                    widen(p.spec, f.masks ? &bias : nullptr),
                    widen(other.q),
                    widen(other.k),
                    widen(other.v),
                    widen(other.spec, f.masks ? &other_bias : nullptr),
                    f.name);
    }
}

INSTANTIATE_TEST_SUITE_P(Features, FeatureF64, ::testing::Bool(), [](const auto& param_info) {
    return std::string(param_info.param ? "weights" : "no_weights");
});

TEST(FeatureF64, ShapeErrorsAreThoseOfTheFloatPath) {
    const BasicTensor<double> q = BasicTensor<double>::from_shape({1, 2, 3, 4});
    const BasicTensor<double> k = BasicTensor<double>::from_shape({1, 2, 5, 3});
    const BasicTensor<double> v = BasicTensor<double>::from_shape({1, 2, 5, 4});
    EXPECT_INPUT_ERROR(
        attend(q, k, v),
        attn::testing::exactly("key: expected shape [1, *, *, 4], got [1, 2, 5, 3]"));
    BasicAttentionSpec<double> spec;
    spec.sinks = {1.0};
    const BasicTensor<double> k2 = BasicTensor<double>::from_shape({1, 2, 5, 4});
    EXPECT_THROW(attend(q, k2, v, spec), InputError);
}

} // namespace
} // namespace attn

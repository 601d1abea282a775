// The one visibility rule (attn/visibility.hpp) against the float64 reference
// (tests/reference/naive_attention.hpp): with all-zero Q and K every visible key gets
// weight 1/n > 0 and every blocked key 0, so the reference's weights spell its own
// visibility out; KeyRule and Visibility must agree with it cell by cell, and the block
// helpers must cover / lie inside every row's range. Then the kernels' workspace figures
// (attend_workspace) against the kernels' documented block sizes and the memory estimate.
#include "attn/io/limits.hpp"
#include "attn/kernels.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/problem.hpp"
#include "attn/visibility.hpp"
#include "reference/naive_attention.hpp"

#include <cstdint>
#include <filesystem>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn {
namespace {

struct VisibilityCase {
    Causal causal;
    Window window;
    Align align;
    std::size_t lq, lk;
};

std::vector<VisibilityCase> cases() {
    std::vector<VisibilityCase> out;
    for (const Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
        for (const Window w : {Window{},
                               Window{0, 0},
                               Window{1, 0},
                               Window{2, -1},
                               Window{-1, 1},
                               Window{3, 2},
                               Window{0, 5}}) {
            for (const Align a : {Align::top_left, Align::bottom_right}) {
                for (const auto& [lq, lk] : std::vector<std::pair<std::size_t, std::size_t>>{
                         {1, 1}, {3, 5}, {5, 3}, {4, 4}, {6, 2}, {2, 7}}) {
                    out.push_back({c, w, a, lq, lk});
                }
            }
        }
    }
    return out;
}

std::string name(const VisibilityCase& c) {
    return "causal " + std::to_string(static_cast<int>(c.causal)) + " window [" +
           std::to_string(c.window.left) + ", " + std::to_string(c.window.right) + "] align " +
           std::to_string(static_cast<int>(c.align)) + " " + std::to_string(c.lq) + "x" +
           std::to_string(c.lk);
}

TEST(Visibility, KeyRuleMatchesTheReference) {
    for (const VisibilityCase& c : cases()) {
        SCOPED_TRACE(name(c));
        const Tensor q = Tensor::from_shape({1, 1, c.lq, 2});
        const Tensor k = Tensor::from_shape({1, 1, c.lk, 2});
        Tensor qz = q, kz = k;
        qz.fill(0.0f);
        kz.fill(0.0f);
        Tensor v = Tensor::from_shape({1, 1, c.lk, 1});
        v.fill(1.0f);
        AttentionSpec spec;
        spec.causal = c.causal;
        spec.window = c.window;
        spec.align = c.align;
        const reference::Result r = reference::naive_attention(qz, kz, v, spec);
        const KeyRule rule(spec, c.lq, c.lk);
        const Visibility vis(spec, c.lq, c.lk);
        for (std::size_t i = 0; i < c.lq; ++i) {
            for (std::size_t j = 0; j < c.lk; ++j) {
                const bool want = r.weights[i * c.lk + j] > 0.0;
                EXPECT_EQ(rule.sees(i, j), want) << "i " << i << " j " << j;
                EXPECT_EQ(vis.sees(0, 0, i, j), want) << "i " << i << " j " << j;
                EXPECT_LE(rule.keys(i).end, rule.causal_end(i));
            }
        }
        // Block helpers: any_keys covers every row's keys, all_keys lies inside each.
        for (std::size_t first = 0; first < c.lq; ++first) {
            for (std::size_t last = first; last < c.lq; ++last) {
                const KeyRange any = rule.any_keys(first, last);
                const KeyRange all = rule.all_keys(first, last);
                for (std::size_t i = first; i <= last; ++i) {
                    for (std::size_t j = 0; j < c.lk; ++j) {
                        if (rule.sees(i, j)) {
                            EXPECT_TRUE(any.contains(j)) << first << ".." << last << " j " << j;
                        }
                        if (all.contains(j)) {
                            EXPECT_TRUE(rule.sees(i, j)) << first << ".." << last << " j " << j;
                        }
                    }
                }
            }
        }
    }
}

TEST(Visibility, MasksPaddingAndMinusInfBiasBlock) {
    const std::size_t lq = 3, lk = 4;
    Mask keep = Mask::from_shape({2, 1, lq, lk});
    keep.fill(1);
    keep(1, 0, 2, 1) = 0;
    Mask pad = Mask::from_shape({1, 1, 1, lk});
    pad.fill(1);
    pad(0, 0, 0, 3) = 0;
    Tensor bias = Tensor::from_shape({1, 2, lq, lk});
    bias.fill(0.5f);
    bias(0, 1, 0, 2) = -std::numeric_limits<float>::infinity();
    bias(0, 0, 1, 1) = std::numeric_limits<float>::infinity(); // +inf does not block
    AttentionSpec spec;
    spec.keep_mask = &keep;
    spec.key_padding = &pad;
    spec.bias = &bias;
    const Visibility vis(spec, lq, lk);
    EXPECT_TRUE(vis.varies());
    for (std::size_t b = 0; b < 2; ++b) {
        for (std::size_t h = 0; h < 2; ++h) {
            for (std::size_t i = 0; i < lq; ++i) {
                for (std::size_t j = 0; j < lk; ++j) {
                    const bool want =
                        j != 3 && !(b == 1 && i == 2 && j == 1) && !(h == 1 && i == 0 && j == 2);
                    EXPECT_EQ(vis.sees(b, h, i, j), want) << b << h << i << j;
                }
            }
        }
    }
    EXPECT_FALSE(Visibility(AttentionSpec{}, lq, lk).varies());
}

// The workspace figures follow the kernels' documented blocks: 64 query rows a task,
// 128 keys a streaming block (score rows of 64 + 16 floats).
TEST(Workspace, FollowsTheKernelsBlocks) {
    const Shape q{2, 4, 300, 16}, k{2, 2, 500, 16}, v{2, 2, 500, 8};
    AttentionSpec with;
    AttentionSpec without;
    without.want_weights = false;
    const Workspace m = attend_workspace(q, k, v, with);
    EXPECT_EQ(m.shared, std::size_t{4} * 2 * 2 * 16 * 500); // packed Kᵀ
    EXPECT_EQ(m.per_thread, 0U);                            // scores go straight into the weights
    const Workspace s = attend_workspace(q, k, v, without);
    const std::uint64_t g = 2;
    EXPECT_EQ(s.shared, 0U);
    EXPECT_EQ(s.per_thread,
              4U * (g * 16 * 64 + std::uint64_t{128} * 80 + 3 * g * 64 + 64) + 8U * g * 64);
    EXPECT_EQ(attend_workspace(q, Shape{2, 2, 5000, 16}, v, without).per_thread, s.per_thread);
    without.top_k = 2; // whole rows: the materialized kernel with a 64 x Lk block per thread
    EXPECT_EQ(attend_workspace(q, k, v, without).per_thread, 4U * 64 * 500 + 8U * 500);
    BasicAttentionSpec<double> f64;
    f64.want_weights = false;
    const Workspace d = attend_workspace(q, k, v, f64);
    EXPECT_EQ(d.shared, 0U);
    EXPECT_EQ(d.per_thread, std::size_t{8} * 64 * 500);
    EXPECT_EQ(m.total(3), m.shared);
    EXPECT_EQ(d.total(3), 3 * d.per_thread);
    const Shape huge{1U << 20, 1U << 20, 1U << 20, 1U << 20};
    EXPECT_EQ(attend_workspace(huge, huge, huge, with).total(8), ~std::uint64_t{0});
}

// The memory estimate adds exactly the core's figure per further thread.
TEST(Workspace, MemoryEstimateUsesIt) {
    nlohmann::json doc;
    doc["query"] = nlohmann::json::array();
    doc["key"] = nlohmann::json::array();
    for (int i = 0; i < 300; ++i) {
        doc["query"].push_back({0.5, 1.0});
    }
    for (int i = 0; i < 200; ++i) {
        doc["key"].push_back({0.25, 1.0});
    }
    doc["value"] = doc["key"];
    const problem::Problem p = problem::decode_problem(doc, std::filesystem::current_path());
    const Shape q{1, 1, 300, 2}, k{1, 1, 200, 2};
    for (const bool weights : {true, false}) {
        AttentionSpec spec;
        spec.want_weights = weights;
        const Workspace w = attend_workspace(q, k, k, spec);
        EXPECT_EQ(problem::estimate_memory(p, weights, 2).intermediates -
                      problem::estimate_memory(p, weights, 1).intermediates,
                  w.per_thread);
    }
}

} // namespace
} // namespace attn

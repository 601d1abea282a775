// The streaming kernel's pooling for the long view (AttentionSpec::pooled_to) against the
// float64 reference's weights pooled by plain loops: per row and column of keys the max,
// the sum and the count of the keys the row pool_sees, and the row's top-k, with causal rules,
// a sliding window, key padding, GQA, columns that straddle the kernel's key blocks, rows
// whose weights are NaN or all 0, on every SIMD target, and the same bits for any thread
// count.
#include "attn/attention.hpp"
#include "attn/visibility.hpp"
#include "reference/naive_attention.hpp"
#include "unit/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace attn {
namespace {

using namespace testing;

/// What the destination got, per row of [B, H, Lq]: each column's max, sum and count (the
/// count from the rows' key ranges and padding, as the page counts), and the top-k.
struct PoolResult {
    std::size_t width = 0, k = 0;
    std::vector<float> max, sum;
    std::vector<std::uint32_t> count, top_key;
    std::vector<float> top_weight;
    std::vector<int> stored; // rows stored (each exactly once)
};

struct PoolCase {
    std::string name;
    std::size_t b = 1, h = 1, hkv = 1, lq = 0, lk = 0, d = 16, width = 0, k = 5;
    Causal causal = Causal::none;
    Window window{};
    bool padding = false;
};

std::vector<std::size_t> pool_columns(std::size_t lk, std::size_t width) {
    std::vector<std::size_t> c;
    for (std::size_t x = 0; x <= width; ++x) {
        c.push_back(x * lk / width);
    }
    return c;
}

/// attend() with `spec`, pooling into `width` columns and top `k`.
PoolResult run_pool(const Tensor& q,
                    const Tensor& k,
                    const Tensor& v,
                    AttentionSpec spec,
                    std::size_t width,
                    std::size_t top_k) {
    const std::size_t rows = q.shape()[0] * q.shape()[1] * q.shape()[2];
    const std::size_t lk = k.shape()[2];
    PoolResult out;
    out.width = width;
    out.k = top_k;
    out.max.assign(rows * width, -1.0f);
    out.sum.assign(rows * width, -1.0f);
    out.count.assign(rows * width, 0);
    out.top_key.assign(rows * top_k, 0);
    out.top_weight.assign(rows * top_k, -1.0f);
    out.stored.assign(rows, 0);
    std::mutex mutex;
    PooledDestination to;
    to.columns = pool_columns(lk, width);
    to.top_k = top_k;
    to.store = [&](std::size_t first, const PooledRows& p) {
        const std::lock_guard lock(mutex);
        for (std::size_t r = 0; r < p.rows; ++r) {
            const std::size_t row = first + r;
            ++out.stored[row];
            for (std::size_t x = p.x_begin; x < p.x_end; ++x) {
                out.max[row * width + x] = p.max[x * p.stride + r];
                out.sum[row * width + x] = p.sum[x * p.stride + r];
            }
            for (std::size_t x = 0; x < width; ++x) {
                const std::size_t a = std::max(to.columns[x], p.key_begin[r]);
                const std::size_t b = std::min(to.columns[x + 1], p.key_end[r]);
                std::uint32_t n = 0;
                if (a < b) {
                    n = p.open_before != nullptr ? p.open_before[b] - p.open_before[a]
                                                 : static_cast<std::uint32_t>(b - a);
                }
                // A column the rows see lies inside [x_begin, x_end).
                EXPECT_TRUE(n == 0 || (x >= p.x_begin && x < p.x_end)) << "row " << row;
                out.count[row * width + x] = n;
            }
            std::copy_n(p.top_key + r * top_k, top_k, out.top_key.data() + row * top_k);
            std::copy_n(p.top_weight + r * top_k, top_k, out.top_weight.data() + row * top_k);
        }
    };
    spec.want_weights = false;
    spec.pooled_to = &to;
    const AttentionResult r = attend(q, k, v, spec);
    EXPECT_FALSE(r.weights.has_value());
    return out;
}

/// Whether row i of batch b pool_sees key j: the contract's causal and window rules and the
/// padding, written out (a -inf or NaN score does not block: the page draws it).
bool pool_sees(const PoolCase& c, const Mask* pad, std::size_t b, std::size_t i, std::size_t j) {
    const auto ii = static_cast<long long>(i), jj = static_cast<long long>(j);
    const bool bottom = c.causal == Causal::bottom_right;
    const long long diag =
        ii + (bottom ? static_cast<long long>(c.lk) - static_cast<long long>(c.lq) : 0);
    if ((c.causal != Causal::none && jj > diag) ||
        (c.window.left >= 0 && jj < diag - c.window.left) ||
        (c.window.right >= 0 && jj > diag + c.window.right)) {
        return false;
    }
    return pad == nullptr || (*pad)(pad->shape()[0] == 1 ? 0 : b, 0, 0, j) != 0;
}

/// The pooled rows against the reference weights w [B, H, Lq, Lk] (float64): numpy-style
/// max and mean pooling of the visible cells, and each row's strongest keys.
void expect_pool(const PoolCase& c,
                 const PoolResult& got,
                 const std::vector<double>& w,
                 const Mask* pad) {
    // float32 weights from float32 scores (D terms), exp (2 ulp) and a sum of up to Lk
    // terms: a few ε·(D + √Lk) relative, with room.
    const double rtol = 1e-4, atol = 1e-7;
    const std::vector<std::size_t> col = pool_columns(c.lk, c.width);
    std::size_t bad = 0;
    for (std::size_t b = 0; b < c.b; ++b) {
        for (std::size_t h = 0; h < c.h; ++h) {
            for (std::size_t i = 0; i < c.lq; ++i) {
                const std::size_t row = (b * c.h + h) * c.lq + i;
                const double* wr = w.data() + row * c.lk;
                ASSERT_EQ(got.stored[row], 1) << c.name << " row " << row;
                bool nan_row = false;
                std::vector<std::size_t> visible;
                for (std::size_t j = 0; j < c.lk; ++j) {
                    if (pool_sees(c, pad, b, i, j)) {
                        visible.push_back(j);
                        nan_row = nan_row || std::isnan(wr[j]);
                    }
                }
                for (std::size_t x = 0; x < c.width; ++x) {
                    double mx = 0.0, sum = 0.0;
                    std::uint32_t n = 0;
                    for (std::size_t j = col[x]; j < col[x + 1]; ++j) {
                        if (!nan_row && pool_sees(c, pad, b, i, j)) {
                            mx = std::max(mx, wr[j]);
                            sum += wr[j];
                            ++n;
                        }
                    }
                    const std::size_t at = row * c.width + x;
                    const bool ok =
                        got.count[at] == n &&
                        (n == 0 ||
                         (std::fabs(static_cast<double>(got.max[at]) - mx) <= atol + rtol * mx &&
                          std::fabs(static_cast<double>(got.sum[at]) - sum) <= atol + rtol * sum));
                    if (!ok && bad++ < 5) {
                        ADD_FAILURE() << c.name << " row " << row << " column " << x << ": count "
                                      << got.count[at] << " vs " << n << ", max " << got.max[at]
                                      << " vs " << mx << ", sum " << got.sum[at] << " vs " << sum;
                    }
                }
                // Top-k: min(K, visible) distinct visible keys, strongest first, their weights
                // w's; none unlisted stronger than the weakest listed (beyond rtol).
                const std::size_t n = nan_row ? 0 : std::min(c.k, visible.size());
                const std::uint32_t* keys = got.top_key.data() + row * c.k;
                const float* kw = got.top_weight.data() + row * c.k;
                bool ok = true;
                std::vector<bool> listed(c.lk, false);
                for (std::size_t q = 0; q < c.k; ++q) {
                    if (q >= n) {
                        ok = ok && keys[q] == 0xffffffffU && kw[q] == 0.0f;
                        continue;
                    }
                    const std::uint32_t j = keys[q];
                    ok = ok && j < c.lk && !listed[j] && pool_sees(c, pad, b, i, j) &&
                         std::fabs(static_cast<double>(kw[q]) - wr[j]) <= atol + rtol * wr[j] &&
                         (q == 0 || kw[q] <= kw[q - 1]);
                    if (j < c.lk) {
                        listed[j] = true;
                    }
                }
                if (ok && n > 0) {
                    const double weakest = wr[keys[n - 1]];
                    for (const std::size_t j : visible) {
                        ok = ok && (listed[j] || wr[j] <= weakest * (1 + rtol) + atol);
                    }
                }
                if (!ok && bad++ < 5) {
                    ADD_FAILURE() << c.name << " row " << row << ": top-k wrong (first key "
                                  << keys[0] << ", weight " << kw[0] << ")";
                }
            }
        }
    }
    EXPECT_EQ(bad, 0U) << c.name;
}

AttentionSpec pool_spec(const PoolCase& c, const Mask* pad, Simd simd) {
    AttentionSpec s;
    s.causal = c.causal;
    s.window = c.window;
    s.key_padding = pad;
    s.simd = simd;
    return s;
}

Mask pool_padding(const PoolCase& c, std::mt19937& rng) {
    Mask m = Mask::from_shape({c.b, 1, 1, c.lk});
    std::bernoulli_distribution keep(0.8);
    for (std::size_t i = 0; i < m.size(); ++i) {
        m.data()[i] = keep(rng) ? 1 : 0;
    }
    // One batch whose keys end early (a right-padded sequence): whole key blocks of padding.
    for (std::size_t j = c.lk / 3; j < c.lk; ++j) {
        m(c.b - 1, 0, 0, j) = 0;
    }
    return m;
}

class PooledTest : public ::testing::TestWithParam<Simd> {};

// Sizes straddle the kernel's blocks (64 queries, 128 keys); widths that divide neither
// put columns across key blocks (the running max's rescale of a column begun earlier).
const PoolCase kPoolCases[] = {
    {.name = "causal",
     .h = 2,
     .hkv = 2,
     .lq = 300,
     .lk = 300,
     .width = 37,
     .causal = Causal::top_left},
    {.name = "window", .lq = 260, .lk = 260, .width = 64, .k = 7, .window = {40, 3}},
    {.name = "padding",
     .b = 2,
     .lq = 130,
     .lk = 300,
     .width = 41,
     .causal = Causal::bottom_right,
     .padding = true},
    {.name = "gqa bottom-right",
     .h = 4,
     .hkv = 2,
     .lq = 70,
     .lk = 300,
     .width = 300,
     .k = 3,
     .causal = Causal::bottom_right},
    {.name = "none, one column", .lq = 65, .lk = 129, .width = 1, .k = 129},
};

TEST_P(PooledTest, EqualsTheReferencePooled) {
    std::mt19937 rng(34);
    for (const PoolCase& c : kPoolCases) {
        const Qkv t = random_qkv(rng, {c.b, c.h, c.lq, c.d}, {c.b, c.hkv, c.lk, c.d}, 8);
        Tensor q = t.q;
        // Scores of a few units (a peaked softmax) and a max that grows from block to block.
        for (std::size_t n = 0; n < q.size(); ++n) {
            q.data()[n] *= 4.0f;
        }
        const Mask pad = pool_padding(c, rng);
        const Mask* p = c.padding ? &pad : nullptr;
        const AttentionSpec spec = pool_spec(c, p, GetParam());
        const PoolResult got = run_pool(q, t.k, t.v, spec, c.width, c.k);
        expect_pool(c, got, reference::naive_attention(q, t.k, t.v, spec).weights, p);
    }
}

TEST_P(PooledTest, GrowingMaxAcrossBlocks) {
    // Scores rise with the key (the max grows in every key block, by a lot): each column
    // straddling a block boundary is rescaled before the next block adds to it.
    const PoolCase c{.name = "rising", .lq = 3, .lk = 520, .d = 1, .width = 47, .k = 4};
    Tensor q = Tensor::from_shape({1, 1, c.lq, 1});
    Tensor k = Tensor::from_shape({1, 1, c.lk, 1});
    Tensor v = Tensor::from_shape({1, 1, c.lk, 1});
    for (std::size_t i = 0; i < c.lq; ++i) {
        q(0, 0, i, 0) = 1.0f + static_cast<float>(i);
    }
    for (std::size_t j = 0; j < c.lk; ++j) {
        k(0, 0, j, 0) = 0.05f * static_cast<float>(j);
        v(0, 0, j, 0) = 1.0f;
    }
    const AttentionSpec spec = pool_spec(c, nullptr, GetParam());
    const PoolResult got = run_pool(q, k, v, spec, c.width, c.k);
    expect_pool(c, got, reference::naive_attention(q, k, v, spec).weights, nullptr);
}

TEST_P(PooledTest, NanAndMinusInfinityRows) {
    // Row 1 pool_sees a NaN score (its weights are NaN: no values, no keys); row 2's scores are
    // all -inf (weights 0, every key it pool_sees counted, its first K keys listed at 0); rows 0
    // to 4 see fewer keys than K.
    const PoolCase c{.name = "nan/-inf",
                     .lq = 70,
                     .lk = 200,
                     .d = 2,
                     .width = 9,
                     .k = 6,
                     .causal = Causal::top_left};
    std::mt19937 rng(7);
    Tensor q = random_tensor(rng, {1, 1, c.lq, c.d});
    Tensor k = random_tensor(rng, {1, 1, c.lk, c.d}, 0.5f, 1.0f); // feature 0 > 0
    const Tensor v = random_tensor(rng, {1, 1, c.lk, 4});
    q(0, 0, 65, 0) = kNaN;
    q(0, 0, 66, 0) = -kInf;
    q(0, 0, 66, 1) = 0.0f;
    const AttentionSpec spec = pool_spec(c, nullptr, GetParam());
    const PoolResult got = run_pool(q, k, v, spec, c.width, c.k);
    std::vector<double> w = reference::naive_attention(q, k, v, spec).weights;
    expect_pool(c, got, w, nullptr);
    // Row 66: keys 0..5 listed at weight 0 (ties: the lower key).
    for (std::size_t n = 0; n < c.k; ++n) {
        EXPECT_EQ(got.top_key[66 * c.k + n], n);
        EXPECT_EQ(got.top_weight[66 * c.k + n], 0.0f);
    }
}

TEST_P(PooledTest, TheSameBitsForAnyThreadCount) {
    std::mt19937 rng(3);
    const PoolCase c{.name = "threads",
                     .h = 3,
                     .hkv = 1,
                     .lq = 200,
                     .lk = 400,
                     .width = 53,
                     .k = 8,
                     .causal = Causal::top_left};
    const Qkv t = random_qkv(rng, {1, c.h, c.lq, c.d}, {1, c.hkv, c.lk, c.d}, 8);
    AttentionSpec spec = pool_spec(c, nullptr, GetParam());
    spec.threads = 1;
    const PoolResult one = run_pool(t.q, t.k, t.v, spec, c.width, c.k);
    spec.threads = 3;
    const PoolResult three = run_pool(t.q, t.k, t.v, spec, c.width, c.k);
    const auto same = [](const auto& a, const auto& b) {
        return a.size() == b.size() &&
               std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
    };
    EXPECT_TRUE(same(one.max, three.max));
    EXPECT_TRUE(same(one.sum, three.sum));
    EXPECT_TRUE(same(one.count, three.count));
    EXPECT_TRUE(same(one.top_key, three.top_key));
    EXPECT_TRUE(same(one.top_weight, three.top_weight));
}

INSTANTIATE_TEST_SUITE_P(Targets,
                         PooledTest,
                         ::testing::ValuesIn(simd_targets()),
                         [](const auto& param_info) { return simd_label(param_info.param); });

} // namespace
} // namespace attn

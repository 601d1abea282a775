// The vector cell passes (attn/render/cell_pass.hpp) against the rules written out here in
// float64 (matplotlib's colour index of (v - vmin) / (vmax - vmin); the range of the finite
// values), on every SIMD target this CPU runs: thresholds and their neighbours, special
// values, a sweep over the float bit patterns, random values, odd lengths and offsets.
#include "attn/attention.hpp"
#include "attn/render/cell_pass.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace attn::render {
namespace {

/// The colour index of v on a linear scale, from the rule's wording: t = (v - vmin) /
/// (vmax - vmin) in float64, then 256 t truncated; t <= 0 or NaN is 0, 256 t >= 255 is 255.
std::uint8_t rule_index(float v, double vmin, double vmax) {
    const double t = (static_cast<double>(v) - vmin) / (vmax - vmin);
    if (!(t > 0.0)) {
        return 0;
    }
    const double x = t * 256.0;
    return x >= 255.0 ? 255 : static_cast<std::uint8_t>(x);
}

/// Every target this CPU runs, then back to the best.
template <class Body> void on_every_target(const Body& body) {
    for (const Simd s : simd_supported()) {
        use_cell_simd(s);
        SCOPED_TRACE("simd target " + std::to_string(static_cast<std::int64_t>(s)));
        body();
    }
    use_cell_simd(Simd::best);
}

/// Values that test a norm: each bin edge of the rule and 40 floats either side of it,
/// special values, every 4099th bit pattern, and uniform ones over and around the range.
std::vector<float> probe_values(double vmin, double vmax) {
    std::vector<float> v;
    for (int b = 0; b <= 256; ++b) {
        float e = static_cast<float>(vmin + (vmax - vmin) * b / 256.0);
        for (int k = 0; k < 40; ++k) {
            e = std::nextafter(e, -std::numeric_limits<float>::infinity());
        }
        for (int k = 0; k < 81;
             ++k, e = std::nextafter(e, std::numeric_limits<float>::infinity())) {
            v.push_back(e);
        }
    }
    const float inf = std::numeric_limits<float>::infinity();
    for (const float s : {0.0F,
                          -0.0F,
                          inf,
                          -inf,
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min(),
                          1e-40F,
                          -1e-40F,
                          static_cast<float>(vmin),
                          static_cast<float>(vmax)}) {
        v.push_back(s);
    }
    for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 4099) {
        v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
    }
    std::mt19937 rng(7);
    const double w = vmax - vmin;
    std::uniform_real_distribution<double> in(vmin - 0.1 * w, vmax + 0.1 * w);
    for (int i = 0; i < 100000; ++i) {
        v.push_back(static_cast<float>(in(rng)));
    }
    return v;
}

TEST(CellPass, ColorIndexIsTheRuleForEveryFloatOnEveryTarget) {
    // Ranges as maps have them, narrow ones far from 0 (the guess more than a bin off),
    // denormal ones, and the widest.
    const std::vector<std::pair<double, double>> norms = {
        {0.0, 1.0},
        {1.3e-9, 0.0123},
        {-3.0, 5.0},
        {1e6, 1e6 + 1.0},
        {-1e-3, -1e-3 + 1e-9},
        {1e-42, 1e-39},
        {-1e30, 1e30},
        {0.25, 0.2500001},
        {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()}};
    for (const auto& [lo, hi] : norms) {
        SCOPED_TRACE("norm [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        const std::vector<float> v = probe_values(lo, hi);
        std::vector<std::uint8_t> want(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) {
            want[i] = rule_index(v[i], lo, hi);
        }
        const ColorIndexer index(ColorNorm{lo, hi, ColorScale::linear});
        on_every_target([&] {
            for (const std::size_t offset : {std::size_t{0}, std::size_t{3}}) {
                const std::size_t n = v.size() - offset - 5; // a ragged tail too
                std::vector<std::uint8_t> got(n);
                index.map(v.data() + offset, n, got.data());
                std::size_t wrong = 0, first = n;
                for (std::size_t i = 0; i < n; ++i) {
                    if (got[i] != want[offset + i]) {
                        first = wrong++ == 0 ? i : first;
                    }
                }
                ASSERT_EQ(wrong, 0u)
                    << "first at v = " << v[offset + first] << ": got " << int{got[first]}
                    << ", the rule " << int{want[offset + first]};
            }
        });
    }
}

/// The range rule from its wording: least and greatest finite value (log: positive too).
CellRange rule_range(const std::vector<float>& v, std::size_t first, std::size_t n, bool log) {
    CellRange r{
        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), false};
    for (std::size_t i = first; i < first + n; ++i) {
        r.nan = r.nan || std::isnan(v[i]);
        if (std::isfinite(v[i]) && (!log || v[i] > 0.0F)) {
            r.lo = std::min(r.lo, v[i]);
            r.hi = std::max(r.hi, v[i]);
        }
    }
    return r;
}

TEST(CellPass, RangeIsTheRuleOnEveryTarget) {
    std::mt19937 rng(11);
    std::normal_distribution<float> g(0.0F, 3.0F);
    std::vector<float> v(203);
    on_every_target([&] {
        for (int trial = 0; trial < 400; ++trial) {
            for (float& x : v) {
                x = g(rng);
            }
            // specials at random places: each lane and the tail in turn over the trials
            const float inf = std::numeric_limits<float>::infinity();
            const float special[] = {
                inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.0F, -0.0F, 1e30F, -1e30F};
            for (int k = 0; k < trial % 5; ++k) {
                v[rng() % v.size()] = special[rng() % 7];
            }
            const std::size_t first = static_cast<std::size_t>(trial % 7);
            const std::size_t n = v.size() - first - static_cast<std::size_t>(trial % 3);
            for (const bool log : {false, true}) {
                const CellRange want = rule_range(v, first, n, log);
                const CellRange got = cell_range(v.data() + first, n, log);
                ASSERT_EQ(got.lo, want.lo) << "trial " << trial << " log " << log;
                ASSERT_EQ(got.hi, want.hi) << "trial " << trial << " log " << log;
                ASSERT_EQ(got.nan, want.nan) << "trial " << trial << " log " << log;
            }
        }
        const std::vector<float> all_bad = {std::numeric_limits<float>::quiet_NaN(),
                                            std::numeric_limits<float>::infinity()};
        const CellRange none = cell_range(all_bad.data(), all_bad.size(), false);
        EXPECT_GT(none.lo, none.hi); // nothing counted
        EXPECT_TRUE(none.nan);
    });
}

TEST(CellPass, FoldRowMaxIsTheRuleOnEveryTarget) {
    std::mt19937 rng(13);
    std::uniform_real_distribution<float> u(-2.0F, 2.0F);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    on_every_target([&] {
        for (const std::size_t n :
             {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17}, std::size_t{67}}) {
            std::vector<float> got_max(n, -inf), want_max(n, -inf);
            std::vector<std::uint32_t> got_count(n, 0), want_count(n, 0);
            for (int row = 0; row < 9; ++row) {
                std::vector<float> v(n);
                for (std::size_t j = 0; j < n; ++j) {
                    const unsigned pick = rng() % 8;
                    v[j] = pick == 0   ? nan
                           : pick == 1 ? (rng() % 2 ? 0.0F : -0.0F)
                           : pick == 2 ? -inf
                                       : u(rng);
                }
                fold_row_max(v.data(), n, got_max.data(), got_count.data());
                for (std::size_t j = 0; j < n; ++j) { // the rule: greater replaces, NaN never
                    if (v[j] > want_max[j]) {
                        want_max[j] = v[j];
                    }
                    want_count[j] += std::isnan(v[j]) ? 0U : 1U;
                }
            }
            for (std::size_t j = 0; j < n; ++j) {
                ASSERT_EQ(std::bit_cast<std::uint32_t>(got_max[j]),
                          std::bit_cast<std::uint32_t>(want_max[j]))
                    << "column " << j << " of " << n;
                ASSERT_EQ(got_count[j], want_count[j]) << "column " << j << " of " << n;
            }
        }
    });
}

/// Every float, on the best target, for the benchmark's kind of norm and a narrow one: run
/// by hand (--gtest_also_run_disabled_tests), about a minute.
TEST(CellPass, DISABLED_ColorIndexIsTheRuleForAllFloats) {
    for (const auto& [lo, hi] :
         {std::pair{1.3e-9, 0.0123}, std::pair{-3.0, 5.0}, std::pair{1e6, 1e6 + 1.0}}) {
        const ColorIndexer index(ColorNorm{lo, hi, ColorScale::linear});
        std::vector<float> v(std::size_t{1} << 20);
        std::vector<std::uint8_t> got(v.size());
        std::uint64_t wrong = 0;
        for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += v.size()) {
            for (std::size_t i = 0; i < v.size(); ++i) {
                v[i] = std::bit_cast<float>(static_cast<std::uint32_t>(base + i));
            }
            index.map(v.data(), v.size(), got.data());
            for (std::size_t i = 0; i < v.size(); ++i) {
                wrong += got[i] != rule_index(v[i], lo, hi) ? 1U : 0U;
            }
        }
        EXPECT_EQ(wrong, 0u) << "norm [" << lo << ", " << hi << "]";
    }
}

} // namespace
} // namespace attn::render

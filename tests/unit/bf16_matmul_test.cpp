// The BF16 pair products of the stored-type product (MatmulOptions::activations = bf16: BF16
// weights multiply their inputs rounded to BF16), per SIMD target this CPU runs, on shapes
// that straddle the 6-row tiles, the 16-lane vectors, the 64-row panels and the 512-pair
// chunks, with odd K and K not a multiple of 32 (x rows 1, 5, 7, 13; W rows 1, 17, 70;
// K = 1, 2, 31, 33, 63, 1031; 9 x 130 x 2049 and 37 x 130 x 1031, whose 16 x 16 tiles of y
// lie whole in y). AVX3_DL, named, runs vdpbf16ps itself on a CPU with AVX512_BF16; every
// other target the same chain in float32 FMAs (or, without FMA, a multiply and an add), so the
// instruction and the FMAs are held to one oracle; on a CPU with AMX-BF16 Simd::best runs
// AMX's tiles (a case of its own, "AMX"), held to TDPBF16PS's:
//   - bit-identical, for 1 and 3 threads, to this file's transcription of vdpbf16ps from
//     Intel's definition (per pair i: acc = fma(x̂[2i+1], w[2i+1], acc), then
//     acc = fma(x̂[2i], w[2i], acc)), or of TDPBF16PS (per block of 16 pairs, the even and odd
//     products summed apart, then added to acc), over x rounded by this file's own rounding
//     (the nearer of the two BF16 neighbours, by float64 distance, the even one on a tie);
//   - against float64 of x̂ · w, within float32's bound for a chain of kp FMAs (γ(kp) ·
//     Σ |x̂ w|, kp = K rounded up to even);
//   - against float64 of the unrounded x, within the rounding's bound: |x − x̂| <= 2^-8 |x|,
//     so |y − x · w| <= 2^-8 Σ |x| |w| + the bound above;
//   - round to nearest even on hand-worked ties, overflow to infinity, subnormals flushed;
//     NaN, infinity and zero rows; sums in the subnormal range flushed as vdpbf16ps does;
//   - other weight types keep their f32 products.
#include "attn/model/matmul.hpp"
#include "attn/model/quants.hpp"
#include "unit/ggml_blocks.hpp"
#include "unit/stored_product.hpp"
#include "unit/test_util.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

// A named namespace: a unity build joins this file with other matmul tests.
namespace attn::model::bf16_matmul_test {
namespace {

using testing::cpuinfo_flag;
using testing::random_ggml_blocks;
using testing::Shape3;
using testing::simd_label;
using testing::simd_targets;
using testing::stored_product;

constexpr std::uint32_t kBf16 = 30;
constexpr float kFltMin = std::numeric_limits<float>::min();

std::vector<Shape3> shapes() {
    std::vector<Shape3> out;
    for (const std::size_t k : {1U, 2U, 31U, 33U, 63U, 1031U}) {
        for (const std::size_t n : {1U, 5U, 7U, 13U}) {
            for (const std::size_t m : {1U, 17U, 70U}) {
                out.push_back({n, m, k});
            }
        }
    }
    out.push_back({9, 130, 2049});  // three panels, five chunks, an odd K
    out.push_back({37, 130, 1031}); // AMX: whole tiles of y and tiles at its edges
    return out;
}

/// A BF16 value as float64 (255 as the exponent: ±2^128, the distance to overflow's side).
double bf16_double(std::uint16_t h) {
    const int e = (h >> 7) & 0xFF;
    const double sign = (h & 0x8000) != 0 ? -1.0 : 1.0;
    const double mant = static_cast<double>(h & 0x7F) / 128.0;
    if (e == 0) {
        return sign * std::ldexp(mant, -126);
    }
    return sign * std::ldexp(e == 255 ? 1.0 : 1.0 + mant, e - 127);
}

/// x rounded to BF16 from the definition: of the two BF16 values around x (its top 16 bits
/// and the next away from zero), the nearer by float64 distance, on a tie the one whose
/// last bit is 0; a result with exponent field 0 becomes a zero of its sign; NaN stays NaN.
float bf16_round(float x) {
    if (std::isnan(x) || std::isinf(x)) {
        return x;
    }
    const auto u = std::bit_cast<std::uint32_t>(x);
    const auto below = static_cast<std::uint16_t>(u >> 16);
    const auto above = static_cast<std::uint16_t>(below + 1);
    const double d_below = std::fabs(static_cast<double>(x) - bf16_double(below));
    const double d_above = std::fabs(bf16_double(above) - static_cast<double>(x));
    std::uint16_t h = below;
    if (d_above < d_below || (d_above == d_below && (below & 1) != 0)) {
        h = above;
    }
    if ((h & 0x7F80) == 0) {
        h &= 0x8000;
    }
    return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

/// vdpbf16ps's result written from Intel's definition: pairs (2i, 2i + 1) in order, the odd
/// product first, each step one FMA; inputs and results below 2^-126 in magnitude are zeros.
/// x̂ [n, k] rounded, w [m, k] as stored.
std::vector<float>
chain_reference(const std::vector<float>& xq, const std::vector<float>& w, const Shape3& s) {
    const auto daz = [](float v) { return std::fabs(v) < kFltMin ? std::copysign(0.0F, v) : v; };
    std::vector<float> y(s.n * s.m);
    for (std::size_t i = 0; i < s.n; ++i) {
        for (std::size_t j = 0; j < s.m; ++j) {
            float acc = 0.0F;
            for (std::size_t p = 0; p < s.k; p += 2) {
                const float x1 = p + 1 < s.k ? daz(xq[i * s.k + p + 1]) : 0.0F;
                const float w1 = p + 1 < s.k ? daz(w[j * s.k + p + 1]) : 0.0F;
                acc = daz(std::fma(x1, w1, acc));
                acc = daz(std::fma(daz(xq[i * s.k + p]), daz(w[j * s.k + p]), acc));
            }
            y[i * s.m + j] = acc;
        }
    }
    return y;
}

/// TDPBF16PS's result written from Intel's definition (the SDM's pseudo-code since 2023): per
/// output, the pairs in blocks of 16 from the first; per block the even k's products summed
/// by FMAs from +0 and the odd k's apart, then acc = acc + (even + odd); inputs and every
/// result below 2^-126 in magnitude zeros. x̂ [n, k] rounded, w [m, k] as stored.
std::vector<float>
tile_reference(const std::vector<float>& xq, const std::vector<float>& w, const Shape3& s) {
    const auto daz = [](float v) { return std::fabs(v) < kFltMin ? std::copysign(0.0F, v) : v; };
    const std::size_t pairs = (s.k + 1) / 2;
    std::vector<float> y(s.n * s.m);
    for (std::size_t i = 0; i < s.n; ++i) {
        for (std::size_t j = 0; j < s.m; ++j) {
            float acc = 0.0F;
            for (std::size_t b = 0; b < pairs; b += 16) {
                float even = 0.0F;
                float odd = 0.0F;
                for (std::size_t q = b; q < std::min(b + 16, pairs); ++q) {
                    const std::size_t p = 2 * q;
                    even = daz(std::fma(daz(xq[i * s.k + p]), daz(w[j * s.k + p]), even));
                    if (p + 1 < s.k) {
                        odd = daz(std::fma(daz(xq[i * s.k + p + 1]), daz(w[j * s.k + p + 1]), odd));
                    }
                }
                acc = daz(acc + daz(even + odd));
            }
            y[i * s.m + j] = acc;
        }
    }
    return y;
}

/// The oracle of the way `simd` runs the products on this CPU.
std::vector<float>
reference(const std::vector<float>& xq, const std::vector<float>& w, const Shape3& s, Simd simd) {
    return bf16_products(simd) == "AMX" ? tile_reference(xq, w, s) : chain_reference(xq, w, s);
}

std::vector<float> rounded(const std::vector<float>& x) {
    std::vector<float> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        out[i] = bf16_round(x[i]);
    }
    return out;
}

/// BF16 bytes of the values `w` (each already a BF16 value).
std::vector<std::uint8_t> bf16_bytes(const std::vector<float>& w) {
    std::vector<std::uint8_t> out(2 * w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
        const std::uint32_t u = std::bit_cast<std::uint32_t>(w[i]) >> 16;
        out[2 * i] = static_cast<std::uint8_t>(u & 0xFF);
        out[2 * i + 1] = static_cast<std::uint8_t>(u >> 8);
    }
    return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The target's name, or "AMX" for Simd::best where it runs AMX's tiles.
std::string kernel_label(Simd simd) {
    return simd == Simd::best ? std::string(bf16_products(simd)) : simd_label(simd);
}

std::string label(Simd simd, const Shape3& s) {
    return kernel_label(simd) + " n=" + std::to_string(s.n) + " m=" + std::to_string(s.m) +
           " k=" + std::to_string(s.k);
}

MatmulOptions bf16_options(Simd simd, unsigned threads) {
    return {.threads = threads, .simd = simd, .activations = Activations::bf16};
}

class Bf16Matmul : public ::testing::TestWithParam<Simd> {};

TEST_P(Bf16Matmul, EqualsThePairOrderChainBitForBitForAnyThreadCount) {
    const Simd simd = GetParam();
    std::uint32_t seed = 500;
    for (const Shape3& s : shapes()) {
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(kBf16, s.m * s.k, ++seed);
        std::vector<float> w(s.m * s.k);
        dequantize_ggml(kBf16, bytes, w);
        const std::vector<float> x = testing::random_floats(s.n * s.k, ++seed);
        const std::vector<float> want = reference(rounded(x), w, s, simd);
        for (const unsigned threads : {1U, 3U}) {
            const std::vector<float> y =
                stored_product(x, s, kBf16, bytes, bf16_options(simd, threads));
            ASSERT_TRUE(same_bits(want, y)) << label(simd, s) << ", " << threads << " threads";
        }
    }
}

TEST_P(Bf16Matmul, MatchesFloat64OfTheRoundedActivationsAndStaysWithinTheRoundingOfTheExact) {
    const Simd simd = GetParam();
    std::uint32_t seed = 700;
    std::size_t moved_by_rounding = 0;
    for (const Shape3& s : shapes()) {
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(kBf16, s.m * s.k, ++seed);
        std::vector<float> w(s.m * s.k);
        dequantize_ggml(kBf16, bytes, w);
        const std::vector<float> x = testing::random_floats(s.n * s.k, ++seed);
        const std::vector<float> xq = rounded(x);
        std::vector<double> xq64(xq.begin(), xq.end());
        std::vector<double> err(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) {
            err[i] = std::ldexp(std::fabs(static_cast<double>(x[i])), -8);
        }
        const testing::DotSums want = testing::dot_sums(x, xq64, err, w, s);
        const std::vector<float> y = stored_product(x, s, kBf16, bytes, bf16_options(simd, 1));
        for (std::size_t e = 0; e < y.size(); ++e) {
            const double bound = testing::float32_sum_bound(s.k + (s.k & 1U), want.abs[e]);
            const auto got = static_cast<double>(y[e]);
            ASSERT_LE(std::fabs(got - want.rounded[e]), bound) << label(simd, s) << " at " << e;
            ASSERT_LE(std::fabs(got - want.exact[e]), want.moved[e] + bound)
                << label(simd, s) << " at " << e;
            moved_by_rounding += std::fabs(want.exact[e] - want.rounded[e]) > bound ? 1U : 0U;
        }
    }
    // The rounding is really applied: the exact product is out of the first bound.
    EXPECT_GT(moved_by_rounding, 0U) << kernel_label(simd);
}

/// x̂ read back through W = the identity (BF16 1.0 on the diagonal), each value in a row of
/// its own (x = diag(values)): y[j, j] = x̂_j (an infinity's row has NaNs off the diagonal).
std::vector<float> read_back(const std::vector<float>& values, Simd simd) {
    const std::size_t n = values.size();
    const Shape3 s{n, n, n};
    std::vector<float> x(n * n, 0.0F);
    std::vector<float> w(n * n, 0.0F);
    for (std::size_t j = 0; j < n; ++j) {
        x[j * n + j] = values[j];
        w[j * n + j] = 1.0F;
    }
    const std::vector<float> y = stored_product(x, s, kBf16, bf16_bytes(w), bf16_options(simd, 1));
    std::vector<float> out(n);
    for (std::size_t j = 0; j < n; ++j) {
        out[j] = y[j * n + j];
    }
    return out;
}

TEST_P(Bf16Matmul, RoundsToNearestEvenOverflowsToInfinityAndFlushesSubnormals) {
    const auto f = [](std::uint32_t u) { return std::bit_cast<float>(u); };
    const float inf = std::numeric_limits<float>::infinity();
    // {x, x̂}: worked by hand from the bits (BF16 keeps the top 16 of float32's 32).
    const std::vector<std::pair<float, float>> cases = {
        {f(0x3F808000), 1.0F},          // 1 + 2^-8: a tie, 0x3F80 is even
        {f(0x3F818000), 1.015625F},     // 1 + 3 · 2^-8: a tie, up to 0x3F82 (even)
        {f(0x3F808001), 1.0078125F},    // just above the tie: up to 0x3F81
        {f(0x3F817FFF), 1.0078125F},    // just below a tie: down to 0x3F81
        {-f(0x3F808000), -1.0F},        // ties are symmetric
        {-f(0x3F818000), -1.015625F},   //
        {f(0x7F7FFFFF), inf},           // FLT_MAX: past BF16's largest, to infinity
        {f(0x7F7F7FFF), f(0x7F7F0000)}, // just below that tie: BF16's largest
        {f(0x007FFFFF), kFltMin},       // the largest subnormal rounds up to 2^-126
        {f(0x00400000), 0.0F},          // 2^-127: a BF16 subnormal, flushed
        {-f(0x00400000), 0.0F},         // to -0; the chain from +0 gives +0
        {f(0x00FF8000), f(0x01000000)}, // a tie at 2^-126's binade: up to 2^-125
        {0.0F, 0.0F},                   //
    };
    std::vector<float> x;
    for (const auto& c : cases) {
        x.push_back(c.first);
    }
    const std::vector<float> y = read_back(x, GetParam());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(cases[i].second))
            << kernel_label(GetParam()) << " case " << i << ": x = " << cases[i].first << ", got "
            << y[i] << ", want " << cases[i].second;
        EXPECT_EQ(bf16_round(cases[i].first), cases[i].second) << "the oracle, case " << i;
    }
}

TEST_P(Bf16Matmul, NanInfinityAndZeroRows) {
    const Simd simd = GetParam();
    const Shape3 s{4, 19, 37};
    const std::vector<std::uint8_t> bytes = random_ggml_blocks(kBf16, s.m * s.k, 11);
    std::vector<float> x = testing::random_floats(s.n * s.k, 12);
    x[0 * s.k + 5] = testing::kNaN;
    x[1 * s.k + 36] = std::numeric_limits<float>::infinity(); // the odd K's last element
    for (std::size_t p = 0; p < s.k; ++p) {
        x[2 * s.k + p] = 0.0F;
    }
    const std::vector<float> y = stored_product(x, s, kBf16, bytes, bf16_options(simd, 1));
    for (std::size_t j = 0; j < s.m; ++j) {
        EXPECT_TRUE(std::isnan(y[j])) << j;
        EXPECT_TRUE(std::isinf(y[s.m + j])) << j; // |w| >= 0.25: ±inf, never a NaN
        EXPECT_EQ(std::bit_cast<std::uint32_t>(y[2 * s.m + j]), 0U) << j; // +0 exactly
        EXPECT_TRUE(std::isfinite(y[3 * s.m + j])) << j;
    }
}

TEST_P(Bf16Matmul, FlushesSumsBelowTheSmallestNormalAsTheInstructionDoes) {
    // Products and sums around 2^-126: every target with FMA gives the chain's bits with
    // denormal inputs and results as zeros. SSE4, SSSE3 and the scalar target (no FMA: a
    // multiply, then an add) agree only where no product falls below 2^-126: not asked here.
    const Simd simd = GetParam();
    const std::string name = kernel_label(simd);
    if (name != "AMX" && name != "AVX3_DL" && name != "AVX3" && name != "AVX2") {
        GTEST_SKIP() << name << " has no FMA";
    }
    const Shape3 s{7, 70, 65};
    std::vector<float> x = testing::random_floats(s.n * s.k, 13);
    std::vector<float> w = testing::random_floats(s.m * s.k, 14);
    for (float& v : x) {
        v = bf16_round(std::ldexp(v, -63)); // |x̂ w| down to 2^-126 and below
    }
    for (float& v : w) {
        v = bf16_round(std::ldexp(v, -62));
    }
    w[3] = std::bit_cast<float>(0x00400000U); // a subnormal weight: read as 0
    const std::vector<float> want = reference(x, w, s, simd);
    const std::vector<float> y = stored_product(x, s, kBf16, bf16_bytes(w), bf16_options(simd, 1));
    EXPECT_TRUE(same_bits(want, y)) << name;
    std::size_t flushed = 0;
    for (std::size_t e = 0; e < y.size(); ++e) {
        flushed += y[e] == 0.0F ? 1U : 0U;
    }
    EXPECT_GT(flushed, 0U) << "the data reaches the subnormal range";
}

std::string case_name(const ::testing::TestParamInfo<Simd>& info) {
    return kernel_label(info.param);
}

/// Every target this CPU runs, and Simd::best again where it runs AMX's tiles.
std::vector<Simd> kernels() {
    std::vector<Simd> out = simd_targets();
    if (bf16_products(Simd::best) == "AMX") {
        out.push_back(Simd::best);
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(Targets, Bf16Matmul, ::testing::ValuesIn(kernels()), case_name);

TEST(Bf16MatmulOtherTypes, KeepTheFloat32Products) {
    const Shape3 s{5, 7, 256};
    const std::vector<float> x = testing::random_floats(s.n * s.k, 3);
    for (const std::uint32_t type : {0U, 1U, 8U, 12U}) { // F32, F16, Q8_0, Q4_K
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 4);
        const std::vector<float> f32 = stored_product(x, s, type, bytes, {});
        const std::vector<float> bf16 =
            stored_product(x, s, type, bytes, {.activations = Activations::bf16});
        EXPECT_TRUE(same_bits(f32, bf16)) << type;
    }
}

TEST(Bf16MatmulKernels, FollowTheCpuFlags) {
    // A wrong CPUID leaf or bit would pass every test above: the other way gives the same
    // bits (or, for AMX, falls back silently). So the choice is held to the kernel's flags.
    const std::optional<bool> pairs = cpuinfo_flag("avx512_bf16");
    const std::optional<bool> amx = cpuinfo_flag("amx_bf16");
    if (!pairs || !amx) {
        GTEST_SKIP() << "no /proc/cpuinfo";
    }
    for (const Simd simd : simd_targets()) {
        if (simd_label(simd) == "AVX3_DL") {
            EXPECT_EQ(bf16_products(simd), *pairs ? "vdpbf16ps" : "FMA");
        }
    }
    if (*amx) { // the tile state granted on a Linux that lists the flag
        EXPECT_EQ(bf16_products(Simd::best), "AMX");
    } else {
        EXPECT_NE(bf16_products(Simd::best), "AMX");
    }
}

TEST(Bf16MatmulNames, SpellsTheChoice) {
    EXPECT_EQ(activations_name(Activations::bf16), "bf16");
    EXPECT_EQ(activations_named("bf16"), Activations::bf16);
    EXPECT_EQ(activations_types(Activations::bf16), "BF16");
    EXPECT_EQ(activations_named("bf17"), std::nullopt);
}

} // namespace
} // namespace attn::model::bf16_matmul_test

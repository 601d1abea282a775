// The integer path of the stored-type product (MatmulOptions::activations = q8_0), per
// type (Q8_0, Q4_0) and per SIMD target this CPU runs, on shapes that straddle its 4 x 4
// tile and its 64-row panels (x rows 1, 3, 5, 17; W rows 1, 7, 13, 70; K = 32, 96, 2304):
//   - against float64 of (the dequantized W) x (x rounded to Q8_0 by this file's own
//     transcription of ggml's quantize_row_q8_0_ref), within float32's summation bound over
//     the blocks' chain (one rounding of d_w · d_x and one FMA per block: (blocks + 1) u);
//   - against float64 of the unrounded x, within the rounding's bound: each element moves by
//     |x - d16 · q| <= d · (1/2 + 2^-15 + 127 · 2^-11) (the rounding of q, of x · (1/d) in
//     float32, and of d to binary16: relative 2^-11 for d >= 2^-14), so
//     |y - x · w| <= Σ_k |w_k| · e_block(k) + the float32 bound above;
//   - bit-identical on every target and for any thread count;
//   - other types ignore the choice (their f32 products);
//   - the instruction int8_products names follows the target and /proc/cpuinfo (AVX-VNNI
//     on the AVX2 target exactly where the CPU lists avx_vnni, AVX512_VNNI on AVX3 where it
//     lists avx512_vnni).
#include "attn/half.hpp"
#include "attn/model/matmul.hpp"
#include "attn/model/quants.hpp"
#include "unit/ggml_blocks.hpp"
#include "unit/stored_product.hpp"
#include "unit/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// A named namespace: a unity build joins this file with stored_matmul_test.cpp.
namespace attn::model::q8_matmul_test {
namespace {

using testing::cpuinfo_flag;
using testing::random_ggml_blocks;
using testing::simd_label;
using testing::simd_targets;

using testing::Shape3;
using testing::stored_product;

std::vector<Shape3> shapes() {
    std::vector<Shape3> out;
    for (const std::size_t k : {32U, 96U}) {
        for (const std::size_t n : {1U, 3U, 5U, 17U}) {
            for (const std::size_t m : {1U, 7U, 13U}) {
                out.push_back({n, m, k});
            }
        }
    }
    out.push_back({9, 70, 2304}); // several panels of 64 W rows, 72 blocks
    return out;
}

/// x rounded to Q8_0 as ggml's quantize_row_q8_0_ref does (d = amax / 127, id = 1 / d,
/// q = roundf(x · id), d stored as fp16), as float64 values d16 · q; `err` gets the
/// per-element bound d · (1/2 + 2^-15 + 127 · 2^-11) of each element's block.
std::vector<double> q8_rounded(const std::vector<float>& x, std::vector<double>& err) {
    std::vector<double> out(x.size());
    err.assign(x.size(), 0.0);
    for (std::size_t b0 = 0; b0 < x.size(); b0 += 32) {
        float amax = 0.0F;
        for (std::size_t j = 0; j < 32; ++j) {
            amax = std::max(amax, std::fabs(x[b0 + j]));
        }
        const float d = amax / 127.0F;
        const float id = d != 0.0F ? 1.0F / d : 0.0F;
        const auto d16 = static_cast<double>(half_to_float(double_to_half(static_cast<double>(d))));
        for (std::size_t j = 0; j < 32; ++j) {
            out[b0 + j] = d16 * static_cast<double>(std::roundf(x[b0 + j] * id));
            err[b0 + j] = static_cast<double>(d) *
                          (0.5 + std::ldexp(1.0, -15) + 127.0 * std::ldexp(1.0, -11));
        }
    }
    return out;
}

testing::DotSums
reference(const std::vector<float>& x, const std::vector<float>& w, const Shape3& s) {
    std::vector<double> err;
    const std::vector<double> xq = q8_rounded(x, err);
    return testing::dot_sums(x, xq, err, w, s);
}

class Q8Matmul : public ::testing::TestWithParam<std::tuple<std::uint32_t, Simd>> {};

TEST_P(Q8Matmul, MatchesFloat64OfTheRoundedActivationsAndStaysWithinTheRoundingOfTheExact) {
    const auto [type, simd] = GetParam();
    std::uint32_t seed = 100;
    for (const Shape3& s : shapes()) {
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, ++seed);
        std::vector<float> w(s.m * s.k);
        dequantize_ggml(type, bytes, w);
        const std::vector<float> x = testing::random_floats(s.n * s.k, ++seed);
        const testing::DotSums want = reference(x, w, s);
        const std::vector<float> y = stored_product(
            x, s, type, bytes, {.threads = 1, .simd = simd, .activations = Activations::q8_0});
        const std::size_t blocks = s.k / 32;
        std::size_t moved_by_rounding = 0;
        for (std::size_t e = 0; e < y.size(); ++e) {
            const std::string where = std::string(ggml_type_traits(type)->name) + " " +
                                      simd_label(simd) + " n=" + std::to_string(s.n) +
                                      " m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) +
                                      " at " + std::to_string(e);
            const double bound = testing::float32_sum_bound(blocks + 1, want.abs[e]);
            const auto got = static_cast<double>(y[e]);
            ASSERT_LE(std::fabs(got - want.rounded[e]), bound) << where;
            ASSERT_LE(std::fabs(got - want.exact[e]), want.moved[e] + bound) << where;
            moved_by_rounding += std::fabs(want.exact[e] - want.rounded[e]) > bound ? 1U : 0U;
        }
        // The rounding is really applied: the exact product is out of the first bound.
        EXPECT_GT(moved_by_rounding, 0U) << "n=" << s.n << " m=" << s.m << " k=" << s.k;
    }
}

TEST_P(Q8Matmul, EqualsThePortableLoopBitForBitForAnyThreadCount) {
    const auto [type, simd] = GetParam();
    const Simd portable = simd_targets().back();
    for (const Shape3& s : {Shape3{17, 70, 2304}, Shape3{8, 16, 96}}) {
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 7);
        const std::vector<float> x = testing::random_floats(s.n * s.k, 8);
        const std::vector<float> want = stored_product(
            x, s, type, bytes, {.threads = 1, .simd = portable, .activations = Activations::q8_0});
        // vnni false: the AVX2 and AVX3 targets' maddubs also on a CPU with VNNI.
        for (const auto& [threads, vnni] : {std::pair{1U, true}, {3U, true}, {1U, false}}) {
            const std::vector<float> got = stored_product(
                x,
                s,
                type,
                bytes,
                {.threads = threads, .simd = simd, .activations = Activations::q8_0, .vnni = vnni});
            EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
                << simd_label(simd) << " against " << simd_label(portable) << ", " << threads
                << " threads, vnni " << vnni << ", n=" << s.n << " m=" << s.m;
        }
    }
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<std::uint32_t, Simd>>& info) {
    return std::string(ggml_type_traits(std::get<0>(info.param))->name) + "_" +
           simd_label(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(TypesAndTargets,
                         Q8Matmul,
                         ::testing::Combine(::testing::Values(8U, 2U),
                                            ::testing::ValuesIn(simd_targets())),
                         case_name);

TEST(Q8MatmulOtherTypes, KeepTheFloat32Products) {
    const Shape3 s{5, 7, 256};
    const std::vector<float> x = testing::random_floats(s.n * s.k, 3);
    for (const std::uint32_t type : {1U, 3U, 12U}) { // F16, Q4_1, Q4_K
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 4);
        const std::vector<float> f32 = stored_product(x, s, type, bytes, {});
        const std::vector<float> q8 =
            stored_product(x, s, type, bytes, {.activations = Activations::q8_0});
        EXPECT_EQ(std::memcmp(f32.data(), q8.data(), f32.size() * sizeof(float)), 0) << type;
    }
}

TEST(Q8MatmulNonFinite, ABlockWithANaNOrAnInfinityGivesNaN) {
    const Shape3 s{2, 4, 64};
    std::vector<float> x = testing::random_floats(s.n * s.k, 5);
    x[40] = std::numeric_limits<float>::infinity(); // row 0, block 1
    const std::vector<std::uint8_t> bytes = random_ggml_blocks(8, s.m * s.k, 6);
    const std::vector<float> y = stored_product(x, s, 8, bytes, {.activations = Activations::q8_0});
    for (std::size_t j = 0; j < s.m; ++j) {
        EXPECT_TRUE(std::isnan(y[j])) << j;
        EXPECT_TRUE(std::isfinite(y[s.m + j])) << j;
    }
}

/// Q8_0 weights [32, 32·blocks] that pick element j of each block's activations: row j
/// holds 1 at column j of block 0 (d = 1), zeros elsewhere, so y[n, j] = d16 · q of x[n, j]
/// exactly (d16 · q: 11 by 7 significant bits; one FMA onto 0).
std::vector<std::uint8_t> q8_0_identity(std::size_t blocks) {
    std::vector<std::uint8_t> bytes(32 * blocks * 34, 0);
    for (std::size_t j = 0; j < 32; ++j) {
        std::uint8_t* row = bytes.data() + j * blocks * 34;
        for (std::size_t b = 0; b < blocks; ++b) {
            row[b * 34 + 1] = 0x3C; // d = 1.0 (fp16 0x3C00)
        }
        row[2 + j] = 1;
    }
    return bytes;
}

TEST(Q8MatmulRounding, IsGgmlsQuantizeRowQ8_0RefTiesAwayFromZero) {
    const Shape3 s{3, 32, 64};
    std::vector<float> x = testing::random_floats(s.n * s.k, 12);
    // Row 0: amax 127, so d = 1 and q = roundf(x): ties away from zero (2.5 -> 3, where
    // Q8_K's nearest_int gives 2), the float just below 1/2 -> 0.
    const std::vector<float> row0 = {127.0F,
                                     2.5F,
                                     3.5F,
                                     -2.5F,
                                     0.5F,
                                     1.5F,
                                     -126.5F,
                                     0.49999997F,
                                     -0.49999997F,
                                     126.5F,
                                     -0.5F,
                                     62.5F};
    const std::vector<float> want0 = {127, 3, 4, -3, 1, 2, -127, 0, 0, 127, -1, 63};
    std::copy(row0.begin(), row0.end(), x.begin());
    // Row 2: amax 1e-39, d = amax / 127 subnormal, 1 / d overflows: d16 = 0, so every
    // product is 0 (ggml's q are undefined there), never NaN.
    for (std::size_t j = 0; j < 32; ++j) {
        x[2 * s.k + j] = j == 5 ? 1e-39F : 0.0F;
    }
    std::vector<double> err;
    const std::vector<double> rounded = q8_rounded(x, err);
    for (std::size_t j = 0; j < want0.size(); ++j) {
        ASSERT_EQ(rounded[j], static_cast<double>(want0[j])) << "the oracle, at " << j;
    }
    const std::vector<std::uint8_t> w = q8_0_identity(s.k / 32);
    for (const Simd simd : simd_targets()) {
        const std::vector<float> y = stored_product(
            x, s, 8, w, {.threads = 2, .simd = simd, .activations = Activations::q8_0});
        for (std::size_t n = 0; n < 2; ++n) {
            for (std::size_t j = 0; j < 32; ++j) {
                ASSERT_EQ(static_cast<double>(y[(n * s.m) + j]), rounded[n * s.k + j])
                    << simd_label(simd) << " row " << n << ", " << j << ": x = " << x[n * s.k + j];
            }
        }
        for (std::size_t j = 0; j < 32; ++j) {
            ASSERT_EQ(y[(2 * s.m) + j], 0.0F) << simd_label(simd) << " the subnormal block, " << j;
        }
    }
}

TEST(Q8MatmulInstructions, FollowTheTargetAndTheCpuFlags) {
    // A VNNI pass gives the same bits as maddubs, so a wrong CPUID bit would pass every test
    // above (or fault on a CPU without the instruction): the choice is held to the kernel's
    // flags. On a CPU with them the AVX2 and AVX3 cases above run both passes (vnni false).
    const std::optional<bool> avx_vnni = cpuinfo_flag("avx_vnni");
    const std::optional<bool> avx512_vnni = cpuinfo_flag("avx512_vnni");
    if (!avx_vnni || !avx512_vnni) {
        GTEST_SKIP() << "no /proc/cpuinfo";
    }
    for (const Simd simd : simd_targets()) {
        const std::string name = simd_label(simd);
        const std::string want = name == "AVX3_DL" ? "AVX512-VNNI"
                                 : name == "AVX2"  ? (*avx_vnni ? "AVX-VNNI" : "maddubs")
                                 : name == "AVX3"  ? (*avx512_vnni ? "AVX512-VNNI" : "maddubs")
                                                   : "portable";
        EXPECT_EQ(int8_products(simd), want) << name;
    }
}

} // namespace
} // namespace attn::model::q8_matmul_test

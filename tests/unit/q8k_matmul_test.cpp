// The integer path of the stored-type product for the K-quants (MatmulOptions::activations
// = q8: Q4_K, Q5_K and Q6_K weights multiply their inputs rounded to Q8_K), per type and
// per SIMD target this CPU runs, on shapes that straddle the 4-row tiles, the 8- and
// 16-lane groups and the 64-row panels (x rows 1, 3, 5, 17; W rows 1, 7, 13, 70; K = 256,
// 768, 2304):
//   - the rounding itself, read back through a W that picks single elements, against this
//     file's transcription of ggml's quantize_row_q8_K_ref (iscale = −127 / x_max, q =
//     nearest-even(iscale · x), d = 1 / iscale), ties and the signs of d included;
//   - against float64 of (the dequantized W) x (x rounded to Q8_K), within float32's bound
//     over the chain: per super-block two terms, d_w · d_x · isum and dmin_w · d_x · corr
//     (Q6_K: one), each from one rounding of the scale product, one of the int32 sum to
//     float and one FMA: |error| <= γ(2 · blocks + 3) · Σ |term|, with Σ |term| bounded per
//     sub-block of 16 by (|d · sc| · u_max + |dmin · m|) · Σ |x̂| (u_max 15, 31; Q6_K 32);
//   - against float64 of the unrounded x, within the rounding's bound: each element moves by
//     |x − d · q| <= |d| · (1/2 + 2^-15) (q's rounding, and iscale · x and 1 / iscale in
//     float32), so |y − x · w| <= Σ_k |w_k| · e(k) + the bound above;
//   - bit-identical to the portable loop on every target, for 1 and 3 threads;
//   - q8_0 leaves the K-quants alone, q8 leaves the types llama.cpp rounds otherwise alone
//     and gives Q8_0 and Q4_0 exactly q8_0's products.
#include "attn/half.hpp"
#include "attn/model/matmul.hpp"
#include "attn/model/quants.hpp"
#include "unit/ggml_blocks.hpp"
#include "unit/stored_product.hpp"
#include "unit/test_util.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// A named namespace: a unity build joins this file with other matmul tests.
namespace attn::model::q8k_matmul_test {
namespace {

using testing::random_ggml_blocks;
using testing::simd_label;
using testing::simd_targets;

constexpr std::uint32_t kQ4K = 12;
constexpr std::uint32_t kQ5K = 13;
constexpr std::uint32_t kQ6K = 14;

using testing::Shape3;
using testing::stored_product;

std::vector<Shape3> shapes() {
    std::vector<Shape3> out;
    for (const std::size_t k : {256U, 768U}) {
        for (const std::size_t n : {1U, 3U, 5U, 17U}) {
            for (const std::size_t m : {1U, 7U, 13U}) {
                out.push_back({n, m, k});
            }
        }
    }
    out.push_back({9, 70, 2304}); // several panels of 64 W rows, 9 super-blocks
    return out;
}

/// ggml's quantize_row_q8_K_ref, written from its definition: per 256, x_max the first
/// element of largest |x|, iscale = −127 / x_max, q = min(127, nearest-even(iscale · x)),
/// d = 1 / iscale (0 for an all-zero block). Returns d · q in float64 (`err`: the bound
/// |d| · (1/2 + 2^-15) of each element's move), `dq` the float32 d · q ggml's
/// dequantize_row_q8_K gives.
std::vector<double>
q8k_rounded(const std::vector<float>& x, std::vector<double>& err, std::vector<float>* dq) {
    std::vector<double> out(x.size());
    err.assign(x.size(), 0.0);
    if (dq != nullptr) {
        dq->assign(x.size(), 0.0F);
    }
    for (std::size_t b0 = 0; b0 < x.size(); b0 += 256) {
        float amax = 0.0F;
        float max = 0.0F;
        for (std::size_t j = 0; j < 256; ++j) {
            if (std::fabs(x[b0 + j]) > amax) {
                amax = std::fabs(x[b0 + j]);
                max = x[b0 + j];
            }
        }
        if (amax == 0.0F) {
            continue;
        }
        const float iscale = -127.0F / max;
        const float d = 1.0F / iscale;
        for (std::size_t j = 0; j < 256; ++j) {
            const float q = std::min(127.0F, std::nearbyint(iscale * x[b0 + j]));
            out[b0 + j] = static_cast<double>(d) * static_cast<double>(q);
            err[b0 + j] = std::fabs(static_cast<double>(d)) * (0.5 + std::ldexp(1.0, -15));
            if (dq != nullptr) {
                (*dq)[b0 + j] = d * q;
            }
        }
    }
    return out;
}

/// Per 16 weights of one super-block of `type`: |d · sc| · u_max + |dmin · m|, the bound of
/// the terms' size per |x̂| (the layouts of ggml-common.h: Q4_K and Q5_K keep 8 pairs of
/// 6-bit scale and min in 12 bytes after d and dmin; Q6_K 16 int8 scales at 192, d at 208).
std::array<double, 16> term_factors(std::uint32_t type, const std::uint8_t* b) {
    std::array<double, 16> out{};
    const auto f16 = [](const std::uint8_t* p) {
        return static_cast<double>(half_to_float(static_cast<std::uint16_t>(p[0] | p[1] << 8)));
    };
    if (type == kQ6K) {
        for (std::size_t g = 0; g < 16; ++g) {
            out[g] = std::fabs(f16(b + 208) * static_cast<std::int8_t>(b[192 + g])) * 32.0;
        }
        return out;
    }
    const std::uint8_t* s = b + 4;
    for (std::size_t j = 0; j < 8; ++j) {
        const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        const int mn = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        const double u_max = type == kQ4K ? 15.0 : 31.0;
        const double f = std::fabs(f16(b) * sc) * u_max + std::fabs(f16(b + 2) * mn);
        out[2 * j] = f;
        out[2 * j + 1] = f;
    }
    return out;
}

struct Reference : testing::DotSums {
    std::vector<double> terms; // Σ |term| (the float chain's bound's sum)
};

Reference reference(const std::vector<float>& x,
                    const std::vector<float>& w,
                    const std::vector<std::uint8_t>& bytes,
                    std::uint32_t type,
                    const Shape3& s) {
    std::vector<double> err;
    const std::vector<double> xq = q8k_rounded(x, err, nullptr);
    const std::size_t bb = ggml_type_traits(type)->block_bytes;
    Reference r{testing::dot_sums(x, xq, err, w, s), std::vector<double>(s.n * s.m, 0.0)};
    for (std::size_t j = 0; j < s.m; ++j) {
        for (std::size_t b = 0; b < s.k / 256; ++b) {
            const std::array<double, 16> f =
                term_factors(type, bytes.data() + (j * s.k / 256 + b) * bb);
            for (std::size_t i = 0; i < s.n; ++i) {
                for (std::size_t g = 0; g < 16; ++g) {
                    double abs_x = 0.0;
                    for (std::size_t l = 0; l < 16; ++l) {
                        abs_x += std::fabs(xq[i * s.k + b * 256 + g * 16 + l]);
                    }
                    r.terms[i * s.m + j] += f[g] * abs_x;
                }
            }
        }
    }
    return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class Q8KMatmul : public ::testing::TestWithParam<std::tuple<std::uint32_t, Simd>> {};

TEST_P(Q8KMatmul, MatchesFloat64OfTheRoundedActivationsAndStaysWithinTheRoundingOfTheExact) {
    const auto [type, simd] = GetParam();
    std::uint32_t seed = 300;
    for (const Shape3& s : shapes()) {
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, ++seed);
        std::vector<float> w(s.m * s.k);
        dequantize_ggml(type, bytes, w);
        const std::vector<float> x = testing::random_floats(s.n * s.k, ++seed);
        const Reference want = reference(x, w, bytes, type, s);
        const std::vector<float> y = stored_product(
            x, s, type, bytes, {.threads = 1, .simd = simd, .activations = Activations::q8});
        const std::size_t blocks = s.k / 256;
        std::size_t moved_by_rounding = 0;
        for (std::size_t e = 0; e < y.size(); ++e) {
            const std::string where = std::string(ggml_type_traits(type)->name) + " " +
                                      simd_label(simd) + " n=" + std::to_string(s.n) +
                                      " m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) +
                                      " at " + std::to_string(e);
            const double bound = testing::float32_sum_bound(2 * blocks + 3, want.terms[e]);
            const auto got = static_cast<double>(y[e]);
            ASSERT_LE(std::fabs(got - want.rounded[e]), bound) << where;
            ASSERT_LE(std::fabs(got - want.exact[e]), want.moved[e] + bound) << where;
            moved_by_rounding += std::fabs(want.exact[e] - want.rounded[e]) > bound ? 1U : 0U;
        }
        // The rounding is really applied: the exact product is out of the first bound.
        EXPECT_GT(moved_by_rounding, 0U) << "n=" << s.n << " m=" << s.m << " k=" << s.k;
    }
}

TEST_P(Q8KMatmul, EqualsThePortableLoopBitForBitForAnyThreadCount) {
    const auto [type, simd] = GetParam();
    const Simd portable = simd_targets().back();
    for (const Shape3& s : {Shape3{17, 70, 2304}, Shape3{8, 16, 256}, Shape3{5, 3, 512}}) {
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 7);
        const std::vector<float> x = testing::random_floats(s.n * s.k, 8);
        const std::vector<float> want = stored_product(
            x, s, type, bytes, {.threads = 1, .simd = portable, .activations = Activations::q8});
        // vnni false: the AVX2 and AVX3 targets' maddubs also on a CPU with VNNI.
        for (const auto& [threads, vnni] : {std::pair{1U, true}, {3U, true}, {1U, false}}) {
            const std::vector<float> got = stored_product(
                x,
                s,
                type,
                bytes,
                {.threads = threads, .simd = simd, .activations = Activations::q8, .vnni = vnni});
            EXPECT_TRUE(same_bits(want, got))
                << simd_label(simd) << " against " << simd_label(portable) << ", " << threads
                << " threads, vnni " << vnni << ", n=" << s.n << " m=" << s.m << " k=" << s.k;
        }
    }
}

TEST_P(Q8KMatmul, TheLargestCodesAndActivationsStayExact) {
    // Every code at its largest (Q4_K 15, Q5_K 31, Q6_K 63) times x all equal (q = −127
    // everywhere): the largest sub-block sums there are, where a narrower accumulator (the
    // int16 pair sums of AVX2's maddubs, if more steps were added up before widening)
    // would overflow. Random data does not reach them.
    const auto [type, simd] = GetParam();
    const Shape3 s{5, 19, 512};
    std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 21);
    const std::size_t bb = ggml_type_traits(type)->block_bytes;
    // the code bytes: Q4_K qs [16, 144); Q5_K qh and qs [16, 176); Q6_K ql and qh [0, 192)
    const std::size_t from = type == kQ6K ? 0 : 16;
    const std::size_t to = type == kQ4K ? 144 : type == kQ5K ? 176 : 192;
    for (std::size_t b = 0; b < bytes.size(); b += bb) {
        std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(b + from),
                  bytes.begin() + static_cast<std::ptrdiff_t>(b + to),
                  std::uint8_t{0xFF});
    }
    std::vector<float> x(s.n * s.k, 1.0F);
    std::fill(x.begin() + static_cast<std::ptrdiff_t>(2 * s.k), x.end(), -0.75F);
    std::vector<float> w(s.m * s.k);
    dequantize_ggml(type, bytes, w);
    const Reference want = reference(x, w, bytes, type, s);
    for (const bool vnni : {true, false}) { // false: maddubs on a CPU with VNNI too
        const std::vector<float> y = stored_product(
            x,
            s,
            type,
            bytes,
            {.threads = 1, .simd = simd, .activations = Activations::q8, .vnni = vnni});
        for (std::size_t e = 0; e < y.size(); ++e) {
            const double bound = testing::float32_sum_bound(2 * s.k / 256 + 3, want.terms[e]);
            ASSERT_LE(std::fabs(static_cast<double>(y[e]) - want.rounded[e]), bound)
                << simd_label(simd) << " at " << e << ", vnni " << vnni;
        }
    }
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<std::uint32_t, Simd>>& info) {
    return std::string(ggml_type_traits(std::get<0>(info.param))->name) + "_" +
           simd_label(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(TypesAndTargets,
                         Q8KMatmul,
                         ::testing::Combine(::testing::Values(kQ4K, kQ5K, kQ6K),
                                            ::testing::ValuesIn(simd_targets())),
                         case_name);

/// A Q6_K W [256, 256] whose row j is the unit vector e_j (d = 1, every scale 1, codes 32
/// but 33 at j): y[n, j] = d_x · q_j, the rounded x as ggml's dequantize_row_q8_K gives it.
std::vector<std::uint8_t> q6_k_identity() {
    std::vector<std::uint8_t> bytes(std::size_t{256} * 210, 0);
    for (std::size_t j = 0; j < 256; ++j) {
        std::uint8_t* b = bytes.data() + j * 210;
        // code 32 = high pair 2, low nibble 0: qh's four 2-bit fields all 2 (0b10101010)
        std::fill(b + 128, b + 192, std::uint8_t{0xAA});
        std::fill(b + 192, b + 208, std::uint8_t{1});
        b[208] = 0x00; // d = 1.0 (fp16 0x3C00)
        b[209] = 0x3C;
        // element j: half h = j / 128, run = (j % 128) / 32, l = j % 32; its low nibble is
        // in ql[64 h + l + 32 (run % 2)], low half for runs 0, 1, high half for runs 2, 3.
        const std::size_t h = j / 128;
        const std::size_t run = (j % 128) / 32;
        const std::size_t l = j % 32;
        b[64 * h + l + 32 * (run % 2)] = run < 2 ? 0x01 : 0x10;
    }
    return bytes;
}

TEST(Q8KRounding, IsGgmlsQuantizeRowQ8KRefTiesToEvenAndBothSigns) {
    const Shape3 s{3, 256, 256};
    std::vector<float> x = testing::random_floats(s.n * s.k, 11);
    // Row 0: x_max = −127, so iscale = 1 and d = 1: q is x rounded to nearest, ties to even
    // (2.5 -> 2, 3.5 -> 4, −2.5 -> −2, 0.5 -> 0; ggml's Q8_0 reference would give 3, 4, −3,
    // 1); +127 (as large, later) -> 127. The q of an element of the same sign as x_max is
    // −127 at most: |iscale · x| <= 127 · (1 + 2^-24)^2 rounds to 127, so q = −128, which
    // an int8 holds and MIN(127, ·) lets through, never occurs for finite x.
    const std::vector<float> row0 = {-127.0F, 2.5F, 3.5F, -2.5F, 0.5F, 1.5F, 127.0F, -126.5F};
    std::copy(row0.begin(), row0.end(), x.begin());
    // Row 1: x_max = +127 (d = −1): the codes change sign, d · q does not.
    for (std::size_t j = 0; j < row0.size(); ++j) {
        x[s.k + j] = -row0[j];
    }
    // Row 2: random, x_max anywhere: d and q as ggml computes them, in float32.
    const std::vector<std::uint8_t> w = q6_k_identity();
    std::vector<double> err;
    std::vector<float> want;
    q8k_rounded(x, err, &want);
    EXPECT_EQ(want[1], 2.0F);
    EXPECT_EQ(want[2], 4.0F);
    EXPECT_EQ(want[3], -2.0F);
    EXPECT_EQ(want[4], 0.0F);
    EXPECT_EQ(want[6], 127.0F);
    EXPECT_EQ(want[7], -126.0F);
    EXPECT_EQ(want[s.k + 1], -2.0F);
    for (const Simd simd : simd_targets()) {
        const std::vector<float> y = stored_product(
            x, s, kQ6K, w, {.threads = 2, .simd = simd, .activations = Activations::q8});
        for (std::size_t e = 0; e < y.size(); ++e) {
            ASSERT_EQ(y[e], want[e])
                << simd_label(simd) << " at row " << e / 256 << ", " << e % 256 << ": x = " << x[e];
        }
    }
}

TEST(Q8KRounding, ABlockWithANaNOrAnInfinityGivesNaNAndAZeroBlockZero) {
    const Shape3 s{2, 4, 512};
    std::vector<float> x = testing::random_floats(s.n * s.k, 5);
    x[300] = std::numeric_limits<float>::infinity(); // row 0, super-block 1
    std::fill(x.begin() + 512, x.end(), 0.0F);       // row 1: zeros
    for (const std::uint32_t type : {kQ4K, kQ6K}) {
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 6);
        const std::vector<float> y =
            stored_product(x, s, type, bytes, {.activations = Activations::q8});
        for (std::size_t j = 0; j < s.m; ++j) {
            EXPECT_TRUE(std::isnan(y[j])) << type << " " << j;
            EXPECT_EQ(y[s.m + j], 0.0F) << type << " " << j;
        }
    }
}

TEST(Q8KMatmulChoices, Q8_0LeavesTheKQuantsAloneAndQ8IsQ8_0ForQ8_0AndQ4_0) {
    const Shape3 s{5, 7, 256};
    const std::vector<float> x = testing::random_floats(s.n * s.k, 3);
    for (const std::uint32_t type : {kQ4K, kQ5K, kQ6K}) {
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 4);
        EXPECT_TRUE(
            same_bits(stored_product(x, s, type, bytes, {}),
                      stored_product(x, s, type, bytes, {.activations = Activations::q8_0})))
            << type;
    }
    // Types llama.cpp rounds to Q8_1 or that attn keeps in float32: q8 changes nothing.
    for (const std::uint32_t type : {1U, 3U, 6U, 10U, 11U}) { // F16, Q4_1, Q5_0, Q2_K, Q3_K
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 4);
        EXPECT_TRUE(same_bits(stored_product(x, s, type, bytes, {}),
                              stored_product(x, s, type, bytes, {.activations = Activations::q8})))
            << type;
    }
    for (const std::uint32_t type : {8U, 2U}) { // Q8_0, Q4_0
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 4);
        const std::vector<float> q8_0 =
            stored_product(x, s, type, bytes, {.activations = Activations::q8_0});
        EXPECT_TRUE(
            same_bits(q8_0, stored_product(x, s, type, bytes, {.activations = Activations::q8})))
            << type;
        EXPECT_FALSE(same_bits(q8_0, stored_product(x, s, type, bytes, {}))) << type;
    }
}

} // namespace
} // namespace attn::model::q8k_matmul_test

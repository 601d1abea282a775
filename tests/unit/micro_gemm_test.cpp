// The micro-GEMM (attn/micro_gemm.hpp) on every SIMD target this CPU runs, over more k than
// one of its passes (k = 2500: passes of 1024, 1024 and 452), rows and columns that are not
// multiples of its tiles (13 x 37) and strides wider than the operands: C = A·B and
// C += A·B against float64 within the summation bound, and each element one chain of
// multiply-adds along k (a product split into two calls at any k equals the whole, bit for
// bit), which is what keeps the stored-type products' results independent of the passes.
#include "attn/micro_gemm.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

namespace attn {
namespace {

using testing::simd_label;
using testing::simd_targets;

struct GemmOperands {
    std::size_t m = 13;
    std::size_t n = 37;
    std::size_t k = 2500;
    std::size_t lda = 2503;
    std::size_t ldb = 40;
    std::size_t ldc = 41;
    std::vector<float> a;
    std::vector<float> b;
    std::vector<float> c; // the initial C, for accumulate
};

GemmOperands gemm_operands() {
    GemmOperands o;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
    o.a.resize(o.m * o.lda);
    o.b.resize(o.k * o.ldb);
    o.c.resize(o.m * o.ldc);
    for (std::vector<float>* v : {&o.a, &o.b, &o.c}) {
        for (float& x : *v) {
            x = dist(rng);
        }
    }
    return o;
}

class MicroGemm : public ::testing::TestWithParam<Simd> {};

TEST_P(MicroGemm, EqualsFloat64WithinTheSummationBound) {
    const Simd simd = GetParam();
    const GemmOperands o = gemm_operands();
    for (const bool accumulate : {false, true}) {
        std::vector<float> c = o.c;
        micro_gemm(
            simd, o.m, o.n, o.k, o.a.data(), o.lda, o.b.data(), o.ldb, c.data(), o.ldc, accumulate);
        for (std::size_t i = 0; i < o.m; ++i) {
            for (std::size_t j = 0; j < o.n; ++j) {
                const double c0 = accumulate ? static_cast<double>(o.c[i * o.ldc + j]) : 0.0;
                double sum = c0;
                double abs = std::fabs(c0);
                for (std::size_t p = 0; p < o.k; ++p) {
                    const double v = static_cast<double>(o.a[i * o.lda + p]) *
                                     static_cast<double>(o.b[p * o.ldb + j]);
                    sum += v;
                    abs += std::fabs(v);
                }
                // γ_(k+1) · Σ|terms|: k + 1 roundings at most along one chain.
                const double ku = static_cast<double>(o.k + 1) * std::ldexp(1.0, -24);
                EXPECT_NEAR(c[i * o.ldc + j], sum, ku / (1 - ku) * abs)
                    << simd_label(simd) << " accumulate " << accumulate << " at " << i << ", " << j;
            }
        }
        // Columns past n in each row of C are left alone.
        for (std::size_t i = 0; i < o.m; ++i) {
            for (std::size_t j = o.n; j < o.ldc; ++j) {
                EXPECT_EQ(c[i * o.ldc + j], o.c[i * o.ldc + j]) << simd_label(simd);
            }
        }
    }
}

TEST_P(MicroGemm, SplittingKIntoTwoCallsChangesNoBit) {
    const Simd simd = GetParam();
    const GemmOperands o = gemm_operands();
    std::vector<float> whole(o.m * o.ldc);
    micro_gemm(
        simd, o.m, o.n, o.k, o.a.data(), o.lda, o.b.data(), o.ldb, whole.data(), o.ldc, false);
    for (const std::size_t split : {1U, 700U, 1024U, 1500U}) {
        std::vector<float> parts(o.m * o.ldc);
        micro_gemm(simd,
                   o.m,
                   o.n,
                   split,
                   o.a.data(),
                   o.lda,
                   o.b.data(),
                   o.ldb,
                   parts.data(),
                   o.ldc,
                   false);
        micro_gemm(simd,
                   o.m,
                   o.n,
                   o.k - split,
                   o.a.data() + split,
                   o.lda,
                   o.b.data() + split * o.ldb,
                   o.ldb,
                   parts.data(),
                   o.ldc,
                   true);
        EXPECT_EQ(std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)), 0)
            << simd_label(simd) << " split at " << split;
    }
}

std::string gemm_case_name(const ::testing::TestParamInfo<Simd>& info) {
    return simd_label(info.param);
}

INSTANTIATE_TEST_SUITE_P(Targets, MicroGemm, ::testing::ValuesIn(simd_targets()), gemm_case_name);

} // namespace
} // namespace attn

// The stored-type matrix product y = x · Wᵀ against float64 of the dequantized W (the
// dequantizer is pinned bit for bit to gguf-py's values by gguf_test.cpp), per ggml type
// and per SIMD target this CPU runs, on shapes that straddle the kernel's tiles (x rows
// 1, 3, 17; W rows not a multiple of the tile), blocks (K = 32, 96; 256, 512 for the
// K-quants), its k-chunks and its panels (K = 2304, 70 W rows); its dequantized panels
// equal dequantize_ggml's values; results bit-identical for any thread count and any
// alignment of the weights' bytes; bad shapes are InputErrors.
#include "attn/model/matmul.hpp"
#include "attn/model/quants.hpp"
#include "unit/ggml_blocks.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace attn::model {
namespace {

using testing::random_ggml_blocks;
using testing::simd_label;
using testing::simd_targets;

/// The types, by ggml number: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K.
const std::vector<std::uint32_t> kTypes = {0, 1, 30, 8, 2, 3, 6, 7, 10, 11, 12, 13, 14};

struct Shape3 {
    std::size_t n; // rows of x
    std::size_t m; // rows of W
    std::size_t k;
};

std::vector<Shape3> shapes_for(std::uint32_t type) {
    const std::size_t block = ggml_type_traits(type)->block;
    std::vector<Shape3> out;
    // K: one block, three blocks (32-blocks) or two (K-quants).
    const std::vector<std::size_t> ks =
        block == 256 ? std::vector<std::size_t>{256, 512} : std::vector<std::size_t>{32, 96};
    for (const std::size_t k : ks) {
        for (const std::size_t n : {1U, 3U, 17U}) {
            for (const std::size_t m : {1U, 7U, 13U}) {
                out.push_back({n, m, k});
            }
        }
    }
    // Several k-chunks (1024 each) and panels of W rows (64 each).
    out.push_back({5, 70, 2304});
    return out;
}

/// The float64 product of x and the dequantized W, and Σ_k |x_k · w_k| per element.
struct Reference {
    std::vector<double> y;
    std::vector<double> abs;
};

Reference reference(const std::vector<float>& x, const std::vector<float>& w, const Shape3& s) {
    Reference r{std::vector<double>(s.n * s.m), std::vector<double>(s.n * s.m)};
    for (std::size_t i = 0; i < s.n; ++i) {
        for (std::size_t j = 0; j < s.m; ++j) {
            double sum = 0;
            double abs = 0;
            for (std::size_t p = 0; p < s.k; ++p) {
                const double v =
                    static_cast<double>(x[i * s.k + p]) * static_cast<double>(w[j * s.k + p]);
                sum += v;
                abs += std::fabs(v);
            }
            r.y[i * s.m + j] = sum;
            r.abs[i * s.m + j] = abs;
        }
    }
    return r;
}

class StoredMatmul : public ::testing::TestWithParam<std::tuple<std::uint32_t, Simd>> {};

TEST_P(StoredMatmul, MatchesFloat64OfTheDequantizedWeightsWithinTheSummationBound) {
    const auto [type, simd] = GetParam();
    std::uint32_t seed = 1;
    for (const Shape3& s : shapes_for(type)) {
        const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, ++seed);
        std::vector<float> w(s.m * s.k);
        dequantize_ggml(type, bytes, w);
        const std::vector<float> x = testing::random_floats(s.n * s.k, ++seed);
        const Reference want = reference(x, w, s);
        std::vector<float> y(s.n * s.m, std::numeric_limits<float>::quiet_NaN());
        stored_matmul(x, s.n, {type, s.m, s.k, bytes, {}}, y, {.threads = 1, .simd = simd});
        for (std::size_t e = 0; e < y.size(); ++e) {
            const double err = std::fabs(static_cast<double>(y[e]) - want.y[e]);
            ASSERT_LE(err, testing::float32_sum_bound(s.k, want.abs[e]))
                << ggml_type_traits(type)->name << " " << simd_label(simd) << " n=" << s.n
                << " m=" << s.m << " k=" << s.k << " at [" << e / s.m << ", " << e % s.m
                << "]: got " << y[e] << ", want " << want.y[e];
        }
    }
}

TEST_P(StoredMatmul, DequantizesAsDequantizeGgmlDoes) {
    // x = the identity [K, K]: y[i, j] = 1 · w[j, i] plus products by 0, all exact, so y is
    // Wᵀ as the kernel dequantized it (per SIMD target), equal to dequantize_ggml's values
    // (compared as values: a -0 may come out as +0).
    const auto [type, simd] = GetParam();
    const std::size_t k = ggml_type_traits(type)->block == 256 ? 512 : 96;
    const std::size_t m = 13;
    const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, m * k, 5);
    std::vector<float> w(m * k);
    dequantize_ggml(type, bytes, w);
    std::vector<float> x(k * k, 0.0F);
    for (std::size_t i = 0; i < k; ++i) {
        x[i * k + i] = 1.0F;
    }
    std::vector<float> y(k * m);
    stored_matmul(x, k, {type, m, k, bytes, {}}, y, {.threads = 1, .simd = simd});
    for (std::size_t i = 0; i < k; ++i) {
        for (std::size_t j = 0; j < m; ++j) {
            ASSERT_EQ(y[i * m + j], w[j * k + i]) << "W[" << j << ", " << i << "]";
        }
    }
}

TEST_P(StoredMatmul, ResultsDoNotDependOnTheThreadCount) {
    const auto [type, simd] = GetParam();
    const Shape3 s{9, 70, 2304}; // several panels: each thread takes some
    const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 7);
    const std::vector<float> x = testing::random_floats(s.n * s.k, 8);
    std::vector<float> one(s.n * s.m);
    stored_matmul(x, s.n, {type, s.m, s.k, bytes, {}}, one, {.threads = 1, .simd = simd});
    for (const unsigned threads : {2u, 3u}) {
        std::vector<float> many(s.n * s.m);
        stored_matmul(
            x, s.n, {type, s.m, s.k, bytes, {}}, many, {.threads = threads, .simd = simd});
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
            << threads << " threads";
    }
}

TEST_P(StoredMatmul, WeightsAtAnyByteOffsetGiveTheSameBits) {
    // A mapped file holds a tensor where its header puts it (safetensors: any byte offset):
    // the kernels that read rows straight from the mapping (F32, BF16) and the dequantizers
    // must not depend on its alignment. The same bytes at offsets 1 .. 7 of a copy.
    const auto [type, simd] = GetParam();
    const Shape3 s{7, 13, ggml_type_traits(type)->block == 256 ? 512U : 96U};
    const std::vector<std::uint8_t> bytes = random_ggml_blocks(type, s.m * s.k, 9);
    const std::vector<float> x = testing::random_floats(s.n * s.k, 10);
    std::vector<float> aligned(s.n * s.m);
    stored_matmul(x, s.n, {type, s.m, s.k, bytes, {}}, aligned, {.threads = 1, .simd = simd});
    for (std::size_t offset = 1; offset < 8; ++offset) {
        std::vector<std::uint8_t> shifted(bytes.size() + offset);
        std::memcpy(shifted.data() + offset, bytes.data(), bytes.size());
        const std::span<const std::uint8_t> at(shifted.data() + offset, bytes.size());
        std::vector<float> y(s.n * s.m);
        stored_matmul(x, s.n, {type, s.m, s.k, at, {}}, y, {.threads = 1, .simd = simd});
        EXPECT_EQ(std::memcmp(aligned.data(), y.data(), y.size() * sizeof(float)), 0)
            << "offset " << offset;
    }
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<std::uint32_t, Simd>>& info) {
    return std::string(ggml_type_traits(std::get<0>(info.param))->name) + "_" +
           simd_label(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(TypesAndTargets,
                         StoredMatmul,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(simd_targets())),
                         case_name);

TEST(StoredMatmulErrors, NameWhatDoesNotFit) {
    const std::vector<std::uint8_t> q8(std::size_t{34} * 2); // two Q8_0 blocks: [2, 32] or [1, 64]
    const std::vector<float> x(std::size_t{2} * 32);
    std::vector<float> y(std::size_t{2} * 2);
    stored_matmul(x, 2, {8, 2, 32, q8, {}}, y); // fits
    EXPECT_INPUT_ERROR(stored_matmul(x, 2, {9, 2, 32, q8, {}}, y),
                       "weight type: expected one of F32, .*, got Q8_1");
    EXPECT_INPUT_ERROR(stored_matmul(x, 2, {8, 1, 48, q8, {}}, y),
                       "weight columns: expected a multiple of 32 for Q8_0, got 48");
    EXPECT_INPUT_ERROR(stored_matmul(x, 2, {8, 3, 32, q8, {}}, y),
                       "weight bytes: expected 102, got 68");
    EXPECT_INPUT_ERROR(stored_matmul(x, 3, {8, 2, 32, q8, {}}, y),
                       R"(x: expected shape \[3, 32\], got \[64\])");
    const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
    EXPECT_INPUT_ERROR(stored_matmul(x, 2, {8, huge, 64, q8, {}}, y),
                       "weight bytes: expected a size that fits in 64 bits, got " +
                           std::to_string(huge) + " x 68");
    EXPECT_INPUT_ERROR(stored_matmul(x, huge, {8, 2, 32, q8, {}}, y),
                       "x: expected a size that fits in 64 bits, got " + std::to_string(huge) +
                           " x 32");
    std::vector<float> y_short(3);
    EXPECT_INPUT_ERROR(stored_matmul(x, 2, {8, 2, 32, q8, {}}, y_short),
                       R"(y: expected shape \[2, 2\], got \[3\])");
}

} // namespace
} // namespace attn::model

// The MLP activations (attn::activate) against their definitions as Hugging Face writes
// them (transformers' activations.py: SiLU, GELU with erf, the tanh forms' 0.5·x·(1 +
// tanh(...)), BLOOM's BloomGelu), evaluated here in long double: the double path to 1e-15,
// the float path (the sigmoid forms on every SIMD target this CPU runs, Highway's double
// exp) to the float nearest the definition or its neighbour, over a sweep, special values
// and a length that leaves a partial vector.
#include "attn/attention.hpp"
#include "attn/block.hpp"
#include "attn/kernels.hpp"

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <string>
#include <vector>

namespace {

using attn::Activation;

TEST(Activation, ValuesFromTheirDefinitions) {
    // gelu(1) = 0.5·(1 + erf(1/√2)) = 0.8413447460685429; the tanh form 0.8411919906082768;
    // silu(1) = 1/(1 + e^-1) = 0.7310585786300049.
    std::vector<double> x = {1.0, 1.0, 1.0, -2.0};
    attn::activate(x.data(), 1, Activation::gelu_erf);
    attn::activate(x.data() + 1, 1, Activation::gelu_tanh);
    attn::activate(x.data() + 2, 1, Activation::silu);
    attn::activate(x.data() + 3, 1, Activation::relu);
    EXPECT_NEAR(x[0], 0.8413447460685429, 1e-15);
    EXPECT_NEAR(x[1], 0.8411919906082768, 1e-15);
    EXPECT_NEAR(x[2], 0.7310585786300049, 1e-15);
    EXPECT_EQ(x[3], 0.0);
}

/// 1 + tanh(u) in long double; for u < 0 as 2·e^(2u) / (1 + e^(2u)), the same value
/// without the cancellation that leaves nothing of it below u = -22.
long double one_plus_tanh(long double u) {
    if (u >= 0) {
        return 1.0L + std::tanh(u);
    }
    const long double e = std::exp(2.0L * u);
    return 2.0L * e / (1.0L + e);
}

/// The definition in long double.
long double definition(long double x, Activation a) {
    switch (a) {
    case Activation::silu:
        return x / (1.0L + std::exp(-x));
    case Activation::gelu_tanh: {
        const long double c = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
        return 0.5L * x * one_plus_tanh(c * (x + 0.044715L * x * x * x));
    }
    case Activation::gelu_bloom:
        return x * 0.5L * one_plus_tanh(0.79788456L * x * (1.0L + 0.044715L * x * x));
    case Activation::gelu_erf:
        return 0.5L * x * std::erfc(-x / std::sqrt(2.0L)); // 1 + erf(t) = erfc(-t)
    case Activation::relu:
        return x > 0 ? x : 0.0L;
    }
    return x;
}

/// The sweep -30 .. 30 in steps of 1/64, and the special values; 3,859 + 17 values, so the
/// last vector is partial on every target.
std::vector<float> inputs() {
    std::vector<float> x;
    for (int i = -30 * 64; i <= 30 * 64; ++i) {
        x.push_back(static_cast<float>(i) / 64.0F);
    }
    const float inf = std::numeric_limits<float>::infinity();
    const float big = std::numeric_limits<float>::max();
    for (const float v : {-0.0F,
                          1e-40F,
                          -1e-40F,
                          88.0F,
                          -88.0F,
                          104.0F,
                          -104.0F,
                          700.0F,
                          -700.0F,
                          1e30F,
                          -1e30F,
                          big,
                          -big,
                          inf,
                          -inf,
                          1e-7F,
                          -1e-7F}) {
        x.push_back(v);
    }
    x.push_back(std::numeric_limits<float>::quiet_NaN());
    return x;
}

/// Whether `got` is the float nearest `want` or one of its two neighbours (both NaN also
/// pass).
bool near_definition(float got, long double want) {
    if (std::isnan(want) || std::isnan(got)) {
        return std::isnan(want) && std::isnan(got);
    }
    const auto nearest = static_cast<float>(want);
    return got == nearest || got == std::nextafter(nearest, -std::numeric_limits<float>::max()) ||
           got == std::nextafter(nearest, std::numeric_limits<float>::max());
}

TEST(Activation, FloatSigmoidFormsOnEveryTargetMatchTheirDefinitions) {
    const std::vector<float> x = inputs();
    for (const attn::Simd simd : attn::simd_supported()) {
        for (const Activation a :
             {Activation::silu, Activation::gelu_tanh, Activation::gelu_bloom}) {
            std::vector<float> y = x;
            attn::activate(y.data(), y.size(), a, 1, simd);
            std::size_t misses = 0;
            for (std::size_t i = 0; i < x.size(); ++i) {
                const long double want = definition(static_cast<long double>(x[i]), a);
                if (!near_definition(y[i], want) && ++misses <= 3) {
                    ADD_FAILURE() << attn::simd_name(simd) << " activation " << static_cast<int>(a)
                                  << " at x = " << x[i] << ": " << y[i] << ", definition "
                                  << static_cast<double>(want);
                }
            }
            EXPECT_EQ(misses, 0U) << attn::simd_name(simd);
        }
    }
}

TEST(Activation, FloatValuesDoNotDependOnTheirPositionOrTheThreadCount) {
    // A value computes alike in a whole vector and in the partial last one, in any chunk.
    const std::vector<float> x = inputs();
    std::vector<float> whole = x;
    attn::activate(whole.data(), whole.size(), Activation::silu, 1);
    for (std::size_t i = 0; i < x.size(); i += 97) {
        float one = x[i];
        attn::activate(&one, 1, Activation::silu, 1);
        EXPECT_EQ(std::bit_cast<std::uint32_t>(one), std::bit_cast<std::uint32_t>(whole[i]))
            << "x = " << x[i];
    }
    std::vector<float> threaded(100003, 0.37F);
    std::vector<float> single = threaded;
    attn::activate(threaded.data(), threaded.size(), Activation::gelu_tanh, 4);
    attn::activate(single.data(), single.size(), Activation::gelu_tanh, 1);
    EXPECT_EQ(threaded, single);
}

TEST(Activation, FloatErfAndReluStayTheDoubleDefinitionsRounded) {
    const std::vector<float> x = inputs();
    for (const Activation a : {Activation::gelu_erf, Activation::relu}) {
        std::vector<float> y = x;
        attn::activate(y.data(), y.size(), a, 1);
        for (std::size_t i = 0; i < x.size(); ++i) {
            EXPECT_TRUE(near_definition(y[i], definition(static_cast<long double>(x[i]), a)))
                << "x = " << x[i];
        }
    }
}

} // namespace

// Llama 3's rope_freqs.weight read back as rope_scaling (model::gguf_llama3_rope_scaling): the
// divisors are computed here as convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors
// computes them (float32 frequencies, its three bands); the parameters found must give the
// same divisors through attn's own RoPE (core::rope_inverse_frequencies), Llama 3.1's
// parameters must come back as they are, and divisors no llama3 parameters give are refused.
// The whole-model check against a Hugging Face folder is tests/cli/gguf_forward_test.py.
#include "attn/error.hpp"
#include "attn/model/gguf_model.hpp"
#include "attn/model/hf_config.hpp"
#include "attn/rope.hpp"
#include "test_files.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <numbers>

namespace attn::testing {
namespace {

struct Params {
    double factor, low, high, original;
};

/// The converter's rope_factors (float32 frequencies, as torch computes them there).
std::vector<float> converter_factors(const Params& p, double theta, std::size_t dim) {
    std::vector<float> out;
    for (std::size_t i = 0; i < dim; i += 2) {
        const float exponent = static_cast<float>(i) / static_cast<float>(dim);
        const float freq = 1.0F / std::pow(static_cast<float>(theta), exponent);
        const double wavelen = 2 * std::numbers::pi / static_cast<double>(freq);
        const double low_wavelen = p.original / p.low;
        const double high_wavelen = p.original / p.high;
        double f = 1;
        if (wavelen < high_wavelen) {
            f = 1;
        } else if (wavelen > low_wavelen) {
            f = p.factor;
        } else {
            const double smooth = (p.original / wavelen - p.low) / (p.high - p.low);
            f = 1 / ((1 - smooth) / p.factor + smooth);
        }
        out.push_back(static_cast<float>(f));
    }
    return out;
}

/// attn's inverse frequencies for a config.json rope_scaling object.
std::vector<double> attn_frequencies(const nlohmann::json& scaling, double theta, std::size_t dim) {
    RopeSpec spec;
    spec.theta = theta;
    spec.dim = dim;
    if (!scaling.is_null()) {
        spec.scaling = model::parse_rope_scaling(scaling, "rope_scaling");
    }
    return rope_inverse_frequencies(spec, dim);
}

void expect_same_divisors(const Params& p, double theta, std::size_t dim) {
    const std::vector<float> factors = converter_factors(p, theta, dim);
    const nlohmann::json scaling = model::gguf_llama3_rope_scaling(factors, theta, dim, "t");
    const std::vector<double> plain = attn_frequencies(nullptr, theta, dim);
    const std::vector<double> scaled = attn_frequencies(scaling, theta, dim);
    ASSERT_EQ(scaled.size(), factors.size());
    for (std::size_t i = 0; i < factors.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_NEAR(plain[i] / scaled[i],
                    static_cast<double>(factors[i]),
                    2e-5 * static_cast<double>(factors[i]));
    }
}

TEST(GgufRope, Llama31ComesBackAsItIs) {
    const std::vector<float> factors = converter_factors({8, 1, 4, 8192}, 500000, 128);
    const nlohmann::json s = model::gguf_llama3_rope_scaling(factors, 500000, 128, "t");
    EXPECT_EQ(s["rope_type"], "llama3");
    EXPECT_EQ(s["factor"], 8.0);
    EXPECT_EQ(s["low_freq_factor"], 1.0);
    EXPECT_EQ(s["high_freq_factor"], 4.0);
    EXPECT_EQ(s["original_max_position_embeddings"], 8192.0);
    expect_same_divisors({8, 1, 4, 8192}, 500000, 128);
}

TEST(GgufRope, OtherParametersGiveTheSameDivisors) {
    expect_same_divisors({32, 1, 4, 8192}, 500000, 64);   // Llama 3.2's factor
    expect_same_divisors({16, 2, 8, 4096}, 10000, 128);   // a wide blended band
    expect_same_divisors({8, 1, 4, 16}, 500000, 4);       // one blended frequency
    expect_same_divisors({4, 1, 4, 8192}, 500000, 4);     // one blended, none divided
    expect_same_divisors({8, 1.5, 2, 100000}, 10000, 16); // no blended frequency
}

TEST(GgufRope, AllOnesIsNoScaling) {
    EXPECT_TRUE(
        model::gguf_llama3_rope_scaling(std::vector<float>(64, 1.0F), 500000, 128, "t").is_null());
}

TEST(GgufRope, RefusesWhatIsNotLlama3) {
    (void)expect_error_message<InputError>(
        [] { (void)model::gguf_llama3_rope_scaling(std::vector<float>(3, 1.0F), 1e4, 8, "t"); },
        "t: ",
        "3 factors for a rotary dimension of 8");
    (void)expect_error_message<InputError>(
        [] {
            (void)model::gguf_llama3_rope_scaling(std::vector<float>{1, 0.5F}, 1e4, 4, "t");
        },
        "t: ",
        "factor 1 is 0.5");
    (void)expect_error_message<InputError>(
        [] {
            (void)model::gguf_llama3_rope_scaling(std::vector<float>{2, 1, 3, 1.5F}, 1e4, 8, "t");
        },
        "t: ",
        "not llama 3's scaling");
    (void)expect_error_message<InputError>(
        [] {
            (void)model::gguf_llama3_rope_scaling(std::vector<float>{1, NAN}, 1e4, 4, "t");
        },
        "t: ",
        "factor 1 is");
}

} // namespace
} // namespace attn::testing

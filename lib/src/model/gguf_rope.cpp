// Llama 3's RoPE scaling in a GGUF: llama.cpp's converter (LlamaModel.generate_extra_tensors)
// does not store the rope_scaling parameters but the divisor of every rotary frequency,
// the tensor rope_freqs.weight. This file finds llama3 parameters (factor, low/high
// frequency factors, original context) that give the same divisors, so the model runs as
// Hugging Face's rope_type "llama3" runs it, and refuses divisors no such parameters give.
#include "attn/error.hpp"
#include "attn/io/number_text.hpp"
#include "attn/model/gguf_model.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace attn::model {

namespace {

struct Llama3 {
    double factor = 1;
    double low = 1;
    double high = 4;
    double original = 8192;
};

/// The converter's divisor of frequency w (its formula, in double).
double divisor(const Llama3& p, double w) {
    const double wavelen = 2 * std::numbers::pi / w;
    if (wavelen < p.original / p.high) {
        return 1;
    }
    if (wavelen > p.original / p.low) {
        return p.factor;
    }
    const double smooth = (p.original / wavelen - p.low) / (p.high - p.low);
    return 1 / ((1 - smooth) / p.factor + smooth);
}

bool reproduces(const Llama3& p, const std::vector<double>& w, std::span<const float> f) {
    if (!(p.low > 0 && p.high > p.low && p.original > 0 && p.factor > 0) ||
        !std::isfinite(p.high) || !std::isfinite(p.low)) {
        return false;
    }
    for (std::size_t i = 0; i < w.size(); ++i) {
        // float32 frequencies in the converter: agreement to float32's precision, loosely.
        const auto want = static_cast<double>(f[i]);
        if (std::abs(divisor(p, w[i]) - want) > 1e-5 * std::max(1.0, want)) {
            return false;
        }
    }
    return true;
}

/// Parameters for divisors whose middle band (neither 1 nor factor) holds `mid` (indices),
/// between the low band's highest frequency `low_w` and the high band's lowest `high_w`.
Llama3 fit(double factor,
           const std::vector<double>& w,
           std::span<const float> f,
           const std::vector<std::size_t>& mid,
           double low_w,
           double high_w) {
    Llama3 p;
    p.factor = factor;
    const double per_w = p.original / (2 * std::numbers::pi); // original / wavelen per unit w
    // In the middle band the blend weight s is linear in w: s = A w + B with
    // A = original / (2 pi (high - low)), B = -low / (high - low).
    const auto smooth = [&](std::size_t i) {
        return (1 / static_cast<double>(f[i]) - 1 / factor) / (1 - 1 / factor);
    };
    if (mid.size() >= 2) {
        const std::size_t a = mid.front();
        const std::size_t b = mid.back();
        const double A = (smooth(a) - smooth(b)) / (w[a] - w[b]);
        const double B = smooth(a) - A * w[a];
        const double span = per_w / A;
        p.low = -B * span;
        p.high = p.low + span;
    } else if (mid.size() == 1) { // the low edge between the bands, then high from the point
        const double wm = w[mid.front()];
        p.low = per_w * std::sqrt(low_w * wm);
        p.high = p.low + (per_w * wm - p.low) / smooth(mid.front());
    } else { // both edges inside the gap between the bands
        p.low = per_w * std::cbrt(low_w * low_w * high_w);
        p.high = per_w * std::cbrt(low_w * high_w * high_w);
    }
    return p;
}

} // namespace

nlohmann::json gguf_llama3_rope_scaling(std::span<const float> factors,
                                        double theta,
                                        std::size_t rotary_dim,
                                        const std::string& what) {
    if (factors.size() * 2 != rotary_dim) {
        throw InputError(what + ": " + std::to_string(factors.size()) +
                         " factors for a rotary dimension of " + std::to_string(rotary_dim) +
                         " (one per frequency pair expected)");
    }
    std::vector<double> w(factors.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
        w[i] = 1 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dim));
        if (!(factors[i] >= 1.0F) || !std::isfinite(factors[i])) {
            throw InputError(what + ": factor " + std::to_string(i) + " is " +
                             io::format_double(static_cast<double>(factors[i])) +
                             " (llama 3's scaling divides by factors of 1 or more)");
        }
    }
    const auto factor = static_cast<double>(*std::max_element(factors.begin(), factors.end()));
    if (factor == 1.0) {
        return nullptr; // every frequency as it is
    }
    std::vector<std::size_t> mid;
    double low_w = w.back() / 2;   // the low band's highest frequency
    double high_w = w.front() * 2; // the high band's lowest
    for (std::size_t i = 0; i < w.size(); ++i) {
        const auto f = static_cast<double>(factors[i]);
        if (std::abs(f - factor) <= 1e-6 * factor) {
            low_w = std::max(low_w, w[i]);
        } else if (std::abs(f - 1) <= 1e-6) {
            high_w = std::min(high_w, w[i]);
        } else {
            mid.push_back(i);
        }
    }
    for (const Llama3& p :
         {Llama3{factor, 1, 4, 8192}, fit(factor, w, factors, mid, low_w, high_w)}) {
        if (reproduces(p, w, factors)) {
            return {{"rope_type", "llama3"},
                    {"factor", p.factor},
                    {"low_freq_factor", p.low},
                    {"high_freq_factor", p.high},
                    {"original_max_position_embeddings", p.original}};
        }
    }
    throw InputError(what + ": the per-frequency factors are not llama 3's scaling (no "
                            "factor, low/high frequency factors and original context give them)");
}

} // namespace attn::model

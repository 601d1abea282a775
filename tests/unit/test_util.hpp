// Shared helpers of the unit tests: seeded random tensors and a closeness check whose
// tolerance is derived from float32 epsilon and the reduction length (highway-style),
// reporting the worst index, both values and the NMSE (ggml-style); EXPECT_INPUT_ERROR for
// pinned error messages.
#pragma once

#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/kernels.hpp"
#include "attn/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace attn {

/// gtest prints a SIMD target parameter by its name.
inline void PrintTo(Simd simd, std::ostream* os) {
    *os << simd_name(simd);
}

} // namespace attn

namespace attn::testing {

/// Whether /proc/cpuinfo lists x86 flag `flag` (the kernel's reading of CPUID), or nothing
/// off Linux and off x86 (an Arm build run under qemu-user would read the x86 host's file).
inline std::optional<bool> cpuinfo_flag(const std::string& flag) {
#if !defined(__x86_64__) && !defined(__i386__)
    (void)flag;
    return std::nullopt;
#endif
    std::ifstream in("/proc/cpuinfo");
    if (!in) {
        return std::nullopt;
    }
    std::stringstream text;
    text << in.rdbuf();
    std::istringstream words(text.str());
    for (std::string w; words >> w;) {
        if (w == flag) {
            return true;
        }
    }
    return false;
}

inline constexpr float kInf = std::numeric_limits<float>::infinity();

/// n floats uniform in [-1, 1) from mt19937(seed): the stored-type products' inputs.
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
    std::vector<float> v(n);
    for (float& x : v) {
        x = dist(rng);
    }
    return v;
}

/// The error bound of a float32 product whose weights are exact floats (the stored-type
/// products' tests): each output is a sum of K products accumulated along k (one fused
/// multiply-add per product: one rounding each). The standard bound for such a sum (Higham,
/// Accuracy and Stability of Numerical Algorithms, §3.1) is |ŷ - y| <= γ_K · Σ_k |x_k · w_k|,
/// γ_K = K·u / (1 - K·u), u = 2⁻²⁴; it holds for any summation tree of depth at most K, so
/// it does not depend on the kernel's blocking.
inline double float32_sum_bound(std::size_t k, double abs_sum) {
    const double ku = static_cast<double>(k) * std::ldexp(1.0, -24);
    return ku / (1.0 - ku) * abs_sum;
}
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

inline Tensor random_tensor(std::mt19937& rng, Shape s, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    Tensor t = Tensor::from_shape(s);
    for (auto& x : t) {
        x = dist(rng);
    }
    return t;
}

/// 0, 1, .., n - 1 in a random order.
inline std::vector<std::size_t> random_permutation(std::mt19937& rng, std::size_t n) {
    std::vector<std::size_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    return perm;
}

inline Mask random_mask(std::mt19937& rng, Shape s, double p_keep) {
    std::bernoulli_distribution keep(p_keep);
    Mask m = Mask::from_shape(s);
    for (auto& x : m) {
        x = keep(rng) ? 1 : 0;
    }
    return m;
}

/// Random Q [B, H, Lq, D], K [B, Hkv, Lk, D] and V [B, Hkv, Lk, Dv] (uniform in [-1, 1]),
/// drawn from rng in that order.
struct Qkv {
    Tensor q, k, v;
};
inline Qkv random_qkv(std::mt19937& rng, Shape q, Shape k, std::size_t dv) {
    Qkv t;
    t.q = random_tensor(rng, q);
    t.k = random_tensor(rng, k);
    t.v = random_tensor(rng, {k[0], k[1], k[2], dv});
    return t;
}

/// x [B, Hkv, L, D] with every head repeated for its group of `heads` query heads:
/// [B, heads, L, D], head hh a copy of head hh / (heads / Hkv) (grouped-query attention
/// written out).
inline Tensor repeat_heads(const Tensor& x, std::size_t heads) {
    const auto s = x.shape();
    const std::size_t group = heads / s[1];
    Tensor r = Tensor::from_shape({s[0], heads, s[2], s[3]});
    for (std::size_t b = 0; b < s[0]; ++b) {
        for (std::size_t hh = 0; hh < heads; ++hh) {
            for (std::size_t j = 0; j < s[2]; ++j) {
                for (std::size_t d = 0; d < s[3]; ++d) {
                    r(b, hh, j, d) = x(b, hh / group, j, d);
                }
            }
        }
    }
    return r;
}

/// |a - e| <= atol + rtol·|e| elementwise; on failure names the worst index.
template <class A>
::testing::AssertionResult
all_close(const A& actual, const std::vector<double>& expected, double rtol, double atol) {
    if (static_cast<std::size_t>(actual.size()) != expected.size()) {
        return ::testing::AssertionFailure()
               << "size " << actual.size() << " vs " << expected.size();
    }
    double worst = -1.0, num = 0.0, den = 0.0;
    std::size_t worst_i = 0;
    auto it = actual.begin();
    for (std::size_t i = 0; i < expected.size(); ++i, ++it) {
        const double a = static_cast<double>(*it);
        const double e = expected[i];
        const double excess = std::abs(a - e) - (atol + rtol * std::abs(e));
        num += (a - e) * (a - e);
        den += e * e;
        if (!(excess <= 0.0) && (excess > worst || std::isnan(excess))) {
            worst = std::isnan(excess) ? 1e300 : excess;
            worst_i = i;
        }
    }
    if (worst < 0.0) {
        return ::testing::AssertionSuccess();
    }
    auto w = actual.begin();
    std::advance(w, static_cast<std::ptrdiff_t>(worst_i));
    return ::testing::AssertionFailure()
           << "worst at flat index " << worst_i << ": got " << static_cast<double>(*w)
           << ", expected " << expected[worst_i] << " (rtol " << rtol << ", atol " << atol
           << "), NMSE " << (den > 0 ? num / den : num);
}

/// float32 tolerance for a reduction over n terms of magnitude ~1.
inline double f32_tol(std::size_t n) {
    return 8.0 * 1.1920929e-7 * std::sqrt(static_cast<double>(std::max<std::size_t>(n, 1))) + 1e-7;
}

/// The regex that matches exactly `text` (for EXPECT_INPUT_ERROR with a whole message).
inline std::string exactly(const std::string& text) {
    static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
    return "^" + std::regex_replace(text, special, R"(\$&)") + "$";
}

/// `f` throws an InputError whose message is one line matching `pattern` (std::regex_search,
/// ECMAScript). Use through EXPECT_INPUT_ERROR.
template <class F>::testing::AssertionResult throws_input_error(F&& f, const std::string& pattern) {
    try {
        f();
    } catch (const InputError& e) {
        const std::string message = e.what();
        if (message.find('\n') != std::string::npos) {
            return ::testing::AssertionFailure() << "message is not one line: " << message;
        }
        if (!std::regex_search(message, std::regex(pattern))) {
            return ::testing::AssertionFailure()
                   << "message\n  " << message << "\ndoes not match\n  " << pattern;
        }
        return ::testing::AssertionSuccess();
    } catch (const std::exception& e) {
        return ::testing::AssertionFailure() << "not an InputError: " << e.what();
    }
    return ::testing::AssertionFailure()
           << "no exception; wanted an InputError matching " << pattern;
}

/// The message of the InputError that f() throws, or "(no InputError)" (for EXPECT_EQ on a
/// whole message).
template <class F> std::string message_of(const F& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no InputError)";
}

/// Every SIMD target this CPU runs (of those compiled in, best first): the kernel tests
/// run once per target, through ::testing::ValuesIn(simd_targets()).
inline std::vector<Simd> simd_targets() {
    return simd_supported();
}

/// The target's name, usable in a test name ("AVX3", "SSE4", "SCALAR", ...).
inline std::string simd_label(Simd simd) {
    return simd_name(simd);
}

} // namespace attn::testing

/// EXPECT_INPUT_ERROR(statement, regex): the statement throws attn::InputError with a
/// one-line message matching regex; attn::testing::exactly(text) pins a whole message.
#define EXPECT_INPUT_ERROR(statement, regex)                                                       \
    EXPECT_TRUE(::attn::testing::throws_input_error([&] { statement; }, (regex)))

// The SIMD target choice: which targets are compiled in and run here (printed, so the
// log of every test run says which targets the per-target kernel tests covered), names
// that round-trip, and InputError for a target that is unknown or that the CPU lacks.
#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/kernels.hpp"
#include "unit/test_util.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <iostream>
#include <string>

namespace attn {
namespace {

using testing::simd_label;
using testing::simd_targets;

std::string names(const std::vector<Simd>& targets) {
    std::string out;
    for (const Simd t : targets) {
        out += (out.empty() ? "" : " ") + simd_label(t);
    }
    return out;
}

TEST(SimdTargets, PrintsTheTargetsTheKernelTestsRun) {
    const std::vector<Simd> compiled = simd_compiled();
    const std::vector<Simd> runs = simd_targets();
    std::cout << "[ SIMD     ] compiled: " << names(compiled) << "\n"
              << "[ SIMD     ] this CPU runs (kernel tests cover each): " << names(runs)
              << "\n[ SIMD     ] best: " << simd_name(Simd::best) << std::endl;
    ::testing::Test::RecordProperty("simd_targets_tested", names(runs));
    ASSERT_FALSE(runs.empty());
    EXPECT_EQ(simd_label(runs.front()), simd_name(Simd::best));
    // The fallback (scalar or emulated 128-bit) is compiled in and runs everywhere.
    const std::string last = simd_label(compiled.back());
    EXPECT_TRUE(last == "SCALAR" || last == "EMU128") << last;
    EXPECT_EQ(simd_label(runs.back()), last);
    for (const Simd t : runs) {
        EXPECT_NE(std::find(compiled.begin(), compiled.end(), t), compiled.end()) << simd_label(t);
    }
}

TEST(SimdTargets, NamesRoundTripCaseInsensitively) {
    EXPECT_EQ(simd_target("best"), Simd::best);
    for (const Simd t : simd_targets()) {
        const std::string name = simd_label(t);
        EXPECT_EQ(simd_target(name), t) << name;
        std::string lower = name;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
            return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        });
        EXPECT_EQ(simd_target(lower), t) << lower;
    }
}

TEST(SimdTargets, UnknownOrUnsupportedTargetsAreInputErrors) {
    EXPECT_THROW(simd_target("avx1024"), InputError);
    EXPECT_THROW(simd_target(""), InputError);
    // A value no compiled target has, passed straight through the spec.
    const Simd bogus = static_cast<Simd>(std::int64_t{1} << 40);
    EXPECT_STREQ(simd_name(bogus), "unknown");
    std::mt19937 rng(1);
    const Tensor q = testing::random_tensor(rng, {1, 1, 2, 4});
    EXPECT_THROW(attend(q, q, q, {.simd = bogus}), InputError);
    EXPECT_THROW(attend(q, q, q, {.want_weights = false, .simd = bogus}), InputError);
    // Compiled but not run by this CPU (e.g. AVX3 on an AVX2 machine): named, refused.
    for (const Simd t : simd_compiled()) {
        const auto runs = simd_targets();
        if (std::find(runs.begin(), runs.end(), t) == runs.end()) {
            EXPECT_THROW(simd_target(simd_label(t)), InputError) << simd_label(t);
            EXPECT_THROW(attend(q, q, q, {.simd = t}), InputError) << simd_label(t);
        }
    }
}

} // namespace
} // namespace attn

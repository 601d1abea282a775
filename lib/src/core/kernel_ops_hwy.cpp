// The kernel operations, written once over Google Highway and compiled for every SIMD
// target Highway knows on the build machine's architecture (x86: AVX3_DL, AVX3 (AVX-512),
// AVX2, SSE4, SSSE3; Arm: NEON, not SVE: attn/hwy_targets.hpp says why; plus the scalar
// or emulated fallback). This file is included once per target by hwy/foreach_target.h;
// each pass fills one KernelOps table in its own namespace (N_AVX2, ...), and the HWY_ONCE
// part at the end picks a table per call: the best one the CPU supports, or the one
// spec.simd names.
//
// The operations live in per-target parts (Highway's -inl.h convention), included below:
//   kernel_simd-inl.h     vector type, partial loads and stores, prefetch, exp, max;
//   kernel_gemm-inl.h     the register-blocked micro-GEMM (kRows x kVecs vectors of C per
//                         tile, sized per target: more accumulators with wider and more
//                         registers);
//   kernel_score-inl.h    the score pipeline: what a score becomes and the row statistics
//                         (every kernel's one definition; the scalar loops include it too);
//   kernel_softmax-inl.h  the online-softmax step and the weights-row softmax (loops over
//                         the pipeline's steps);
//   kernel_pool-inl.h     the long view's passes over a score block (top-k filter, column
//                         max and sum, and their scaling into weights: kernel_pooled.cpp).
// The MLP's activation pass is compiled the same way in its own file (activation_hwy.cpp).
// Blocking and masking are the drivers' (kernels_*.cpp). Ragged edges go through masked
// loads and stores (or a small staging buffer where the target's masked load may touch
// the masked-off lanes). This file holds the per-target table and the dispatch.
#include "attn/error.hpp"
#include "attn/hwy_targets.hpp" // the targets, before Highway's own headers
#include "attn/kernels.hpp"
#include "kernel_ops.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernel_ops_hwy.cpp"
#include <hwy/foreach_target.h> // IWYU pragma: keep
#include <hwy/highway.h>

// The operations, each in its own part, included here once per target.
#include "core/kernel_gemm-inl.h"
#include "core/kernel_pool-inl.h"
#include "core/kernel_softmax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attn::detail::HWY_NAMESPACE {

/// This target's activation pass (activation_hwy.cpp, its own translation unit).
void swish(float* x, std::size_t n, double beta, double gamma);

/// This target's table (referenced by the HWY_ONCE part below).
extern const KernelOps kOps;
const KernelOps kOps{
    .gemm = &gemm,
    .swish = &swish,
    .online_softmax = &online_softmax,
    .softmax_row = &softmax_row,
    .score_hits = &score_hits,
    .pool_keys = &pool_keys,
    .scale_columns = &scale_columns,
};

} // namespace attn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace attn::detail {

namespace {

struct TargetOps {
    std::int64_t target;
    const KernelOps* ops;
};

/// Every target compiled into this file, best first (Highway's order: lower bit = better).
constexpr TargetOps kCompiled[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    {HWY_AVX3_DL, &N_AVX3_DL::kOps},
#endif
#if HWY_TARGETS & HWY_AVX3
    {HWY_AVX3, &N_AVX3::kOps},
#endif
#if HWY_TARGETS & HWY_AVX2
    {HWY_AVX2, &N_AVX2::kOps},
#endif
#if HWY_TARGETS & HWY_SSE4
    {HWY_SSE4, &N_SSE4::kOps},
#endif
#if HWY_TARGETS & HWY_SSSE3
    {HWY_SSSE3, &N_SSSE3::kOps},
#endif
#if HWY_TARGETS & HWY_SVE2_128
    {HWY_SVE2_128, &N_SVE2_128::kOps},
#endif
#if HWY_TARGETS & HWY_SVE_256
    {HWY_SVE_256, &N_SVE_256::kOps},
#endif
#if HWY_TARGETS & HWY_SVE2
    {HWY_SVE2, &N_SVE2::kOps},
#endif
#if HWY_TARGETS & HWY_SVE
    {HWY_SVE, &N_SVE::kOps},
#endif
#if HWY_TARGETS & HWY_NEON
    {HWY_NEON, &N_NEON::kOps},
#endif
#if HWY_TARGETS & HWY_EMU128
    {HWY_EMU128, &N_EMU128::kOps},
#endif
#if HWY_TARGETS & HWY_SCALAR
    {HWY_SCALAR, &N_SCALAR::kOps},
#endif
};

const TargetOps* find_compiled(Simd simd) {
    for (const TargetOps& t : kCompiled) {
        if (t.target == static_cast<std::int64_t>(simd)) {
            return &t;
        }
    }
    return nullptr;
}

/// Whether this CPU runs `target`. Highway 1.0's SupportedTargets() runs CPUID on every
/// call, and under a hypervisor each CPUID is a VM exit (about 25 us measured on the
/// project's VM): asked once per process, not once per micro-GEMM call.
bool cpu_supports(std::int64_t target) {
    static const std::int64_t supported = hwy::SupportedTargets();
    return (supported & target) != 0;
}

std::string joined_names(const std::vector<Simd>& targets) {
    std::string out;
    for (const Simd t : targets) {
        out += (out.empty() ? "" : ", ") + std::string(simd_name(t));
    }
    return out;
}

/// The best compiled target this CPU runs (the fallback runs everywhere).
const TargetOps& best_target() {
    static const TargetOps& best = [&]() -> const TargetOps& {
        for (const TargetOps& t : kCompiled) {
            if (cpu_supports(t.target)) {
                return t;
            }
        }
        return kCompiled[sizeof(kCompiled) / sizeof(kCompiled[0]) - 1];
    }();
    return best;
}

} // namespace

const KernelOps& kernel_ops(Simd simd) {
    if (simd == Simd::best) {
        return *best_target().ops;
    }
    const TargetOps* t = find_compiled(simd);
    if (t == nullptr) {
        throw InputError(
            "simd: no such target in this build (compiled: " + joined_names(simd_compiled()) + ")");
    }
    if (!cpu_supports(t->target)) {
        throw InputError(std::string("simd: this CPU cannot run the ") + simd_name(simd) +
                         " target (it runs: " + joined_names(simd_supported()) + ")");
    }
    return *t->ops;
}

} // namespace attn::detail

namespace attn {

std::vector<Simd> simd_compiled() {
    std::vector<Simd> out;
    for (const detail::TargetOps& t : detail::kCompiled) {
        out.push_back(static_cast<Simd>(t.target));
    }
    return out;
}

std::vector<Simd> simd_supported() {
    std::vector<Simd> out;
    for (const detail::TargetOps& t : detail::kCompiled) {
        if (detail::cpu_supports(t.target)) {
            out.push_back(static_cast<Simd>(t.target));
        }
    }
    return out;
}

Simd simd_target(std::string_view name) {
    const auto same = [](std::string_view x, std::string_view y) {
        if (x.size() != y.size()) {
            return false;
        }
        for (std::size_t i = 0; i < x.size(); ++i) {
            const auto lower = [](char ch) {
                return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch;
            };
            if (lower(x[i]) != lower(y[i])) {
                return false;
            }
        }
        return true;
    };
    if (same(name, "best")) {
        return Simd::best;
    }
    for (const Simd t : simd_compiled()) {
        if (same(name, simd_name(t))) {
            detail::kernel_ops(t); // InputError unless this CPU runs it
            return t;
        }
    }
    throw InputError("simd: unknown target '" + std::string(name) +
                     "' (compiled: " + detail::joined_names(simd_compiled()) + ")");
}

const char* simd_name(Simd simd) {
    const auto target =
        simd == Simd::best ? detail::best_target().target : static_cast<std::int64_t>(simd);
    return detail::find_compiled(static_cast<Simd>(target)) != nullptr ? hwy::TargetName(target)
                                                                       : "unknown";
}

} // namespace attn

#endif // HWY_ONCE

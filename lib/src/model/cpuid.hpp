// CPUID, for what Highway 1.0 does not report: the vendor, AVX512_BF16, AMX.
#pragma once

#include <array>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace attn::model::detail {

/// CPUID leaf `leaf`, sub-leaf `subleaf`: {EAX, EBX, ECX, EDX}; zeros where the CPU has no
/// such leaf, and on a CPU other than x86.
inline std::array<unsigned, 4> cpuid(unsigned leaf, unsigned subleaf = 0) {
    std::array<unsigned, 4> r{};
#if defined(__x86_64__) || defined(__i386__)
    if (__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3]) == 0) {
        r = {};
    }
#else
    (void)leaf;
    (void)subleaf;
#endif
    return r;
}

} // namespace attn::model::detail

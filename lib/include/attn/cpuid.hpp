// CPUID, for what Highway 1.0 does not report: the vendor, AVX512_BF16, AMX, the VNNI
// instructions beyond a target (the model's products), F16C outside a Highway target (the
// core's binary16 rounding).
#pragma once

#include <array>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace attn::detail {

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

/// Whether this CPU has AVX-VNNI, the VNNI dot products on 256 bits in VEX form (CPUID leaf
/// 7, sub-leaf 1, EAX bit 4: Intel Core from Alder Lake, Zen 5).
inline bool avx_vnni_cpu() {
    static const bool has = (cpuid(7, 1)[0] & (1U << 4U)) != 0;
    return has;
}

/// Whether this CPU has AVX512_VNNI (CPUID leaf 7, sub-leaf 0, ECX bit 11: Cascade Lake and
/// later, Zen 4 and later).
inline bool avx512_vnni_cpu() {
    static const bool has = (cpuid(7, 0)[2] & (1U << 11U)) != 0;
    return has;
}

/// Whether this CPU runs F16C's conversions on 256 bits: CPUID leaf 1, ECX bits 27 (OSXSAVE),
/// 28 (AVX) and 29 (F16C), and the OS saving the YMM registers (XCR0 bits 1 and 2). Every
/// AVX2 CPU has it.
inline bool f16c_cpu() {
#if defined(__x86_64__) || defined(__i386__)
    static const bool has = [] {
        constexpr unsigned kNeeded = (1U << 27U) | (1U << 28U) | (1U << 29U);
        if ((cpuid(1)[2] & kNeeded) != kNeeded) {
            return false;
        }
        unsigned lo = 0;
        unsigned hi = 0;
        __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        return (lo & 6U) == 6U;
    }();
    return has;
#else
    return false;
#endif
}

} // namespace attn::detail

// IEEE binary16 conversions (attn/half.hpp).
#include "attn/half.hpp"

#include "attn/cpuid.hpp"

#include <bit>
#include <cmath>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTN_HALF_F16C 1
#endif

namespace attn {

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    const std::uint32_t mantissa = h & 0x3ffu;
    std::uint32_t bits = 0;
    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24 is a normal float32, computed exactly.
        const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
        bits = sign | std::bit_cast<std::uint32_t>(magnitude);
    } else if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13); // inf, or NaN keeping its payload
    } else {
        bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
    }
    return std::bit_cast<float>(bits);
}

std::uint16_t double_to_half(double x) {
    const auto sign = static_cast<std::uint16_t>((std::bit_cast<std::uint64_t>(x) >> 48) & 0x8000u);
    const double a = std::fabs(x);
    if (std::isnan(x)) {
        return static_cast<std::uint16_t>(sign | 0x7e00u);
    }
    if (a >= 65520.0) { // halfway between 65504 (the largest half) and 2^16 rounds to even: inf
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    }
    if (a < 0x1p-14) {
        // Zero or subnormal: a = m · 2^-24; scaling by a power of two is exact, nearbyint
        // rounds to even (the default mode). m = 1024 is 2^-14, the smallest normal's bits.
        return static_cast<std::uint16_t>(sign |
                                          static_cast<std::uint16_t>(std::nearbyint(a * 0x1p24)));
    }
    int e = 0;
    static_cast<void>(std::frexp(a, &e)); // a = f · 2^e, f in [0.5, 1)
    auto m = static_cast<std::uint32_t>(std::nearbyint(std::ldexp(a, 11 - e))); // [1024, 2048]
    std::uint32_t biased = static_cast<std::uint32_t>(e - 1 + 15);
    if (m == 2048) { // rounded up to the next power of two
        m = 1024;
        ++biased;
    }
    if (biased >= 31) {
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    }
    return static_cast<std::uint16_t>(sign | (biased << 10) | (m - 1024));
}

std::uint16_t float_to_half(float x) {
    const auto bits = std::bit_cast<std::uint32_t>(x);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) { // NaN
        return static_cast<std::uint16_t>(sign | 0x7e00u);
    }
    if (a >= 0x477ff000u) { // 65520 and up (the tie with 2^16 goes to the even: inf)
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    }
    if (a >= 0x38800000u) { // 2^-14 and up: normal; ties to even at bit 13 (the carry may
        // step the exponent: exact, the next power of two's bits)
        const std::uint32_t rounded = a - 0x38000000u + 0xfffu + ((a >> 13) & 1u);
        return static_cast<std::uint16_t>(sign | (rounded >> 13));
    }
    const std::uint32_t exponent = a >> 23;
    if (exponent < 102) { // below 2^-25 (the tie with 2^-24, which goes to 0): 0
        return sign;
    }
    // A subnormal half: |x| / 2^-24 = m24 / 2^shift, rounded to even (1024 is the smallest
    // normal's bits, right as they are).
    const std::uint32_t m24 = (a & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent; // 14 .. 24
    std::uint32_t m = m24 >> shift;
    const std::uint32_t rest = m24 & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (m & 1u) != 0)) {
        ++m;
    }
    return static_cast<std::uint16_t>(sign | m);
}

namespace {

#ifdef ATTN_HALF_F16C
/// Eight at a time through vcvtps2ph (round to nearest even, whatever MXCSR says; subnormal
/// results kept); NaN lanes first become the quiet NaN of their sign, as double_to_half
/// gives (vcvtps2ph would keep the payload's top bits). The rest through float_to_half.
__attribute__((target("avx,f16c"))) void
halves_f16c(const float* in, std::size_t n, std::uint16_t* out) {
    const __m256 quiet = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000));
    const __m256 sign_bit = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(in + i);
        const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        // (and/andnot/or: GCC 12 expands this blendv lane by lane)
        const __m256 canonical = _mm256_or_ps(_mm256_and_ps(v, sign_bit), quiet);
        v = _mm256_or_ps(_mm256_and_ps(nan, canonical), _mm256_andnot_ps(nan, v));
        const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
    }
    for (; i < n; ++i) {
        out[i] = float_to_half(in[i]);
    }
}

#endif

} // namespace

void floats_to_halves(const float* in, std::size_t n, std::uint16_t* out) {
#ifdef ATTN_HALF_F16C
    if (detail::f16c_cpu()) {
        halves_f16c(in, n, out);
        return;
    }
#endif
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = float_to_half(in[i]);
    }
}

} // namespace attn

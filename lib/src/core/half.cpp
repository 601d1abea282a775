// IEEE binary16 conversions (attn/half.hpp).
#include "attn/half.hpp"

#include <bit>
#include <cmath>

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

} // namespace attn

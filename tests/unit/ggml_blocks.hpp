// Seeded random matrices in ggml's block formats, for the stored-type product's tests and
// benchmark: random bytes everywhere (every nibble, bit and 6-bit scale a block can hold),
// then each block's fp16 scales overwritten with finite ones, and F16/BF16/F32 elements
// drawn finite, so every dequantized value is finite.
#pragma once

#include "attn/model/quants.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace attn::testing {

/// Where each block of `type` keeps its fp16 scales (d, and dmin or m where it has one).
inline std::vector<std::size_t> ggml_scale_offsets(std::uint32_t type) {
    switch (type) {
    case 2: // Q4_0
    case 6: // Q5_0
    case 8: // Q8_0
        return {0};
    case 3:  // Q4_1
    case 7:  // Q5_1
    case 12: // Q4_K
    case 13: // Q5_K
        return {0, 2};
    case 10: // Q2_K
        return {80, 82};
    case 11: // Q3_K
        return {108};
    case 14: // Q6_K
        return {208};
    default:
        return {};
    }
}

/// `elements` values of ggml type `type` (a multiple of its block), seeded: scales are
/// fp16 with exponent field 8..11 (about 0.004..0.06, any sign), F16 and BF16 elements have
/// exponents near 1, F32 elements are in [-2, 2].
inline std::vector<std::uint8_t>
random_ggml_blocks(std::uint32_t type, std::size_t elements, std::uint32_t seed) {
    const model::GgmlTypeTraits* t = model::ggml_type_traits(type);
    const std::size_t n_blocks = elements / t->block;
    std::vector<std::uint8_t> bytes(n_blocks * t->block_bytes);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : bytes) {
        b = static_cast<std::uint8_t>(byte(rng));
    }
    // A 16-bit float with a random mantissa, a random sign and a small exponent field:
    // `exp_base` + 0..3 in bits 10..14 (fp16) or 7..14 (bf16).
    const auto small16 = [&](int shift, int exp_base) {
        const int sign = byte(rng) & 1;
        const int exponent = exp_base + (byte(rng) & 3);
        const int mantissa = (byte(rng) << 8 | byte(rng)) & ((1 << shift) - 1);
        return static_cast<std::uint16_t>(sign << 15 | exponent << shift | mantissa);
    };
    const auto put16 = [&](std::size_t at, std::uint16_t v) {
        bytes[at] = static_cast<std::uint8_t>(v & 0xFF);
        bytes[at + 1] = static_cast<std::uint8_t>(v >> 8);
    };
    if (type == 0) { // F32
        std::uniform_real_distribution<float> value(-2.0F, 2.0F);
        for (std::size_t i = 0; i < elements; ++i) {
            const float v = value(rng);
            std::memcpy(bytes.data() + 4 * i, &v, 4);
        }
    } else if (type == 1) { // F16: exponents 13..16, |v| in [0.25, 4)
        for (std::size_t i = 0; i < elements; ++i) {
            put16(2 * i, small16(10, 13));
        }
    } else if (type == 30) { // BF16: exponents 125..128, |v| in [0.25, 4)
        for (std::size_t i = 0; i < elements; ++i) {
            put16(2 * i, small16(7, 125));
        }
    }
    for (std::size_t i = 0; i < n_blocks; ++i) {
        for (const std::size_t off : ggml_scale_offsets(type)) {
            put16(i * t->block_bytes + off, small16(10, 8));
        }
    }
    return bytes;
}

} // namespace attn::testing

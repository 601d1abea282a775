// IEEE binary16 (numpy's float16) to and from wider floats, once for every layer: the NPY
// and safetensors readers, the f16 weights writer, and the HTML view's exact top-k weights.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attn {

/// IEEE binary16 -> binary32, exact for every input (subnormals, infinities, NaN payloads).
float half_to_float(std::uint16_t h);

/// binary64 -> IEEE binary16, rounded to nearest with ties to even, as numpy's
/// astype(float16): beyond 65504 (from 65520 on) ±inf, below 2^-14 a subnormal (or ±0),
/// NaN a quiet NaN (0x7e00 with the sign). A float32 is exact as a double, so one rounding.
std::uint16_t double_to_half(double x);

/// out[i] = double_to_half(in[i]) for i < n, the same bits at SIMD speed: F16C's
/// vcvtps2ph where the CPU has it (x86: every AVX2 CPU), else float_to_half. For the f16
/// weights, where double_to_half's 7 ns a value were most of the cost of writing them.
void floats_to_halves(const float* in, std::size_t n, std::uint16_t* out);

/// double_to_half of a float by integer steps: the portable half of floats_to_halves.
std::uint16_t float_to_half(float x);

} // namespace attn

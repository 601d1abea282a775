// The BF16 pair products (--activations bf16) on Intel's AMX-BF16 tiles (Sapphire Rapids and
// later): matmul_bf16.cpp calls it for Simd::best where amx_bf16_ready(). TDPBF16PS sums in
// its own order (below), so its results differ in the last bits from vdpbf16ps's pair chain
// (the other CPUs'): both are the float32 sum of the same exact BF16 products, within the
// same bound. It reads no file and checks no shapes.
#pragma once

#include "model/matmul_ops.hpp"

#include <cstddef>

namespace attn::model::detail {

/// Pairs a tile reads per activation row: the block of TDPBF16PS's order.
constexpr std::size_t kAmxBlockPairs = 16;
/// Activation rows a call's layout is padded to (two tiles of 16).
constexpr std::size_t kAmxRows = 32;

/// Whether this CPU has AMX-TILE and AMX-BF16 (CPUID leaf 7: EDX bits 24 and 22) and Linux
/// gave this process the tile state (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA, asked
/// once). False elsewhere.
bool amx_bf16_ready();

/// dot_bf16's job (DotBf16Args) on the tiles, with the layout padded: `x` readable for
/// kAmxRows-multiple rows past n and for `pairs` rounded up to kAmxBlockPairs, `w` for that
/// many pairs (zeros in every padding). Per output, over the whole K: the pairs in blocks of
/// 16 from the first, per block e = the even k's products summed by FMAs from +0, o the odd
/// k's alike, then acc = acc + (e + o), every step rounded to nearest even, inputs and sums
/// below 2⁻¹²⁶ in magnitude zeros of their sign (Intel's definition of TDPBF16PS, as this
/// CPU computes it). The driver's chunks start at multiples of 16 pairs.
void amx_dot_bf16(const DotBf16Args& args);

} // namespace attn::model::detail

// The value types of the numeric core: rank-4 float32 tensors (float64 ones for the
// f64 precision) and uint8 keep-masks.
// Lower-rank inputs are lifted to rank 4 once, at the I/O edge; the core never sees
// files, JSON or the command line.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>
#include <xtensor/xtensor.hpp>

namespace attn {

/// Row-major float32, always rank 4: [batch, heads, length, features].
using Tensor = xt::xtensor<float, 4>;
/// Row-major keep-mask, rank 4: 1 = may attend, 0 = blocked.
using Mask = xt::xtensor<std::uint8_t, 4>;
/// Row-major float32 matrix, e.g. an nn.Linear weight [out, in].
using Matrix = xt::xtensor<float, 2>;
/// Row-major float32 vector, e.g. an nn.Linear bias [out].
using Vector = xt::xtensor<float, 1>;
/// Row-major float32 rank-3 tensor: [batch, length, features].
using Tensor3 = xt::xtensor<float, 3>;

/// The float64 counterparts, for `precision: f64` (attend() and attend_layer() overloads).
using Tensor64 = xt::xtensor<double, 4>;
using Matrix64 = xt::xtensor<double, 2>;
using Vector64 = xt::xtensor<double, 1>;
using Tensor3_64 = xt::xtensor<double, 3>;

using Shape = std::array<std::size_t, 4>;

/// The shape of any xtensor container as a vector (for messages).
template <class E> std::vector<std::size_t> shape_of(const E& e) {
    return std::vector<std::size_t>(e.shape().begin(), e.shape().end());
}

} // namespace attn

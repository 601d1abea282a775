// The value types of the numeric core: rank-4 tensors (float32 by default, float64 for
// the f64 precision) and uint8 keep-masks. Naming rule: X = BasicX<float>; float64 is
// BasicX<double>.
// Lower-rank inputs are lifted to rank 4 once, at the I/O edge; the core never sees
// files, JSON or the command line.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>
#include <xtensor/xtensor.hpp>

namespace attn {

/// Row-major, always rank 4: [batch, heads, length, features]. T is the precision:
/// float32 (Tensor) or float64 (BasicTensor<double>, for `precision: f64`).
template <class T> using BasicTensor = xt::xtensor<T, 4>;
using Tensor = BasicTensor<float>;
/// Row-major keep-mask, rank 4: 1 = may attend, 0 = blocked.
using Mask = xt::xtensor<std::uint8_t, 4>;
/// Row-major matrix, e.g. an nn.Linear weight [out, in].
template <class T> using BasicMatrix = xt::xtensor<T, 2>;
using Matrix = BasicMatrix<float>;
/// Row-major vector, e.g. an nn.Linear bias [out].
template <class T> using BasicVector = xt::xtensor<T, 1>;
using Vector = BasicVector<float>;
/// Row-major rank-3 tensor: [batch, length, features].
template <class T> using BasicTensor3 = xt::xtensor<T, 3>;
using Tensor3 = BasicTensor3<float>;

using Shape = std::array<std::size_t, 4>;

/// The shape of any xtensor container as a vector (for messages).
template <class E> std::vector<std::size_t> shape_of(const E& e) {
    return std::vector<std::size_t>(e.shape().begin(), e.shape().end());
}

} // namespace attn

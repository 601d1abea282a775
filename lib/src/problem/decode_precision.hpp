// Internal to decode_problem(): how a numeric field is decoded once for every precision a
// problem holds. A decode step is one lambda over BasicInputs<T>, called for the float32
// inputs and, for precision f64, for the float64 ones (for_each_precision); it reads an
// array's values in T (values_in: NPY f8 and JSON decimals exact in double, never rounded
// through float32) and a float32 value read from a checkpoint in T (in_precision: the
// same value for float, widened exactly for double).
#pragma once

#include "attn/embedding.hpp"
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/layer.hpp"
#include "attn/norm.hpp"
#include "attn/problem/problem.hpp"

#include <algorithm>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

namespace attn::problem::detail {

/// Calls `f` with each precision's inputs `p` holds: its float32 inputs, then, for
/// precision f64, its float64 ones. One decode step for both:
///   for_each_precision(p, [&]<class T>(BasicInputs<T>& in) { in.scale = s.get<T>(); });
/// The float32 call comes first: a check that throws, throws there.
template <class F> void for_each_precision(Problem& p, F&& f) {
    f(static_cast<Inputs&>(p));
    if (p.doubles) {
        f(*p.doubles);
    }
}

/// An array's values in T: as read in float32, or (read with Precision::f64) in float64.
template <class T, class Array> auto& values_in(Array& a) {
    if constexpr (std::is_same_v<T, float>) {
        return a.values;
    } else {
        static_assert(std::is_same_v<T, double>);
        return a.values64;
    }
}

/// A tensor of an array's values in the tensor's precision, in `shape`.
template <class Tensor>
Tensor array_tensor(const io::Array& a, const typename Tensor::shape_type& shape) {
    // float32: borrowed values or its own (io::Array::floats); float64: values64.
    const auto values = [&] {
        if constexpr (std::is_same_v<typename Tensor::value_type, float>) {
            return a.floats();
        } else {
            return std::span<const double>(a.values64);
        }
    }();
    Tensor t = Tensor::from_shape(shape);
    ATTN_ASSERT(values.size() == t.size());
    std::copy(values.begin(), values.end(), t.begin());
    return t;
}

// A float32 value widened to float64, exactly (float -> double loses nothing).
template <std::size_t N> xt::xtensor<double, N> widened(const xt::xtensor<float, N>& x) {
    auto y = xt::xtensor<double, N>::from_shape(x.shape());
    std::copy(x.begin(), x.end(), y.begin());
    return y;
}
inline BasicNorm<double> widened(const Norm& n);
template <class X> auto widened(const std::optional<X>& x) -> std::optional<decltype(widened(*x))> {
    if (!x) {
        return std::nullopt;
    }
    return widened(*x);
}
inline BasicProjections<double> widened(const Projections& p) {
    return {.w_q = widened(p.w_q),
            .w_k = widened(p.w_k),
            .w_v = widened(p.w_v),
            .w_o = widened(p.w_o),
            .b_q = widened(p.b_q),
            .b_k = widened(p.b_k),
            .b_v = widened(p.b_v),
            .b_o = widened(p.b_o),
            .stored_q = {}, // a problem's weights are float arrays, never stored ones
            .stored_k = {},
            .stored_v = {},
            .stored_o = {}};
}
inline BasicNorm<double> widened(const Norm& n) {
    BasicNorm<double> out;
    out.kind = n.kind;
    out.weight = widened(n.weight);
    out.bias = widened(n.bias);
    out.eps = n.eps;
    out.name = n.name;
    return out;
}
inline BasicEmbeddings<double> widened(const Embeddings& e) {
    BasicEmbeddings<double> out;
    out.token = widened(e.token);
    out.position = widened(e.position);
    out.token_type = widened(e.token_type);
    out.norm = widened(e.norm);
    return out;
}

/// A float32 value (a checkpoint's weights, norm, embeddings) in precision T: the value
/// itself for float (no copy), widened exactly for double.
template <class T, class X> decltype(auto) in_precision(const X& x) {
    if constexpr (std::is_same_v<T, float>) {
        return (x);
    } else {
        static_assert(std::is_same_v<T, double>);
        return widened(x);
    }
}

} // namespace attn::problem::detail

// LayerNorm and RMSNorm over the last axis, one row at a time: two passes in double
// (mean, then the centred sum of squares, so a large mean does not cancel the variance),
// one rounding to the output type per element.
#include "attn/norm.hpp"

#include "attn/error.hpp"

#include <cmath>
#include <string>

namespace attn {

namespace {

template <class T>
void check_vector(const xt::xtensor<T, 1>& v, std::size_t e, const char* what, const char* part) {
    if (v.shape(0) != e) {
        throw InputError::shape(std::string(what) + "." + part, {e}, shape_of(v));
    }
}

void check_eps(double eps, const char* what) {
    if (!std::isfinite(eps) || eps < 0.0) {
        throw InputError(std::string(what) + ".eps: expected a finite number >= 0, got " +
                         std::to_string(eps));
    }
}

template <class T>
xt::xtensor<T, 3> layer_norm_impl(const xt::xtensor<T, 3>& x,
                                  const xt::xtensor<T, 1>& w,
                                  const xt::xtensor<T, 1>* b,
                                  double eps,
                                  const char* what) {
    const std::size_t E = x.shape(2);
    check_vector(w, E, what, "weight");
    if (b != nullptr) {
        check_vector(*b, E, what, "bias");
    }
    check_eps(eps, what);
    xt::xtensor<T, 3> y = xt::xtensor<T, 3>::from_shape(x.shape());
    const std::size_t rows = x.shape(0) * x.shape(1);
    const T* in = x.data();
    T* out = y.data();
    const double n = static_cast<double>(E);
    for (std::size_t r = 0; r < rows; ++r) {
        const T* xr = in + r * E;
        T* yr = out + r * E;
        double sum = 0.0;
        for (std::size_t i = 0; i < E; ++i) {
            sum += static_cast<double>(xr[i]);
        }
        const double mean = sum / n;
        double sq = 0.0;
        for (std::size_t i = 0; i < E; ++i) {
            const double d = static_cast<double>(xr[i]) - mean;
            sq += d * d;
        }
        const double inv = 1.0 / std::sqrt(sq / n + eps);
        for (std::size_t i = 0; i < E; ++i) {
            double v = (static_cast<double>(xr[i]) - mean) * inv * static_cast<double>(w(i));
            if (b != nullptr) {
                v += static_cast<double>((*b)(i));
            }
            yr[i] = static_cast<T>(v);
        }
    }
    return y;
}

template <class T>
xt::xtensor<T, 3> rms_norm_impl(const xt::xtensor<T, 3>& x,
                                const xt::xtensor<T, 1>& w,
                                double eps,
                                const char* what) {
    const std::size_t E = x.shape(2);
    check_vector(w, E, what, "weight");
    check_eps(eps, what);
    xt::xtensor<T, 3> y = xt::xtensor<T, 3>::from_shape(x.shape());
    const std::size_t rows = x.shape(0) * x.shape(1);
    const T* in = x.data();
    T* out = y.data();
    for (std::size_t r = 0; r < rows; ++r) {
        const T* xr = in + r * E;
        T* yr = out + r * E;
        double sq = 0.0;
        for (std::size_t i = 0; i < E; ++i) {
            sq += static_cast<double>(xr[i]) * static_cast<double>(xr[i]);
        }
        const double inv = 1.0 / std::sqrt(sq / static_cast<double>(E) + eps);
        for (std::size_t i = 0; i < E; ++i) {
            yr[i] = static_cast<T>(static_cast<double>(xr[i]) * inv * static_cast<double>(w(i)));
        }
    }
    return y;
}

template <class T>
xt::xtensor<T, 3> apply_norm_impl(const xt::xtensor<T, 3>& x, const BasicNorm<T>& n) {
    if (n.kind == NormKind::rms_norm) {
        return rms_norm_impl(x, n.weight, n.eps, n.name);
    }
    return layer_norm_impl(x, n.weight, n.bias ? &*n.bias : nullptr, n.eps, n.name);
}

} // namespace

Tensor3 layer_norm(
    const Tensor3& x, const Vector& weight, const Vector* bias, double eps, const char* what) {
    return layer_norm_impl(x, weight, bias, eps, what);
}

BasicTensor3<double> layer_norm(const BasicTensor3<double>& x,
                                const BasicVector<double>& weight,
                                const BasicVector<double>* bias,
                                double eps,
                                const char* what) {
    return layer_norm_impl(x, weight, bias, eps, what);
}

Tensor3 rms_norm(const Tensor3& x, const Vector& weight, double eps, const char* what) {
    return rms_norm_impl(x, weight, eps, what);
}

BasicTensor3<double> rms_norm(const BasicTensor3<double>& x,
                              const BasicVector<double>& weight,
                              double eps,
                              const char* what) {
    return rms_norm_impl(x, weight, eps, what);
}

Tensor3 apply_norm(const Tensor3& x, const Norm& n) {
    return apply_norm_impl(x, n);
}

BasicTensor3<double> apply_norm(const BasicTensor3<double>& x, const BasicNorm<double>& n) {
    return apply_norm_impl(x, n);
}

} // namespace attn

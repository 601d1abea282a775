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

/// The features of one normalized group: the last axis split into `heads` groups. A weight
/// (or bias) has one group's length (shared by every group) or the whole axis (one per
/// group); returns how far its start moves from one group to the next (0 or the group).
template <class T>
std::size_t group_stride(const xt::xtensor<T, 1>& v,
                         std::size_t e,
                         std::size_t heads,
                         const char* what,
                         const char* part) {
    if (heads == 0 || e % heads != 0) {
        throw InputError(std::string(what) + ": " + std::to_string(e) +
                         " features do not split into " + std::to_string(heads) + " heads");
    }
    const std::size_t g = e / heads;
    if (v.shape(0) == g) {
        return 0;
    }
    check_vector(v, e, what, part);
    return g;
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
                                  const char* what,
                                  std::size_t heads = 1) {
    const std::size_t ws = group_stride(w, x.shape(2), heads, what, "weight");
    const std::size_t bs = b != nullptr ? group_stride(*b, x.shape(2), heads, what, "bias") : 0;
    check_eps(eps, what);
    const std::size_t E = x.shape(2) / heads; // one group's features
    xt::xtensor<T, 3> y = xt::xtensor<T, 3>::from_shape(x.shape());
    const std::size_t rows = x.shape(0) * x.shape(1) * heads;
    const T* in = x.data();
    T* out = y.data();
    const double n = static_cast<double>(E);
    for (std::size_t r = 0; r < rows; ++r) {
        const T* xr = in + r * E;
        T* yr = out + r * E;
        const T* wr = w.data() + (r % heads) * ws;
        const T* br = b != nullptr ? b->data() + (r % heads) * bs : nullptr;
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
            double v = (static_cast<double>(xr[i]) - mean) * inv * static_cast<double>(wr[i]);
            if (br != nullptr) {
                v += static_cast<double>(br[i]);
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
                                const char* what,
                                std::size_t heads = 1) {
    const std::size_t ws = group_stride(w, x.shape(2), heads, what, "weight");
    check_eps(eps, what);
    const std::size_t E = x.shape(2) / heads; // one group's features
    xt::xtensor<T, 3> y = xt::xtensor<T, 3>::from_shape(x.shape());
    const std::size_t rows = x.shape(0) * x.shape(1) * heads;
    const T* in = x.data();
    T* out = y.data();
    for (std::size_t r = 0; r < rows; ++r) {
        const T* xr = in + r * E;
        T* yr = out + r * E;
        const T* wr = w.data() + (r % heads) * ws;
        double sq = 0.0;
        for (std::size_t i = 0; i < E; ++i) {
            sq += static_cast<double>(xr[i]) * static_cast<double>(xr[i]);
        }
        const double inv = 1.0 / std::sqrt(sq / static_cast<double>(E) + eps);
        for (std::size_t i = 0; i < E; ++i) {
            yr[i] = static_cast<T>(static_cast<double>(xr[i]) * inv * static_cast<double>(wr[i]));
        }
    }
    return y;
}

template <class T>
xt::xtensor<T, 3>
apply_norm_impl(const xt::xtensor<T, 3>& x, const BasicNorm<T>& n, std::size_t heads = 1) {
    if (n.kind == NormKind::rms_norm) {
        return rms_norm_impl(x, n.weight, n.eps, n.name, heads);
    }
    return layer_norm_impl(x, n.weight, n.bias ? &*n.bias : nullptr, n.eps, n.name, heads);
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

Tensor3 apply_head_norm(const Tensor3& x, const Norm& n, std::size_t heads) {
    return apply_norm_impl(x, n, heads);
}

BasicTensor3<double>
apply_head_norm(const BasicTensor3<double>& x, const BasicNorm<double>& n, std::size_t heads) {
    return apply_norm_impl(x, n, heads);
}

} // namespace attn

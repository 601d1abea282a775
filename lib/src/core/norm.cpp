// LayerNorm and RMSNorm over the last axis, one row at a time: two passes in double
// (mean, then the centred sum of squares, so a large mean does not cancel the variance),
// one rounding to the output type per element; rows in fixed chunks on the threads asked for.
#include "attn/norm.hpp"

#include "attn/error.hpp"
#include "attn/parallel.hpp"

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

/// One row of a LayerNorm: its mean and variance in double, each value rounded once.
template <class T>
void layer_norm_row(const T* xr, T* yr, std::size_t e, double eps, const T* wr, const T* br) {
    const double n = static_cast<double>(e);
    double sum = 0.0;
    for (std::size_t i = 0; i < e; ++i) {
        sum += static_cast<double>(xr[i]);
    }
    const double mean = sum / n;
    double sq = 0.0;
    for (std::size_t i = 0; i < e; ++i) {
        const double d = static_cast<double>(xr[i]) - mean;
        sq += d * d;
    }
    const double inv = 1.0 / std::sqrt(sq / n + eps);
    for (std::size_t i = 0; i < e; ++i) {
        double v = (static_cast<double>(xr[i]) - mean) * inv * static_cast<double>(wr[i]);
        if (br != nullptr) {
            v += static_cast<double>(br[i]);
        }
        yr[i] = static_cast<T>(v);
    }
}

/// One row of an RMSNorm.
template <class T> void rms_norm_row(const T* xr, T* yr, std::size_t e, double eps, const T* wr) {
    double sq = 0.0;
    for (std::size_t i = 0; i < e; ++i) {
        sq += static_cast<double>(xr[i]) * static_cast<double>(xr[i]);
    }
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(e) + eps);
    for (std::size_t i = 0; i < e; ++i) {
        yr[i] = static_cast<T>(static_cast<double>(xr[i]) * inv * static_cast<double>(wr[i]));
    }
}

/// The norm over groups of E / heads features (heads = 1: every row's E), rows in chunks on
/// `threads` threads.
template <class T>
xt::xtensor<T, 3> norm_impl(const xt::xtensor<T, 3>& x,
                            const xt::xtensor<T, 1>& w,
                            const xt::xtensor<T, 1>* b,
                            bool rms,
                            double eps,
                            const char* what,
                            std::size_t heads,
                            unsigned threads) {
    const std::size_t ws = group_stride(w, x.shape(2), heads, what, "weight");
    const std::size_t bs = b != nullptr ? group_stride(*b, x.shape(2), heads, what, "bias") : 0;
    check_eps(eps, what);
    const std::size_t e = x.shape(2) / heads; // one group's features
    xt::xtensor<T, 3> y = xt::xtensor<T, 3>::from_shape(x.shape());
    const std::size_t rows = x.shape(0) * x.shape(1) * heads;
    const T* in = x.data();
    T* out = y.data();
    detail::parallel_chunks(
        rows, detail::rows_per_chunk(e), threads, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r) {
                const T* wr = w.data() + (r % heads) * ws;
                if (rms) {
                    rms_norm_row(in + r * e, out + r * e, e, eps, wr);
                } else {
                    const T* br = b != nullptr ? b->data() + (r % heads) * bs : nullptr;
                    layer_norm_row(in + r * e, out + r * e, e, eps, wr, br);
                }
            }
        });
    return y;
}

template <class T>
xt::xtensor<T, 3> apply_norm_impl(const xt::xtensor<T, 3>& x,
                                  const BasicNorm<T>& n,
                                  std::size_t heads,
                                  unsigned threads) {
    const bool rms = n.kind == NormKind::rms_norm; // an RMSNorm ignores the bias
    const xt::xtensor<T, 1>* bias = !rms && n.bias ? &*n.bias : nullptr;
    return norm_impl(x, n.weight, bias, rms, n.eps, n.name, heads, threads);
}

} // namespace

Tensor3 layer_norm(
    const Tensor3& x, const Vector& weight, const Vector* bias, double eps, const char* what) {
    return norm_impl(x, weight, bias, false, eps, what, 1, 1);
}

BasicTensor3<double> layer_norm(const BasicTensor3<double>& x,
                                const BasicVector<double>& weight,
                                const BasicVector<double>* bias,
                                double eps,
                                const char* what) {
    return norm_impl(x, weight, bias, false, eps, what, 1, 1);
}

Tensor3 rms_norm(const Tensor3& x, const Vector& weight, double eps, const char* what) {
    return norm_impl<float>(x, weight, nullptr, true, eps, what, 1, 1);
}

BasicTensor3<double> rms_norm(const BasicTensor3<double>& x,
                              const BasicVector<double>& weight,
                              double eps,
                              const char* what) {
    return norm_impl<double>(x, weight, nullptr, true, eps, what, 1, 1);
}

Tensor3 apply_norm(const Tensor3& x, const Norm& n, unsigned threads) {
    return apply_norm_impl(x, n, 1, threads);
}

BasicTensor3<double>
apply_norm(const BasicTensor3<double>& x, const BasicNorm<double>& n, unsigned threads) {
    return apply_norm_impl(x, n, 1, threads);
}

Tensor3 apply_head_norm(const Tensor3& x, const Norm& n, std::size_t heads, unsigned threads) {
    return apply_norm_impl(x, n, heads, threads);
}

BasicTensor3<double> apply_head_norm(const BasicTensor3<double>& x,
                                     const BasicNorm<double>& n,
                                     std::size_t heads,
                                     unsigned threads) {
    return apply_norm_impl(x, n, heads, threads);
}

} // namespace attn

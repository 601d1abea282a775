// nn.Linear projections (one GEMM each) and the head split/merge reshapes, in float32
// and (for precision f64) float64.
#include "attn/projection.hpp"

#include "attn/error.hpp"
#include "blas.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

namespace attn {

std::size_t linear_features(std::size_t in,
                            const std::vector<std::size_t>* w_shape,
                            const std::size_t* b_size,
                            const char* w_name,
                            const char* b_name) {
    if (w_shape == nullptr) {
        if (b_size != nullptr && *b_size != in) {
            throw InputError::shape(b_name, {in}, {*b_size});
        }
        return in;
    }
    if ((*w_shape)[1] != in) {
        throw InputError::shape(w_name, {kAnyDim, in}, *w_shape);
    }
    const std::size_t out = (*w_shape)[0];
    if (b_size != nullptr && *b_size != out) {
        throw InputError("bias of " + std::string(w_name) + ": expected shape " +
                         shape_string({out}) + ", got " + shape_string({*b_size}));
    }
    return out;
}

std::size_t head_dim(std::size_t features, std::size_t num_heads, const char* what) {
    if (num_heads == 0 || features % num_heads != 0) {
        throw InputError(std::string(what) + ": feature size " + std::to_string(features) +
                         " is not divisible by " + std::to_string(num_heads) + " heads");
    }
    return features / num_heads;
}

namespace {

/// The rows of one GEMM. Fixed, whatever the thread count: every slab is the same GEMM on
/// 1 thread or 8, so results are bit-identical for any --threads (OpenBLAS picks its kernel
/// by the matrix's size, so slabs sized by the thread count would change the last bits).
constexpr std::size_t kSlab = 128;

/// y[r, j] += b[j] for every row r (b null: nothing).
template <class T> void add_bias(xt::xtensor<T, 3>& y, const xt::xtensor<T, 1>* b) {
    if (b == nullptr) {
        return;
    }
    const std::size_t out = y.shape()[2];
    T* row = y.data();
    for (std::size_t r = 0; r < y.shape()[0] * y.shape()[1]; ++r, row += out) {
        for (std::size_t j = 0; j < out; ++j) {
            row[j] += (*b)(j);
        }
    }
}

template <class T>
xt::xtensor<T, 3> linear_impl(const xt::xtensor<T, 3>& x,
                              const xt::xtensor<T, 2>& w,
                              const xt::xtensor<T, 1>* b,
                              const char* what,
                              unsigned threads) {
    const std::size_t n_b = x.shape()[0];
    const std::size_t len = x.shape()[1];
    const std::size_t in = x.shape()[2];
    const std::vector<std::size_t> w_shape = shape_of(w);
    const std::size_t b_size = b != nullptr ? b->shape()[0] : 0;
    const std::size_t out =
        linear_features(in, &w_shape, b != nullptr ? &b_size : nullptr, what, "");
    auto y = xt::xtensor<T, 3>::from_shape({n_b, len, out});
    // One single-threaded GEMM per slab of rows, the slabs shared by the threads (attn's
    // threads, not OpenBLAS's: its workers would still spin while the attention kernels run).
    const std::size_t rows = n_b * len;
    const std::size_t slabs = (rows + kSlab - 1) / kSlab;
    const unsigned n = detail::resolve_threads(threads, slabs);
    detail::blas_single_threaded();
    detail::parallel_for(slabs, n, [&](unsigned, std::size_t slab) {
        const std::size_t r0 = slab * kSlab;
        detail::gemm(std::min(kSlab, rows - r0),
                     out,
                     in,
                     T(1),
                     x.data() + r0 * in,
                     in,
                     w.data(),
                     in,
                     true,
                     T(0),
                     y.data() + r0 * out,
                     out);
    });
    add_bias(y, b);
    return y;
}

/// One copy of a [B·L] row range of the [B, L, H·Dh] side to or from the [B, H, L, Dh]
/// side, per head; `threads` take fixed blocks of rows (each row's copies are its own).
template <class Copy>
void per_row_heads(std::size_t rows, std::size_t row_values, unsigned threads, Copy copy) {
    detail::parallel_chunks(
        rows, detail::rows_per_chunk(row_values), threads, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r) {
                copy(r);
            }
        });
}

template <class T>
xt::xtensor<T, 4> split_heads_impl(const xt::xtensor<T, 3>& x,
                                   std::size_t num_heads,
                                   const char* what,
                                   unsigned threads) {
    const std::size_t n_b = x.shape()[0];
    const std::size_t len = x.shape()[1];
    const std::size_t e = x.shape()[2];
    const std::size_t dh = head_dim(e, num_heads, what);
    auto y = xt::xtensor<T, 4>::from_shape({n_b, num_heads, len, dh});
    per_row_heads(n_b * len, e, threads, [&](std::size_t r) {
        const std::size_t b = r / len;
        const std::size_t l = r % len;
        const T* src = x.data() + r * e;
        for (std::size_t h = 0; h < num_heads; ++h) {
            T* dst = y.data() + ((b * num_heads + h) * len + l) * dh;
            std::copy(src + h * dh, src + (h + 1) * dh, dst);
        }
    });
    return y;
}

template <class T>
xt::xtensor<T, 3> merge_heads_impl(const xt::xtensor<T, 4>& y, unsigned threads) {
    const std::size_t n_b = y.shape()[0];
    const std::size_t n_h = y.shape()[1];
    const std::size_t len = y.shape()[2];
    const std::size_t dh = y.shape()[3];
    auto x = xt::xtensor<T, 3>::from_shape({n_b, len, n_h * dh});
    per_row_heads(n_b * len, n_h * dh, threads, [&](std::size_t r) {
        const std::size_t b = r / len;
        const std::size_t l = r % len;
        for (std::size_t h = 0; h < n_h; ++h) {
            const T* src = y.data() + ((b * n_h + h) * len + l) * dh;
            std::copy(src, src + dh, x.data() + r * n_h * dh + h * dh);
        }
    });
    return x;
}

} // namespace

Tensor3
linear(const Tensor3& x, const Matrix& w, const Vector* b, const char* what, unsigned threads) {
    return linear_impl(x, w, b, what, threads);
}

Tensor3 linear(const Tensor3& x,
               const StoredWeight& w,
               const Vector* b,
               const char* what,
               unsigned threads,
               Simd simd) {
    const std::size_t in = x.shape()[2];
    const std::vector<std::size_t> w_shape = {w.rows, w.cols};
    const std::size_t b_size = b != nullptr ? b->shape()[0] : 0;
    const std::size_t out =
        linear_features(in, &w_shape, b != nullptr ? &b_size : nullptr, what, "");
    auto y = Tensor3::from_shape({x.shape()[0], x.shape()[1], out});
    const std::size_t rows = x.shape()[0] * x.shape()[1];
    w.multiply({x.data(), x.size()}, rows, {y.data(), y.size()}, threads, simd);
    add_bias(y, b);
    return y;
}

template <class T>
BasicTensor3<T> linear_of(const BasicTensor3<T>& x,
                          const BasicMatrix<T>& w,
                          const std::optional<StoredWeight>& stored,
                          const BasicVector<T>* b,
                          const char* what,
                          unsigned threads,
                          Simd simd) {
    if constexpr (std::is_same_v<T, float>) {
        if (stored) {
            return linear(x, *stored, b, what, threads, simd);
        }
    } else {
        ATTN_ASSERT(!stored); // a float64 run holds no stored weight
    }
    return linear(x, w, b, what, threads);
}

template Tensor3 linear_of<float>(const Tensor3&,
                                  const Matrix&,
                                  const std::optional<StoredWeight>&,
                                  const Vector*,
                                  const char*,
                                  unsigned,
                                  Simd);
template BasicTensor3<double> linear_of<double>(const BasicTensor3<double>&,
                                                const BasicMatrix<double>&,
                                                const std::optional<StoredWeight>&,
                                                const BasicVector<double>*,
                                                const char*,
                                                unsigned,
                                                Simd);

BasicTensor3<double> linear(const BasicTensor3<double>& x,
                            const BasicMatrix<double>& w,
                            const BasicVector<double>* b,
                            const char* what,
                            unsigned threads) {
    return linear_impl(x, w, b, what, threads);
}

Tensor split_heads(const Tensor3& x, std::size_t num_heads, const char* what, unsigned threads) {
    return split_heads_impl(x, num_heads, what, threads);
}

BasicTensor<double> split_heads(const BasicTensor3<double>& x,
                                std::size_t num_heads,
                                const char* what,
                                unsigned threads) {
    return split_heads_impl(x, num_heads, what, threads);
}

Tensor3 merge_heads(const Tensor& y, unsigned threads) {
    return merge_heads_impl(y, threads);
}

BasicTensor3<double> merge_heads(const BasicTensor<double>& y, unsigned threads) {
    return merge_heads_impl(y, threads);
}

} // namespace attn

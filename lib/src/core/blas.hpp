// A thin, checked wrapper over cblas_sgemm/cblas_dgemm for the core's row-major matrices: one
// template over float and double. Private to the core: it keeps cblas.h out of the public headers
// and handles the zero-size cases BLAS rejects (a leading dimension of 0 makes OpenBLAS print an
// xerbla message).
#pragma once

#include "attn/blas_threads.hpp"

#include <algorithm>
#include <cblas.h>
#include <cstddef>
#include <type_traits>

namespace attn::detail {

/// n as BLAS's int; throws InputError past INT_MAX.
blasint to_blas(std::size_t n);

/// C[m, n] = alpha · A[m, k] · op(B) + beta · C, all row-major, T float or double.
/// op(B) = B[k, n] (ldb = row stride of B) or, with b_transposed, Bᵀ where B is [n, k].
/// m or n of 0 does nothing; k of 0 sets C = beta·C (an empty inner product is 0).
template <class T>
void gemm(std::size_t m,
          std::size_t n,
          std::size_t k,
          T alpha,
          const T* a,
          std::size_t lda,
          const T* b,
          std::size_t ldb,
          bool b_transposed,
          T beta,
          T* c,
          std::size_t ldc) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    if (m == 0 || n == 0) {
        return;
    }
    if (k == 0) {
        for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
            }
        }
        return;
    }
    // The two cblas entry points differ only in T: pick one, call it once.
    constexpr auto cblas_gemm = [] {
        if constexpr (std::is_same_v<T, float>) {
            return &cblas_sgemm;
        } else {
            return &cblas_dgemm;
        }
    }();
    const auto ld = [](std::size_t x) { return to_blas(std::max<std::size_t>(x, 1)); };
    cblas_gemm(CblasRowMajor,
               CblasNoTrans,
               b_transposed ? CblasTrans : CblasNoTrans,
               to_blas(m),
               to_blas(n),
               to_blas(k),
               alpha,
               a,
               ld(lda),
               b,
               ld(ldb),
               beta,
               c,
               ld(ldc));
}

using attn::blas_single_threaded; // attn/blas_threads.hpp

} // namespace attn::detail

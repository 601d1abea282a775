// cblas_sgemm and cblas_dgemm behind a size_t interface, with the degenerate sizes handled
// here.
#include "blas.hpp"

#include "attn/error.hpp"

#include <algorithm>
#include <cblas.h>
#include <climits>
#include <mutex>
#include <type_traits>

namespace attn::detail {

namespace {
/// C = beta·C, for k == 0 (an empty inner product is 0).
template <class T> void scale_only(std::size_t m, std::size_t n, T beta, T* c, std::size_t ldc) {
    for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
        }
    }
}

blasint to_blas(std::size_t n) {
    if (n > static_cast<std::size_t>(INT_MAX)) {
        throw InputError("matrix dimension " + std::to_string(n) + " exceeds BLAS's int range");
    }
    return static_cast<blasint>(n);
}
} // namespace

namespace {

/// The one call into cblas: C[m, n] = alpha · op(A) · op(B) + beta · C, row-major, with the
/// degenerate sizes (m or n of 0: nothing; k of 0: C = beta·C) handled here, since BLAS
/// rejects a leading dimension of 0.
template <class T>
void gemm(CBLAS_TRANSPOSE trans_a,
          CBLAS_TRANSPOSE trans_b,
          std::size_t m,
          std::size_t n,
          std::size_t k,
          T alpha,
          const T* a,
          std::size_t lda,
          const T* b,
          std::size_t ldb,
          T beta,
          T* c,
          std::size_t ldc) {
    if (m == 0 || n == 0) {
        return;
    }
    if (k == 0) {
        scale_only(m, n, beta, c, ldc);
        return;
    }
    const auto ld = [](std::size_t x) { return to_blas(std::max<std::size_t>(x, 1)); };
    if constexpr (std::is_same_v<T, float>) {
        cblas_sgemm(CblasRowMajor,
                    trans_a,
                    trans_b,
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
    } else {
        cblas_dgemm(CblasRowMajor,
                    trans_a,
                    trans_b,
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
}

} // namespace

void sgemm(std::size_t m,
           std::size_t n,
           std::size_t k,
           float alpha,
           const float* a,
           std::size_t lda,
           const float* b,
           std::size_t ldb,
           bool b_transposed,
           float beta,
           float* c,
           std::size_t ldc) {
    gemm(CblasNoTrans,
         b_transposed ? CblasTrans : CblasNoTrans,
         m,
         n,
         k,
         alpha,
         a,
         lda,
         b,
         ldb,
         beta,
         c,
         ldc);
}

void sgemm_at(std::size_t m,
              std::size_t n,
              std::size_t k,
              float alpha,
              const float* a,
              std::size_t lda,
              const float* b,
              std::size_t ldb,
              float beta,
              float* c,
              std::size_t ldc) {
    gemm(CblasTrans, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dgemm(std::size_t m,
           std::size_t n,
           std::size_t k,
           double alpha,
           const double* a,
           std::size_t lda,
           const double* b,
           std::size_t ldb,
           bool b_transposed,
           double beta,
           double* c,
           std::size_t ldc) {
    gemm(CblasNoTrans,
         b_transposed ? CblasTrans : CblasNoTrans,
         m,
         n,
         k,
         alpha,
         a,
         lda,
         b,
         ldb,
         beta,
         c,
         ldc);
}

void blas_single_threaded() {
    static std::once_flag once;
    std::call_once(once, [] { openblas_set_num_threads(1); });
}

} // namespace attn::detail

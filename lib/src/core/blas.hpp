// A thin, checked wrapper over cblas_sgemm (and cblas_dgemm) for the core's row-major matrices.
// Private to the core: it keeps cblas.h out of the public headers and handles the zero-size cases
// BLAS rejects (a leading dimension of 0 makes OpenBLAS print an xerbla message).
#pragma once

#include <cstddef>

namespace attn::detail {

/// C[m, n] = alpha · A[m, k] · op(B) + beta · C, all row-major.
/// op(B) = B[k, n] (ldb = row stride of B) or, with b_transposed, Bᵀ where B is [n, k].
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
           std::size_t ldc);

/// C[m, n] = alpha · Aᵀ · B + beta · C, where A is stored row-major as [k, m] (row stride
/// lda) and B as [k, n] (row stride ldb).
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
              std::size_t ldc);

/// The float64 sgemm: C[m, n] = alpha · A[m, k] · op(B) + beta · C, all row-major.
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
           std::size_t ldc);

/// Makes BLAS single-threaded (we parallelise above it, one thread per output row).
void blas_single_threaded();

} // namespace attn::detail

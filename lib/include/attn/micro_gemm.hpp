// The attention kernels' register-blocked micro-GEMM (Highway, one table per SIMD target),
// for the layers above that multiply float32 panels of their own: the model's products on
// stored weight types feed it dequantized panels of W. No BLAS, no threads, no packing:
// the caller sizes the panels for the caches.
#pragma once

#include "attn/attention.hpp"

#include <cstddef>

namespace attn {

/// C[m, n] = A[m, k] · B[k, n], or C += A · B with `accumulate`; A, B and C row-major with
/// row strides lda, ldb and ldc (floats), on SIMD target `simd` (Simd::best: the best this
/// CPU runs). Each element of C is one chain of multiply-adds along k in order (from 0, or
/// from C), so C depends on the target alone. Throws InputError when `simd` is not compiled
/// in or this CPU cannot run it.
void micro_gemm(Simd simd,
                std::size_t m,
                std::size_t n,
                std::size_t k,
                const float* a,
                std::size_t lda,
                const float* b,
                std::size_t ldb,
                float* c,
                std::size_t ldc,
                bool accumulate);

} // namespace attn

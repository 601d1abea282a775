// micro_gemm: the kernel table's micro-GEMM (kernel_gemm-inl.h) behind a plain signature
// for the layers above; no logic of its own.
#include "attn/micro_gemm.hpp"

#include "kernel_ops.hpp"

namespace attn {

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
                bool accumulate) {
    detail::kernel_ops(simd).gemm({.m = m,
                                   .n = n,
                                   .k = k,
                                   .a = a,
                                   .a_row = lda,
                                   .a_col = 1,
                                   .b = b,
                                   .ldb = ldb,
                                   .c = c,
                                   .ldc = ldc,
                                   .accumulate = accumulate});
}

} // namespace attn

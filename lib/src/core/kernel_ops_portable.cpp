// The portable kernel operations: the micro-GEMM is a BLAS sgemm on the block (so this is
// also the "BLAS micro-GEMMs" variant the benchmarks compare with), the softmax steps are
// plain loops over std::exp. Used where AVX-512 is missing and when spec.simd asks for it.
#include "blas.hpp"
#include "kernel_ops.hpp"

#include <cmath>
#include <limits>

namespace attn::detail {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void gemm_portable(std::size_t m,
                   std::size_t n,
                   std::size_t k,
                   const float* a,
                   std::size_t a_row,
                   std::size_t a_col,
                   const float* b,
                   std::size_t ldb,
                   float* c,
                   std::size_t ldc,
                   bool accumulate,
                   const float* row_scale) {
    if (m == 0 || n == 0) {
        return;
    }
    if (accumulate && row_scale != nullptr) {
        for (std::size_t r = 0; r < m; ++r) {
            for (std::size_t j = 0; j < n; ++j) {
                c[r * ldc + j] *= row_scale[r];
            }
        }
    }
    const float beta = accumulate ? 1.0f : 0.0f;
    if (a_col == 1) {
        // A is row-major [m, k] with row stride a_row.
        sgemm(m, n, k, 1.0f, a, a_row, b, ldb, false, beta, c, ldc);
    } else {
        // a_row == 1: A is stored transposed, [k, m] with row stride a_col.
        sgemm_at(m, n, k, 1.0f, a, a_col, b, ldb, beta, c, ldc);
    }
}

/// The portable table has no prefetch: the hint is dropped.
void gemm_prefetch_portable(std::size_t m,
                            std::size_t n,
                            std::size_t k,
                            const float* a,
                            std::size_t a_row,
                            std::size_t a_col,
                            const float* b,
                            std::size_t ldb,
                            float* c,
                            std::size_t ldc,
                            bool accumulate,
                            const float* row_scale,
                            const void* /*prefetch*/,
                            std::size_t /*prefetch_bytes*/) {
    gemm_portable(m, n, k, a, a_row, a_col, b, ldb, c, ldc, accumulate, row_scale);
}

bool online_softmax_portable(float* st, std::size_t kb, float* m, float* l, float* alpha) {
    bool any_grew = false;
    for (std::size_t i = 0; i < kScoreColumns; ++i) {
        float bmax = kNegInf;
        for (std::size_t j = 0; j < kb; ++j) {
            const float x = st[j * kScoreStride + i];
            if (x > bmax) { // NaN never compares greater: it reaches the output via exp
                bmax = x;
            }
        }
        const float m_new = bmax > m[i] ? bmax : m[i];
        // Rescale only when the max grew; (-inf) - (-inf) never happens.
        const float a = m_new > m[i] ? std::exp(m[i] - m_new) : 1.0f;
        any_grew = any_grew || a != 1.0f;
        // A column that has seen only masked keys subtracts 0: exp(-inf) = 0 exactly.
        const float m_safe = m_new == kNegInf ? 0.0f : m_new;
        float sum = 0.0f;
        for (std::size_t j = 0; j < kb; ++j) {
            float& x = st[j * kScoreStride + i];
            x = std::exp(x - m_safe);
            sum += x;
        }
        m[i] = m_new;
        l[i] = l[i] * a + sum;
        alpha[i] = a;
    }
    return any_grew;
}

bool softmax_row_portable(float* s,
                          std::size_t n,
                          float scale,
                          const float* bias,
                          const std::uint8_t* mask,
                          const std::uint8_t* pad) {
    // pass 1: scale, bias, masks (a blocked key is exactly -inf, NaN included); row max.
    float row_max = kNegInf;
    bool any_visible = false;
    for (std::size_t j = 0; j < n; ++j) {
        float x = s[j] * scale;
        if (bias != nullptr) {
            x += bias[j];
        }
        if ((mask != nullptr && mask[j] == 0) || (pad != nullptr && pad[j] == 0)) {
            x = kNegInf;
        }
        s[j] = x;
        any_visible = any_visible || x != kNegInf;
        if (x > row_max) {
            row_max = x;
        }
    }
    if (!any_visible) {
        return false;
    }
    if (row_max == kNegInf) {
        row_max = 0.0f; // only NaN scores are visible: they stay NaN
    }
    // pass 2: exp(x - max) (exactly 0 for -inf), summed in double over Lk terms.
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        s[j] = std::exp(s[j] - row_max);
        sum += static_cast<double>(s[j]);
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (std::size_t j = 0; j < n; ++j) {
        s[j] *= inv;
    }
    return true;
}

} // namespace

const KernelOps& kernel_ops_portable() {
    static const KernelOps ops{
        .gemm = &gemm_portable,
        .gemm_prefetch = &gemm_prefetch_portable,
        .online_softmax = &online_softmax_portable,
        .softmax_row = &softmax_row_portable,
    };
    return ops;
}

} // namespace attn::detail

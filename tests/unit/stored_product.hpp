// What the stored-type product's integer-path tests (q8_matmul_test.cpp, q8k_matmul_test.cpp)
// share: the shape of x [n, k] · W [m, k]ᵀ, the product under test, and the float64 sums
// it is checked against, given x rounded by the test's own transcription of ggml's rule.
#pragma once

#include "attn/model/matmul.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn::testing {

struct Shape3 {
    std::size_t n; // rows of x
    std::size_t m; // rows of W
    std::size_t k;
};

/// Per (i, j), row-major [n, m], with x̂ = `xq` (x rounded) and e = `err` (each element's
/// bound on |x − x̂|).
struct DotSums {
    std::vector<double> rounded; // Σ w · x̂
    std::vector<double> abs;     // Σ |w · x̂|
    std::vector<double> exact;   // Σ w · x
    std::vector<double> moved;   // Σ |w| · e
};

inline DotSums dot_sums(const std::vector<float>& x,
                        const std::vector<double>& xq,
                        const std::vector<double>& err,
                        const std::vector<float>& w,
                        const Shape3& s) {
    DotSums r;
    for (std::vector<double>* v : {&r.rounded, &r.abs, &r.exact, &r.moved}) {
        v->assign(s.n * s.m, 0.0);
    }
    for (std::size_t i = 0; i < s.n; ++i) {
        for (std::size_t j = 0; j < s.m; ++j) {
            const std::size_t e = i * s.m + j;
            for (std::size_t p = 0; p < s.k; ++p) {
                const auto wv = static_cast<double>(w[j * s.k + p]);
                r.rounded[e] += wv * xq[i * s.k + p];
                r.abs[e] += std::fabs(wv * xq[i * s.k + p]);
                r.exact[e] += wv * static_cast<double>(x[i * s.k + p]);
                r.moved[e] += std::fabs(wv) * err[i * s.k + p];
            }
        }
    }
    return r;
}

/// stored_matmul of x by the stored W (`bytes` of ggml type `type`), into a NaN-filled y.
inline std::vector<float> stored_product(const std::vector<float>& x,
                                         const Shape3& s,
                                         std::uint32_t type,
                                         const std::vector<std::uint8_t>& bytes,
                                         model::MatmulOptions options) {
    std::vector<float> y(s.n * s.m, kNaN);
    model::stored_matmul(x, s.n, {type, s.m, s.k, bytes, {}}, y, options);
    return y;
}

} // namespace attn::testing

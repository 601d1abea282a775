// Attention rollout's step (attn/rollout.hpp): heads fused in head order, the identity's
// half added, rows normalized, then Â · R with dgemm in blocks of 64 rows written back over
// Â, so the step holds R and Â and one block. Not here: which layers roll out (problem).
#include "attn/rollout.hpp"

#include "attn/error.hpp"
#include "attn/interruption.hpp"
#include "blas.hpp"

#include <algorithm>
#include <string>

namespace attn {

RolloutFusion rollout_fusion(std::string_view name) {
    if (name == "mean") {
        return RolloutFusion::mean;
    }
    if (name == "max") {
        return RolloutFusion::max;
    }
    if (name == "min") {
        return RolloutFusion::min;
    }
    throw InputError(option_name("rollout_fusion") + ": expected mean, max or min, got '" +
                     std::string(name) + "'");
}

namespace {

constexpr std::size_t kRowBlock = 64;

/// Â of one batch row into a [L, L]: the heads fused, 0.5·Â + 0.5·I, rows normalized.
template <class T>
void fused_map(const T* w, std::size_t heads, std::size_t l, RolloutFusion f, double* a) {
    const std::size_t plane = l * l;
    for (std::size_t x = 0; x < plane; ++x) {
        double v = static_cast<double>(w[x]);
        for (std::size_t h = 1; h < heads; ++h) {
            const auto y = static_cast<double>(w[h * plane + x]);
            v = f == RolloutFusion::mean  ? v + y
                : f == RolloutFusion::max ? std::max(v, y)
                                          : std::min(v, y);
        }
        a[x] = 0.5 * (f == RolloutFusion::mean ? v / static_cast<double>(heads) : v);
    }
    for (std::size_t i = 0; i < l; ++i) {
        double* row = a + i * l;
        row[i] += 0.5;
        double sum = 0.0;
        for (std::size_t j = 0; j < l; ++j) {
            sum += row[j];
        }
        const double inv = sum == 0.0 ? 0.0 : 1.0 / sum;
        for (std::size_t j = 0; j < l; ++j) {
            row[j] *= inv;
        }
    }
}

} // namespace

template <class T>
void rollout_step(const T* weights,
                  std::size_t heads,
                  std::size_t length,
                  RolloutFusion fusion,
                  bool first,
                  double* r,
                  std::vector<double>& work) {
    const std::size_t l = length;
    if (first) {
        fused_map(weights, heads, l, fusion, r);
        return;
    }
    work.resize(l * l + kRowBlock * l);
    double* a = work.data();
    double* block = a + l * l;
    fused_map(weights, heads, l, fusion, a);
    // Rows i0 .. i0 + m of Â · R need rows i0 .. i0 + m of Â only: each block is written
    // back over the rows of Â it used, then Â (now the product) becomes R.
    for (std::size_t i0 = 0; i0 < l; i0 += kRowBlock) {
        detail::interruption_point();
        const std::size_t m = std::min(kRowBlock, l - i0);
        detail::gemm<double>(m, l, l, 1.0, a + i0 * l, l, r, l, false, 0.0, block, l);
        std::copy(block, block + m * l, a + i0 * l);
    }
    std::copy(a, a + l * l, r);
}

template void rollout_step<float>(
    const float*, std::size_t, std::size_t, RolloutFusion, bool, double*, std::vector<double>&);
template void rollout_step<double>(
    const double*, std::size_t, std::size_t, RolloutFusion, bool, double*, std::vector<double>&);

} // namespace attn

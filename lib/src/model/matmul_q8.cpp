// The integer path's driver: the activations rounded to Q8_0 once per call (rows shared
// among the threads), then W cut into panels of 64 rows (one task each, a fixed partition
// of y's columns, as the float32 path's) whose products the SIMD target's dot_q8 computes
// (quant_dot-inl.h). The weights are read as stored, never converted.
#include "model/matmul_q8.hpp"

#include "attn/half.hpp"
#include "attn/parallel.hpp"
#include "model/matmul_ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace attn::model::detail {
namespace {

constexpr std::size_t kBlock = 32;
constexpr std::size_t kPanelRows = 64;

/// One block by ggml's quantize_row_q8_0_ref.
void quantize_block(const float* x, std::int8_t* q, float& d_out, std::int32_t& sum) {
    float amax = 0.0F;
    bool finite = true;
    for (std::size_t j = 0; j < kBlock; ++j) {
        finite = finite && std::isfinite(x[j]);
        amax = std::max(amax, std::fabs(x[j]));
    }
    sum = 0;
    if (!finite) {
        std::fill(q, q + kBlock, std::int8_t{0});
        d_out = std::nanf("");
        return;
    }
    const float d = amax / 127.0F;
    const float id = d != 0.0F ? 1.0F / d : 0.0F;
    d_out = half_to_float(double_to_half(static_cast<double>(d)));
    for (std::size_t j = 0; j < kBlock; ++j) {
        // |x · id| <= 127 up to a rounding: the clamp never changes a finite result.
        const float v = std::clamp(std::round(x[j] * id), -127.0F, 127.0F);
        q[j] = static_cast<std::int8_t>(v);
        sum += q[j];
    }
}

} // namespace

Q8Rows
quantize_q8_0_rows(std::span<const float> x, std::size_t rows, std::size_t k, unsigned threads) {
    Q8Rows out;
    out.blocks = k / kBlock;
    out.q.resize(rows * k);
    out.d.resize(rows * out.blocks);
    out.sum.resize(rows * out.blocks);
    attn::detail::parallel_chunks(
        rows, attn::detail::rows_per_chunk(k), threads, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r) {
                for (std::size_t b = 0; b < out.blocks; ++b) {
                    const std::size_t e = r * k + b * kBlock;
                    const std::size_t s = r * out.blocks + b;
                    quantize_block(x.data() + e, out.q.data() + e, out.d[s], out.sum[s]);
                }
            }
        });
    return out;
}

bool q8_supports(std::uint32_t type) {
    return type == 8 || type == 2; // Q8_0, Q4_0
}

void q8_matmul(std::span<const float> x,
               std::size_t rows_x,
               const StoredMatrix& w,
               std::size_t row_bytes,
               std::span<float> y,
               const MatmulOptions& options) {
    const MatmulOps& ops = matmul_ops(options.simd);
    const std::size_t m = w.rows;
    const std::size_t k = w.cols;
    const std::size_t panels = (m + kPanelRows - 1) / kPanelRows;
    const unsigned threads = attn::detail::resolve_threads(options.threads, panels);
    const Q8Rows a = quantize_q8_0_rows(x, rows_x, k, threads);
    attn::detail::parallel_for(panels, threads, [&](unsigned, std::size_t task) {
        const std::size_t m0 = task * kPanelRows;
        const std::size_t mc = std::min(kPanelRows, m - m0);
        std::array<const std::uint8_t*, kPanelRows> w_rows{};
        for (std::size_t j = 0; j < mc; ++j) {
            const std::size_t row = w.row_of.empty() ? m0 + j : w.row_of[m0 + j];
            w_rows[j] = w.bytes.data() + row * row_bytes;
        }
        ops.dot_q8({.type = w.type,
                    .w_rows = w_rows.data(),
                    .m = mc,
                    .qx = a.q.data(),
                    .dx = a.d.data(),
                    .sx = a.sum.data(),
                    .n = rows_x,
                    .blocks = a.blocks,
                    .y = y.data() + m0,
                    .ldy = m});
    });
}

} // namespace attn::model::detail

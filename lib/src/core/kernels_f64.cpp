// The float64 kernel (`precision: f64`): the reference-grade path for users checking their
// own kernels. Per (batch, head, block of 64 queries): scores against every key with one
// dgemm, the scalar feature row of kernel_common.hpp in double (every feature and
// diagnostic), then P·V with one dgemm. Plain and simple on purpose: no SIMD, no key-block
// skipping beyond the causal limit, no online softmax. It never holds an Lq×Lk matrix
// unless weights are asked for.
//
// Legend: B batch, H query heads, Hkv key/value heads, Lq queries, Lk keys,
//         D query/key features, Dv value features, QB query rows per task.
#include "attn/kernels.hpp"
#include "blas.hpp"
#include "kernel_common.hpp"
#include "parallel.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace attn {

namespace {
using detail::kQueryBlock;
} // namespace

AttentionResult64 attend_materialized(const Tensor64& q,
                                      const Tensor64& k,
                                      const Tensor64& v,
                                      const AttentionSpec64& spec) {
    const std::size_t n_b = q.shape()[0];
    const std::size_t n_h = q.shape()[1];
    const std::size_t lq = q.shape()[2];
    const std::size_t d = q.shape()[3];
    const std::size_t n_bk = k.shape()[0];
    const std::size_t n_hkv = k.shape()[1];
    const std::size_t lk = k.shape()[2];
    const std::size_t dv = v.shape()[3];
    const std::size_t group = n_h / n_hkv; // query heads per key/value head
    const KeyRule rule(spec, lq, lk);
    const double scale = detail::score_scale(spec, d);

    AttentionResult64 result;
    result.output = Tensor64::from_shape({n_b, n_h, lq, dv});
    if (spec.want_weights) {
        result.weights = Tensor64::from_shape({n_b, n_h, lq, lk});
    }
    RowDiagnostics64& diag_out = result.diagnostics;
    detail::allocate_diagnostics(diag_out, spec, n_b, n_h, lq);

    const std::size_t blocks = (lq + kQueryBlock - 1) / kQueryBlock;
    const std::size_t tasks = n_b * n_h * blocks;
    const unsigned threads = detail::resolve_threads(spec.threads, tasks);
    detail::blas_single_threaded();
    std::vector<std::vector<double>> scratch(threads);
    std::vector<std::int64_t> masked_rows(threads, 0);

    detail::parallel_for(tasks, threads, [&](unsigned worker, std::size_t task) {
        const detail::QueryBlockTask qblock = detail::query_block_task(task, blocks, n_h, lq);
        const auto [b, h, i0, rows] = qblock;
        const std::size_t first_row = (b * n_h + h) * lq + i0; // row (b, h, i0) of [B, H, Lq, *]
        const std::size_t bk = n_bk == 1 ? 0 : b;
        const std::size_t hk = h / group;

        const double* q_blk = q.data() + first_row * d;
        const double* k_head = k.data() + (bk * n_hkv + hk) * lk * d;
        const double* v_head = v.data() + (bk * n_hkv + hk) * lk * dv;
        double* o_blk = result.output.data() + first_row * dv;

        // [rows, Lk] scores, then weights: rows of result.weights or the worker's scratch.
        double* p = detail::block_weights(result.weights, scratch[worker], first_row, lk);

        // Keys past the last row's causal limit are invisible to the whole block: left out
        // of both GEMMs (as in the float kernels, so inf/NaN there cannot leak in as 0·inf).
        const std::size_t n_vis = rule.causal_end(i0 + rows - 1);

        // pass 1: unscaled scores = Q_blk · Kᵀ (the row pass scales, as the float kernels do).
        detail::dgemm(rows, n_vis, d, 1.0, q_blk, d, k_head, d, true, 0.0, p, lk);

        // pass 2: per row, features, masks and the softmax, all in the scalar feature row.
        std::array<bool, kQueryBlock> empty{};
        const std::int64_t empty_rows = detail::weights_block(
            p, empty, qblock, first_row, lq, lk, scale, spec, diag_out, true, nullptr);
        masked_rows[worker] += empty_rows;

        // pass 3: output = P · V, then exact zeros for rows that saw no key.
        detail::dgemm(rows, dv, n_vis, 1.0, p, lk, v_head, dv, false, 0.0, o_blk, dv);
        if (empty_rows > 0) {
            detail::zero_empty_rows(o_blk, empty, rows, dv);
        }
    });

    for (const auto n : masked_rows) {
        result.rows_fully_masked += n;
    }
    return result;
}

} // namespace attn

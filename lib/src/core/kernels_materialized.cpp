// The materialized kernel: for each (batch, head, block of queries) it computes the
// block's scores against the visible keys with one blocked GEMM, applies bias and masks
// and takes a max-subtracted, vectorised softmax per row, and multiplies by V with a
// second blocked GEMM. Weights are written straight into the result when asked for;
// otherwise into a per-thread block x Lk scratch buffer, so memory stays linear in the
// sequence length. (attend() uses attend_streaming when weights are not wanted.)
//
// Legend: B batch, H query heads, Hkv key/value heads, Lq queries, Lk keys,
//         D query/key features, Dv value features, QB query rows per task.
#include "attn/kernels.hpp"
#include "blas.hpp"
#include "kernel_common.hpp"
#include "kernel_ops.hpp"
#include "parallel.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace attn {

namespace {
using detail::kQueryBlock;
} // namespace

AttentionResult
attend_materialized(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec) {
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
    const float scale = detail::score_scale(spec, d);
    const detail::KernelOps& ops = detail::kernel_ops(spec.simd);

    AttentionResult result;
    result.output = Tensor::from_shape({n_b, n_h, lq, dv});
    if (spec.want_weights) {
        result.weights = Tensor::from_shape({n_b, n_h, lq, lk});
    }
    const bool features = detail::has_row_features(spec);
    RowDiagnostics& diag_out = result.diagnostics;
    detail::allocate_diagnostics(diag_out, spec, n_b, n_h, lq);

    const std::size_t blocks = (lq + kQueryBlock - 1) / kQueryBlock;
    const std::size_t tasks = n_b * n_h * blocks;
    const unsigned threads = detail::resolve_threads(spec.threads, tasks);
    detail::blas_single_threaded();

    // Kᵀ of every K/V head, [Bk, Hkv, D, Lk]: the score GEMM then reads contiguous
    // 64-key panels. Packed once (the size of K), shared by every task of the head.
    std::vector<float> kt(n_bk * n_hkv * d * lk);
    detail::parallel_for(n_bk * n_hkv, threads, [&](unsigned, std::size_t head) {
        const float* src = k.data() + head * lk * d;
        float* dst = kt.data() + head * d * lk;
        for (std::size_t j = 0; j < lk; ++j) {
            for (std::size_t x = 0; x < d; ++x) {
                dst[x * lk + j] = src[j * d + x];
            }
        }
    });

    std::vector<std::vector<float>> scratch(threads);
    std::vector<std::int64_t> masked_rows(threads, 0);

    detail::parallel_for(tasks, threads, [&](unsigned worker, std::size_t task) {
        const detail::QueryBlockTask qblock = detail::query_block_task(task, blocks, n_h, lq);
        const auto [b, h, i0, rows] = qblock;
        const std::size_t first_row = (b * n_h + h) * lq + i0; // row (b, h, i0) of [B, H, Lq, *]
        const std::size_t bk = n_bk == 1 ? 0 : b;
        const std::size_t hk = h / group;

        const float* q_blk = q.data() + first_row * d;
        const float* kt_head = kt.data() + (bk * n_hkv + hk) * d * lk;
        const float* v_head = v.data() + (bk * n_hkv + hk) * lk * dv;
        float* o_blk = result.output.data() + first_row * dv;

        // [rows, Lk] scores, then weights: rows of result.weights or the worker's scratch.
        float* p = detail::block_weights(result.weights, scratch[worker], first_row, lk);

        // Keys past the last row's causal limit are invisible to the whole block:
        // skip them in both GEMMs (causal costs about half).
        const std::size_t n_vis = rule.causal_end(i0 + rows - 1);

        // pass 1: scores = Q_blk · Kᵀ[:, 0:n_vis] (unscaled; the softmax scales).
        ops.gemm(rows, n_vis, d, q_blk, d, 1, kt_head, lk, p, lk, false, nullptr);

        // pass 2: per row, scale, bias, masks and a max-subtracted softmax (vectorised
        // unless a feature needs the scalar row); keys past the row's causal limit get
        // weight exactly 0.
        std::array<bool, kQueryBlock> empty{};
        const std::int64_t empty_rows = detail::weights_block(
            p,
            empty,
            qblock,
            first_row,
            lq,
            lk,
            scale,
            spec,
            diag_out,
            features,
            [&](float* srow,
                std::size_t limit,
                const float* bias_row,
                const std::uint8_t* mask_row,
                const std::uint8_t* pad_row) {
                return ops.softmax_row(srow, limit, scale, bias_row, mask_row, pad_row);
            });
        masked_rows[worker] += empty_rows;

        // pass 3: output = P[:, 0:n_vis] · V[0:n_vis]
        ops.gemm(rows, dv, n_vis, p, lk, 1, v_head, dv, o_blk, dv, false, nullptr);
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

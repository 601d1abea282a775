// The materialized kernel, one driver over the precision T: for each (batch, head, block
// of queries) it computes the block's scores against the visible keys with one GEMM,
// turns each row into weights (bias, masks, features and a max-subtracted softmax), and
// multiplies by V with a second GEMM. Weights are written straight into the result when
// asked for; otherwise into a per-thread block x Lk scratch buffer, so memory stays linear
// in the sequence length. (attend() uses attend_streaming for float32 without weights.)
//
// What differs between the precisions is MaterializedOps<T>:
//   float   KernelOps' blocked micro-GEMM over a packed Kᵀ, and the vectorised
//           softmax_row for rows no feature needs the scalar row for;
//   double  dgemm straight on K and V, and the scalar feature row for every row
//           (the reference-grade `precision: f64` path: no SIMD of its own).
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
#include <type_traits>
#include <vector>

namespace attn {

namespace {

using detail::kQueryBlock;

template <class T> struct MaterializedOps;

/// float: the KernelOps table spec.simd picks, over Kᵀ of every K/V head packed once
/// ([Bk, Hkv, D, Lk], the size of K) so the score GEMM reads contiguous 64-key panels.
template <> struct MaterializedOps<float> {
    const detail::KernelOps& ops;
    std::size_t d;
    std::size_t lk;
    std::vector<float> kt;

    MaterializedOps(const Tensor& k, const AttentionSpec& spec, unsigned threads)
        : ops(detail::kernel_ops(spec.simd)), d(k.shape()[3]), lk(k.shape()[2]),
          kt(k.shape()[0] * k.shape()[1] * d * lk) {
        detail::parallel_for(k.shape()[0] * k.shape()[1], threads, [&](unsigned, std::size_t head) {
            const float* src = k.data() + head * lk * d;
            float* dst = kt.data() + head * d * lk;
            for (std::size_t j = 0; j < lk; ++j) {
                for (std::size_t x = 0; x < d; ++x) {
                    dst[x * lk + j] = src[j * d + x];
                }
            }
        });
    }

    /// Every row goes through the scalar feature row only when a feature needs it.
    static bool features(const AttentionSpec& spec) { return detail::has_row_features(spec); }

    /// p[rows, 0:n] = q_blk[rows, D] · Kᵀ[:, 0:n] of K/V head `head` (unscaled).
    void
    scores(std::size_t head, const float* q_blk, std::size_t rows, std::size_t n, float* p) const {
        ops.gemm(rows, n, d, q_blk, d, 1, kt.data() + head * d * lk, lk, p, lk, false, nullptr);
    }

    /// o[rows, Dv] = p[rows, 0:n] · v_head[0:n, Dv].
    void output(const float* p,
                std::size_t rows,
                std::size_t n,
                const float* v_head,
                std::size_t dv,
                float* o) const {
        ops.gemm(rows, dv, n, p, lk, 1, v_head, dv, o, dv, false, nullptr);
    }

    /// The plain row (no feature): the table's vectorised softmax.
    auto plain_row(float scale) const {
        return [this, scale](float* srow,
                             std::size_t limit,
                             const float* bias_row,
                             const std::uint8_t* mask_row,
                             const std::uint8_t* pad_row) {
            return ops.softmax_row(srow, limit, scale, bias_row, mask_row, pad_row);
        };
    }
};

/// double: dgemm on K as it is; spec.simd is ignored.
template <> struct MaterializedOps<double> {
    const BasicTensor<double>& k;
    std::size_t d;
    std::size_t lk;

    MaterializedOps(const BasicTensor<double>& keys, const BasicAttentionSpec<double>&, unsigned)
        : k(keys), d(keys.shape()[3]), lk(keys.shape()[2]) {}

    /// Every row goes through the scalar feature row (in double).
    static bool features(const BasicAttentionSpec<double>&) { return true; }

    void scores(
        std::size_t head, const double* q_blk, std::size_t rows, std::size_t n, double* p) const {
        detail::gemm(rows, n, d, 1.0, q_blk, d, k.data() + head * lk * d, d, true, 0.0, p, lk);
    }

    void output(const double* p,
                std::size_t rows,
                std::size_t n,
                const double* v_head,
                std::size_t dv,
                double* o) const {
        detail::gemm(rows, dv, n, 1.0, p, lk, v_head, dv, false, 0.0, o, dv);
    }

    std::nullptr_t plain_row(double) const { return nullptr; }
};

template <class T>
BasicAttentionResult<T> materialized(const xt::xtensor<T, 4>& q,
                                     const xt::xtensor<T, 4>& k,
                                     const xt::xtensor<T, 4>& v,
                                     const BasicAttentionSpec<T>& spec) {
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
    const T scale = detail::score_scale(spec, d);

    BasicAttentionResult<T> result;
    result.output = xt::xtensor<T, 4>::from_shape({n_b, n_h, lq, dv});
    if (spec.want_weights) {
        result.weights = xt::xtensor<T, 4>::from_shape({n_b, n_h, lq, lk});
    }
    const bool features = MaterializedOps<T>::features(spec);
    BasicRowDiagnostics<T>& diag_out = result.diagnostics;
    detail::allocate_diagnostics(diag_out, spec, n_b, n_h, lq);

    const std::size_t blocks = (lq + kQueryBlock - 1) / kQueryBlock;
    const std::size_t tasks = n_b * n_h * blocks;
    const unsigned threads = detail::resolve_threads(spec.threads, tasks);
    detail::blas_single_threaded();
    const MaterializedOps<T> mops(k, spec, threads);
    const auto plain_row = mops.plain_row(scale);

    std::vector<std::vector<T>> scratch(threads);
    std::vector<std::int64_t> masked_rows(threads, 0);

    detail::parallel_for(tasks, threads, [&](unsigned worker, std::size_t task) {
        const detail::QueryBlockTask qblock = detail::query_block_task(task, blocks, n_h, lq);
        const auto [b, h, i0, rows] = qblock;
        const std::size_t first_row = (b * n_h + h) * lq + i0; // row (b, h, i0) of [B, H, Lq, *]
        const std::size_t head = (n_bk == 1 ? 0 : b) * n_hkv + h / group; // its K/V head

        const T* q_blk = q.data() + first_row * d;
        const T* v_head = v.data() + head * lk * dv;
        T* o_blk = result.output.data() + first_row * dv;

        // [rows, Lk] scores, then weights: rows of result.weights or the worker's scratch.
        T* p = detail::block_weights(result.weights, scratch[worker], first_row, lk);

        // Keys past the last row's causal limit are invisible to the whole block: left out
        // of both GEMMs (causal costs about half, and inf/NaN there cannot leak in as 0·inf).
        const std::size_t n_vis = rule.causal_end(i0 + rows - 1);

        // pass 1: scores = Q_blk · Kᵀ[:, 0:n_vis] (unscaled; the row pass scales).
        mops.scores(head, q_blk, rows, n_vis, p);

        // pass 2: per row, scale, bias, masks, features and a max-subtracted softmax; keys
        // past the row's causal limit get weight exactly 0.
        std::array<bool, kQueryBlock> empty{};
        const std::int64_t empty_rows = detail::weights_block(
            p, empty, qblock, first_row, lq, lk, scale, spec, diag_out, features, plain_row);
        masked_rows[worker] += empty_rows;

        // pass 3: output = P[:, 0:n_vis] · V[0:n_vis], then exact zeros for rows that saw
        // no key.
        mops.output(p, rows, n_vis, v_head, dv, o_blk);
        if (empty_rows > 0) {
            detail::zero_empty_rows(o_blk, empty, rows, dv);
        }
    });

    for (const auto n : masked_rows) {
        result.rows_fully_masked += n;
    }
    return result;
}

} // namespace

template <class T>
Workspace materialized_workspace(const Shape& q,
                                 const Shape& k,
                                 const Shape& v,
                                 const BasicAttentionSpec<T>& spec) {
    (void)v;
    const std::uint64_t lk = k[2];
    Workspace w;
    if constexpr (std::is_same_v<T, float>) {
        w.shared = detail::saturating_product({sizeof(float), k[0], k[1], q[3], lk}); // Kᵀ
    }
    if (!spec.want_weights) {
        w.per_thread = detail::saturating_product({sizeof(T), kQueryBlock, lk});
    }
    if (spec.top_k > 0) { // feature_row's list of a row's keys
        w.per_thread = detail::saturating_sum(
            w.per_thread, detail::saturating_product({sizeof(std::size_t), lk}));
    }
    return w;
}

template Workspace
materialized_workspace(const Shape&, const Shape&, const Shape&, const AttentionSpec&);
template Workspace
materialized_workspace(const Shape&, const Shape&, const Shape&, const BasicAttentionSpec<double>&);

AttentionResult
attend_materialized(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec) {
    return materialized(q, k, v, spec);
}

BasicAttentionResult<double> attend_materialized(const BasicTensor<double>& q,
                                                 const BasicTensor<double>& k,
                                                 const BasicTensor<double>& v,
                                                 const BasicAttentionSpec<double>& spec) {
    return materialized(q, k, v, spec);
}

} // namespace attn

// The materialized kernel, one driver over the precision T: for each (batch, head, block
// of queries) it computes the block's scores against the visible keys with one GEMM,
// turns each row into weights (bias, masks, features and a max-subtracted softmax), and
// multiplies by V with a second GEMM. Weights are written straight into the result when
// asked for; otherwise into a per-thread block x Lk scratch buffer, so memory stays linear
// in the sequence length. (attend() uses attend_streaming for float32 without weights.)
//
// What differs between the precisions is in MaterializedOps<T>:
//   float   KernelOps' blocked micro-GEMM over a packed Kᵀ, and the vectorised
//           softmax_row for rows no feature needs the scalar row for;
//   double  dgemm straight on K and V, and the scalar feature row for every row
//           (the reference-grade `precision: f64` path: no SIMD of its own).
//
// Legend: B batch, H query heads, Hkv key/value heads, Lq queries, Lk keys,
//         D query/key features, Dv value features, QB query rows per task.
#include "attn/kernels.hpp"
#include "attn/visibility.hpp"
#include "blas.hpp"
#include "kernel_common.hpp"
#include "kernel_ops.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace attn {

namespace {

using detail::kQueryBlock;

/// Keys per panel of the packed Kᵀ: one AVX-512 tile's width (4 vectors of 16 floats).
constexpr std::size_t kKeyPanel = 64;

/// The GEMMs and the plain row of one precision:
///   float   the KernelOps table spec.simd picks, over Kᵀ of every K/V head packed once
///           in panels of 64 keys ([Bk, Hkv, Lk / 64, D, 64], the last panel narrower when
///           64 does not divide Lk: the size of K). The score GEMM reads one contiguous
///           panel (16 KB at D = 64) for all row tiles of a block from L1; rows of a plain
///           Kᵀ lie Lk floats apart (16 KB at Lk = 4096), fall into the same few L1 sets,
///           and every row tile read them from L2 again.
///   double  dgemm on K as it is (spec.simd is ignored) and no plain row.
template <class T> struct MaterializedOps {
    static constexpr bool kFloat = std::is_same_v<T, float>;
    const detail::KernelOps* ops = nullptr; // float
    BasicTensorView<T> k;
    std::size_t d;
    std::size_t lk;
    std::vector<T> kt; // float: the packed Kᵀ panels

    MaterializedOps(BasicTensorView<T> keys, const BasicAttentionSpec<T>& spec, unsigned threads)
        : k(keys), d(keys.shape()[3]), lk(keys.shape()[2]) {
        if constexpr (kFloat) {
            ops = &detail::kernel_ops(spec.simd);
            kt.resize(k.size());
            detail::parallel_for(
                k.shape()[0] * k.shape()[1], threads, [&](unsigned, std::size_t head) {
                    const T* src = k.data() + head * lk * d;
                    for (std::size_t j0 = 0; j0 < lk; j0 += kKeyPanel) {
                        const std::size_t width = std::min(kKeyPanel, lk - j0);
                        T* dst = kt.data() + (head * lk + j0) * d;
                        for (std::size_t j = 0; j < width; ++j) {
                            for (std::size_t x = 0; x < d; ++x) {
                                dst[x * width + j] = src[(j0 + j) * d + x];
                            }
                        }
                    }
                });
        } else {
            (void)spec;
            (void)threads;
        }
    }

    /// Whether every row goes through the scalar feature row: in float only when a
    /// feature needs it, in double always.
    static bool features(const BasicAttentionSpec<T>& spec) {
        return !kFloat || detail::has_row_features(spec);
    }

    /// p[rows, 0:n] = q_blk[rows, D] · Kᵀ[:, 0:n] of K/V head `head` (unscaled).
    void scores(std::size_t head, const T* q_blk, std::size_t rows, std::size_t n, T* p) const {
        if constexpr (kFloat) {
            for (std::size_t j0 = 0; j0 < n; j0 += kKeyPanel) {
                const std::size_t width = std::min(kKeyPanel, lk - j0);
                ops->gemm({.m = rows,
                           .n = std::min(width, n - j0),
                           .k = d,
                           .a = q_blk,
                           .a_row = d,
                           .b = kt.data() + (head * lk + j0) * d,
                           .ldb = width,
                           .c = p + j0,
                           .ldc = lk});
            }
        } else {
            detail::gemm(rows, n, d, 1.0, q_blk, d, k.data() + head * lk * d, d, true, 0.0, p, lk);
        }
    }

    /// o[rows, Dv] = p[rows, 0:n] · v_head[0:n, Dv].
    void output(
        const T* p, std::size_t rows, std::size_t n, const T* v_head, std::size_t dv, T* o) const {
        if constexpr (kFloat) {
            ops->gemm({.m = rows,
                       .n = dv,
                       .k = n,
                       .a = p,
                       .a_row = lk,
                       .b = v_head,
                       .ldb = dv,
                       .c = o,
                       .ldc = dv});
        } else {
            detail::gemm(rows, dv, n, 1.0, p, lk, v_head, dv, false, 0.0, o, dv);
        }
    }

    /// The plain row (no feature): the table's vectorised softmax in float, none in double.
    auto plain_row(T scale) const {
        if constexpr (kFloat) {
            return [this, scale](float* srow,
                                 std::size_t limit,
                                 const float* bias_row,
                                 const std::uint8_t* mask_row,
                                 const std::uint8_t* pad_row) {
                return ops->softmax_row(srow, limit, scale, bias_row, mask_row, pad_row);
            };
        } else {
            (void)scale;
            return nullptr;
        }
    }
};

/// The keys whose value row holds NaN or ±inf, per K/V head. A key blocked for a row must
/// contribute exactly nothing to it, but the P·V GEMM would give 0·NaN = NaN; such a head
/// is multiplied by a copy of V with those rows zeroed, and add_visible() adds their terms
/// back for the rows that see them. Heads without any keep V as it is (no copy).
template <class T> class NonFiniteValues {
  public:
    explicit NonFiniteValues(BasicTensorView<T> v)
        : lk_(v.shape()[2]), dv_(v.shape()[3]), keys_(v.shape()[0] * v.shape()[1]),
          clean_(keys_.size()) {
        for (std::size_t head = 0; head < keys_.size(); ++head) {
            const T* v_head = v.data() + head * lk_ * dv_;
            for (std::size_t j = 0; j < lk_; ++j) {
                const T* row = v_head + j * dv_;
                if (!std::all_of(row, row + dv_, [](T x) { return std::isfinite(x); })) {
                    keys_[head].push_back(j);
                }
            }
            if (!keys_[head].empty()) {
                clean_[head].assign(v_head, v_head + lk_ * dv_);
                for (const std::size_t j : keys_[head]) {
                    std::fill_n(clean_[head].data() + j * dv_, dv_, T{0});
                }
            }
        }
    }

    /// V of `head` for the GEMM: as given, or the copy with non-finite rows zeroed.
    const T* values(std::size_t head, const T* v_head) const {
        return clean_[head].empty() ? v_head : clean_[head].data();
    }

    /// o[r] += p[r, j]·v[j] for the non-finite keys j < n that row r of the task sees.
    void add_visible(const BasicVisibility<T>& vis,
                     const detail::QueryBlockTask& task,
                     std::size_t head,
                     const T* p,
                     std::size_t n,
                     const T* v_head,
                     T* o) const {
        for (std::size_t r = 0; r < task.rows; ++r) {
            for (const std::size_t j : keys_[head]) {
                if (j < n && vis.sees(task.b, task.h, task.i0 + r, j)) {
                    for (std::size_t x = 0; x < dv_; ++x) {
                        o[r * dv_ + x] += p[r * lk_ + j] * v_head[j * dv_ + x];
                    }
                }
            }
        }
    }

    bool any(std::size_t head) const { return !keys_[head].empty(); }

  private:
    std::size_t lk_, dv_;
    std::vector<std::vector<std::size_t>> keys_;
    std::vector<std::vector<T>> clean_;
};

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
    if (!spec.want_weights || spec.weights_to != nullptr) { // rows scored into scratch
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

template <class T>
void attend_materialized_into(BasicTensorView<T> q,
                              BasicTensorView<T> k,
                              BasicTensorView<T> v,
                              const BasicAttentionSpec<T>& spec,
                              BasicAttentionResult<T>& result) {
    const detail::Dims dims(q, k, v);
    const std::size_t group = dims.group(); // query heads per key/value head
    const T scale = score_scale(spec, dims.d);

    detail::fit_result(result, dims, spec, true); // storage of the right shape is kept
    const bool features = MaterializedOps<T>::features(spec);
    BasicRowDiagnostics<T>& diag_out = result.diagnostics;

    const std::size_t blocks = (dims.lq + kQueryBlock - 1) / kQueryBlock;
    const std::size_t tasks = dims.b * dims.h * blocks;
    const unsigned threads = detail::resolve_threads(spec.threads, tasks);
    detail::blas_single_threaded();
    const MaterializedOps<T> mops(k, spec, threads);
    const auto plain_row = mops.plain_row(scale);
    const NonFiniteValues<T> nonfinite(v);
    const BasicVisibility<T> visibility(spec, dims.lq, dims.lk);

    std::vector<std::vector<T>> scratch(threads);
    std::vector<std::int64_t> masked_rows(threads, 0);

    detail::parallel_for(tasks, threads, [&](unsigned worker, std::size_t task) {
        const detail::QueryBlockTask qblock =
            detail::query_block_task(task, blocks, dims.h, dims.lq);
        const auto [b, h, i0, rows] = qblock;
        const std::size_t first_row =
            (b * dims.h + h) * dims.lq + i0; // row (b, h, i0) of [B, H, Lq, *]
        const std::size_t head = (dims.bk == 1 ? 0 : b) * dims.hkv + h / group; // its K/V head

        const T* q_blk = q.data() + first_row * dims.d;
        const T* v_head = v.data() + head * dims.lk * dims.dv;
        T* o_blk = result.output.data() + first_row * dims.dv;

        // [rows, Lk] scores, then weights: rows of result.weights or the worker's scratch
        // (handed to the caller's destination once final).
        const WeightsDestination<T>* to = spec.want_weights ? spec.weights_to : nullptr;
        T* p = detail::block_weights(result.weights, scratch[worker], first_row, dims.lk);

        // Keys past the last row's causal limit are invisible to the whole block: left out
        // of both GEMMs (causal costs about half, and inf/NaN there cannot leak in as 0·inf).
        const std::size_t n_vis = key_rule(spec, b, dims.lq, dims.lk).causal_end(i0 + rows - 1);

        // pass 1: scores = Q_blk · Kᵀ[:, 0:n_vis] (unscaled; the row pass scales).
        mops.scores(head, q_blk, rows, n_vis, p);

        // pass 2: per row, scale, bias, masks, features and a max-subtracted softmax; keys
        // past the row's causal limit get weight exactly 0.
        std::array<bool, kQueryBlock> empty{};
        // A destination that never reads past a row's causal limit gets the tail past the
        // block's visible keys as it was (P·V reads up to n_vis only).
        const std::size_t zero_end = to != nullptr && !to->zero_causal_tail ? n_vis : dims.lk;
        const std::int64_t empty_rows = detail::weights_block(p,
                                                              empty,
                                                              qblock,
                                                              first_row,
                                                              dims.lq,
                                                              dims.lk,
                                                              zero_end,
                                                              scale,
                                                              spec,
                                                              diag_out,
                                                              features,
                                                              plain_row);
        masked_rows[worker] += empty_rows;

        // pass 3: output = P[:, 0:n_vis] · V[0:n_vis] (a blocked key adds nothing, even a
        // NaN or ±inf value), then exact zeros for rows that saw no key.
        mops.output(p, rows, n_vis, nonfinite.values(head, v_head), dims.dv, o_blk);
        if (nonfinite.any(head)) {
            nonfinite.add_visible(visibility, qblock, head, p, n_vis, v_head, o_blk);
        }
        if (empty_rows > 0) {
            detail::zero_empty_rows(o_blk, empty, rows, dims.dv);
        }
        if (to != nullptr) {
            to->store(first_row * dims.lk, p, rows * dims.lk);
        }
    });

    for (const auto n : masked_rows) {
        result.rows_fully_masked += n;
    }
}

template void attend_materialized_into(
    TensorView, TensorView, TensorView, const AttentionSpec&, AttentionResult&);
template void attend_materialized_into(BasicTensorView<double>,
                                       BasicTensorView<double>,
                                       BasicTensorView<double>,
                                       const BasicAttentionSpec<double>&,
                                       BasicAttentionResult<double>&);

} // namespace attn

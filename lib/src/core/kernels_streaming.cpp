// The streaming kernel: one pass over key blocks with an online softmax, so no Lq x Lk
// matrix ever exists. Memory: the output plus, per thread, the group's scaled Qᵀ blocks,
// one [KB, 64] score block and a running max and sum per query row. It never returns
// weights (attend_materialized does).
//
// Legend: B batch, H query heads, Hkv key/value heads, G = H / Hkv heads per group,
//         Lq queries, Lk keys, D query/key features, Dv value features,
//         QB query rows per task (64), KB keys per block.
#include "attn/interruption.hpp"
#include "attn/kernels.hpp"
#include "blas.hpp"
#include "kernel_common.hpp"
#include "kernel_ops.hpp"
#include "kernel_pooled.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace attn {

namespace {

using detail::kQueryBlock;
using detail::kScoreColumns;
using detail::kScoreStride;
static_assert(kQueryBlock == kScoreColumns, "a score block's columns are one query block");

/// KB: keys per block. A [KB, 64] score block is 32 KB and a K or V block of KB rows is
/// 32 KB at D = 64, so the block's working set stays in L2 (1-2 MB) and the Qᵀ panel the
/// QK micro-GEMM re-reads (16 KB at D = 64) stays in L1 (48 KB). Measured in
/// bench/README.md against 64 and 256.
constexpr std::size_t kKeyBlock = 128;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// Per-thread working memory, O(G·QB·D + KB·QB): independent of Lq and Lk.
struct Scratch {
    std::vector<float> qt;    // [G, D, QB]  scale · Q_blockᵀ, zero past the last row
    std::vector<float> st;    // [KB, QB]    transposed scores, then probabilities (stride 80)
    std::vector<float> m;     // [G, QB]     running row max
    std::vector<float> l;     // [G, QB]     running row sum of exp(s - m)
    std::vector<float> alpha; // [QB]        this block's rescale factor exp(m_old - m_new)
    std::vector<float> best;  // [G, QB]     argmax: the largest final score so far
    std::vector<std::int64_t> best_key; // [G, QB] and its key (-1: none yet)
    detail::PooledTiles pooled;         // spec.pooled_to's columns and top-k (else unused)
};

/// One task: (batch b, K/V head hk, query rows [i0, i0 + rows)) with all G query heads of
/// the group, so each K/V block is loaded once and used G times while it is in cache.
struct Task {
    std::size_t b;
    std::size_t hk;
    std::size_t i0;
    std::size_t rows;
    const float* k_head; // [Lk, D] of K/V head hk
    const float* v_head; // [Lk, Dv]
    const std::uint8_t* pad_row;
    KeyRule rule; // batch b's (varlen: sequence b's own Lk)
};

/// The call: its inputs, sizes, spec, kernel table and result.
struct Call {
    TensorView q;
    TensorView k;
    TensorView v;
    const AttentionSpec& spec;
    const detail::Dims& dims;
    const detail::KernelOps& ops;
    AttentionResult& result;
    std::size_t blocks; // query blocks per head

    /// Task `task`: later query blocks first, since under a causal mask they see more keys
    /// and the last tasks to finish should be the short ones.
    Task task(std::size_t task) const {
        const std::size_t blk = blocks - 1 - task % blocks;
        const std::size_t hk = (task / blocks) % dims.hkv;
        const std::size_t b = task / (blocks * dims.hkv);
        const std::size_t i0 = blk * kQueryBlock;
        const std::size_t head = (dims.bk == 1 ? 0 : b) * dims.hkv + hk;
        return {.b = b,
                .hk = hk,
                .i0 = i0,
                .rows = std::min(kQueryBlock, dims.lq - i0),
                .k_head = k.data() + head * dims.lk * dims.d,
                .v_head = v.data() + head * dims.lk * dims.dv,
                .pad_row = padding_row(spec.key_padding, b, dims.lk),
                .rule = key_rule(spec, b, dims.lq, dims.lk)};
    }

    /// Query head h's first row of the task in [B, H, Lq, *].
    std::size_t first_row(const Task& t, std::size_t h) const {
        return (t.b * dims.h + h) * dims.lq + t.i0;
    }
    float* output(const Task& t, std::size_t h) const {
        return result.output.data() + first_row(t, h) * dims.dv;
    }
};

/// Readies the worker's scratch for a task: Qᵀ of each head of the group with the scale
/// folded in (scores come out scaled; exact for D = 64, where scale = 1/8), zero columns
/// past the last row; running max -inf, sum 0, argmax none; the output rows 0.
void start_task(Scratch& s, const Call& c, const Task& t, float scale) {
    const std::size_t group = c.dims.group();
    const std::size_t d = c.dims.d;
    s.qt.resize(group * d * kQueryBlock);
    s.st.resize(kKeyBlock * kScoreStride);
    s.m.assign(group * kQueryBlock, kNegInf);
    s.l.assign(group * kQueryBlock, 0.0f);
    s.alpha.resize(kQueryBlock);
    s.best.assign(group * kQueryBlock, kNegInf);
    s.best_key.assign(group * kQueryBlock, -1);
    for (std::size_t g = 0; g < group; ++g) {
        const std::size_t h = t.hk * group + g;
        const float* q_blk = c.q.data() + c.first_row(t, h) * d;
        float* qt = s.qt.data() + g * d * kQueryBlock;
        for (std::size_t x = 0; x < d; ++x) {
            for (std::size_t r = 0; r < kQueryBlock; ++r) {
                qt[x * kQueryBlock + r] = r < t.rows ? scale * q_blk[r * d + x] : 0.0f;
            }
        }
        std::fill_n(c.output(t, h), t.rows * c.dims.dv, 0.0f);
    }
    if (c.spec.pooled_to != nullptr) {
        s.pooled.start(*c.spec.pooled_to, c.ops, group, t.i0, t.rows, t.rule, t.pad_row, c.dims.lk);
    }
}

/// Whether a key block's scores need the pipeline's per-score pass: a feature or a mask
/// is on, or the block holds keys some row of the task does not see (`edge`).
bool needs_score_pass(const AttentionSpec& spec, const Task& t, bool edge) {
    return edge || spec.softcap.has_value() || spec.bias != nullptr || !spec.alibi_slopes.empty() ||
           spec.keep_mask != nullptr || t.pad_row != nullptr;
}

/// pass 2: the final scores of the block's keys [j0, j0 + kb) for query head h, through
/// the score pipeline (RowScores; the scale is already in: Q was scaled). A blocked key
/// becomes exactly -inf even when its score is NaN.
void score_pass(float* st,
                const AttentionSpec& spec,
                const Task& t,
                std::size_t h,
                std::size_t j0,
                std::size_t kb) {
    for (std::size_t r = 0; r < t.rows; ++r) {
        const detail::RowScores<float> scores(
            spec, std::nullopt, t.rule, t.b, h, t.i0 + r, t.pad_row);
        for (std::size_t j = 0; j < kb; ++j) {
            float& x = st[j * kScoreStride + r];
            x = scores(x, j0 + j);
        }
    }
}

/// Argmax over the block's final scores: the pipeline's rule (a strictly larger score
/// wins; blocks run in key order, so ties keep the first key, as in attend_materialized).
void argmax_pass(const float* st,
                 std::size_t rows,
                 std::size_t j0,
                 std::size_t kb,
                 float* best,
                 std::int64_t* best_key) {
    for (std::size_t j = 0; j < kb; ++j) {
        for (std::size_t r = 0; r < rows; ++r) {
            detail::score::take_if_larger(st[j * kScoreStride + r], j0 + j, best[r], best_key[r]);
        }
    }
}

/// One key block [j0, j0 + kb) for query head g of the group: scores, the per-score pass
/// where needed, one online-softmax step and the P·V update of the output rows.
void key_block_step(Scratch& s,
                    const Call& c,
                    const Task& t,
                    std::size_t g,
                    std::size_t j0,
                    std::size_t kb,
                    bool score_pass_needed,
                    std::size_t next_j0,
                    std::size_t next_kb) {
    const std::size_t group = c.dims.group();
    const std::size_t h = t.hk * group + g;
    float* st = s.st.data();
    float* m = s.m.data() + g * kQueryBlock;
    float* l = s.l.data() + g * kQueryBlock;

    // pass 1: St[kb, QB] = K_block · (scale · Q_block)ᵀ. The micro-GEMM broadcasts K
    // entries against Qᵀ rows, so neither K nor V is repacked. The group's first head pulls
    // this block's V toward L2 meanwhile.
    c.ops.gemm({.m = kb,
                .n = kQueryBlock,
                .k = c.dims.d,
                .a = t.k_head + j0 * c.dims.d,
                .a_row = c.dims.d,
                .a_col = 1,
                .b = s.qt.data() + g * c.dims.d * kQueryBlock,
                .ldb = kQueryBlock,
                .c = st,
                .ldc = kScoreStride,
                .prefetch = t.v_head + j0 * c.dims.dv,
                .prefetch_bytes = g == 0 ? kb * c.dims.dv * sizeof(float) : 0});

    // pass 2: softcap, bias, ALiBi and the masks (only blocks that need it pay).
    if (score_pass_needed) {
        score_pass(st, c.spec, t, h, j0, kb);
    }
    if (c.spec.want_argmax) {
        argmax_pass(st,
                    t.rows,
                    j0,
                    kb,
                    s.best.data() + g * kQueryBlock,
                    s.best_key.data() + g * kQueryBlock);
    }
    const bool pooled = c.spec.pooled_to != nullptr;
    if (pooled) { // the long view's top-k, on the final scores
        s.pooled.offer_scores(g, st, j0, kb);
    }

    // pass 3: online softmax (Milakov & Gimelshein 2018, "Online normalizer calculation
    // for softmax"; Rabe & Staats 2021, "Self-attention does not need O(n²) memory"). Per
    // query row, with m the running max and l the running sum of exp(s - m):
    //   m' = max(m, max_j s_j)      alpha = exp(m - m')   (1 if m' == m)
    //   p_j = exp(s_j - m')         l' = l·alpha + sum_j p_j
    //   O' = O·alpha + sum_j p_j·V_j
    // exp(-inf - m') is exactly 0, so masked keys add nothing; a NaN score never becomes
    // the max but makes p, l and the row's output NaN.
    const bool rescale = c.ops.online_softmax(st, kb, m, l, s.alpha.data());
    if (pooled) { // the long view's columns, on the probabilities while in cache
        s.pooled.add_probabilities(g, st, j0, kb, m, s.alpha.data());
    }

    // pass 4: O = diag(alpha)·O + P·V_block, P read transposed from St. The accumulator is
    // rescaled only when some row's max grew. The group's last head pulls the next K block
    // toward L2 meanwhile.
    c.ops.gemm({.m = t.rows,
                .n = c.dims.dv,
                .k = kb,
                .a = st,
                .a_row = 1,
                .a_col = kScoreStride,
                .b = t.v_head + j0 * c.dims.dv,
                .ldb = c.dims.dv,
                .c = c.output(t, h),
                .ldc = c.dims.dv,
                .accumulate = true,
                .row_scale = rescale ? s.alpha.data() : nullptr,
                .prefetch = t.k_head + next_j0 * c.dims.d,
                .prefetch_bytes = g + 1 == group ? next_kb * c.dims.d * sizeof(float) : 0});
}

/// The task's pass over its keys: every key block some row sees, for each head of the group.
void key_blocks(Scratch& s, const Call& c, const Task& t) {
    // Keys outside `any` are invisible to every row of the block (skipped: causal
    // attention costs about half, a window less); keys inside `all` are visible to every
    // row (no per-score test of the key rule there).
    const KeyRange any = t.rule.any_keys(t.i0, t.i0 + t.rows - 1);
    const KeyRange all = t.rule.all_keys(t.i0, t.i0 + t.rows - 1);
    const std::size_t key_end = any.end;
    for (std::size_t j0 = any.begin; j0 < key_end; j0 += kKeyBlock) {
        detail::interruption_point(); // a task is every key of its rows: long at 32k keys
        const std::size_t kb = std::min(kKeyBlock, key_end - j0);
        // A block whose keys are all padding is skipped whole.
        if (t.pad_row != nullptr && std::all_of(t.pad_row + j0,
                                                t.pad_row + j0 + kb,
                                                [](std::uint8_t p) { return p == 0; })) {
            continue;
        }
        const bool edge = j0 < all.begin || j0 + kb > all.end;
        const bool score_pass_needed = needs_score_pass(c.spec, t, edge);
        const std::size_t next_j0 = std::min(j0 + kb, key_end);
        const std::size_t next_kb = std::min(kKeyBlock, key_end - next_j0);
        for (std::size_t g = 0; g < c.dims.group(); ++g) {
            key_block_step(s, c, t, g, j0, kb, score_pass_needed, next_j0, next_kb);
        }
    }
}

/// The end of each row: O / l with the sink in the denominator, lse and argmax. l == 0
/// exactly when the row saw no key (a visible key adds exp(0) = 1 at its row's max, a NaN
/// one makes l NaN): zeros, as the contract says, even with a sink. The sink (no value
/// row) raises the base as a key block would (the pipeline's raise_base):
///   m' = max(m, sink), l' = l·exp(m - m') + exp(sink - m'), O = O·exp(m - m') / l'.
/// With spec.pooled_to, each head's rows are then pooled with the same base and factor
/// (a weight is exp(s - base) · exp(m - m') / l'). Returns how many rows saw no key.
std::int64_t finish_rows(Scratch& s, const Call& c, const Task& t) {
    using L = detail::Scalar<float>;
    namespace score = detail::score;
    const std::size_t group = c.dims.group();
    BasicRowDiagnostics<float>& diag = c.result.diagnostics;
    std::int64_t empty_rows = 0;
    std::array<float, kQueryBlock> bases{};
    std::array<float, kQueryBlock> factors{};
    for (std::size_t g = 0; g < group; ++g) {
        const std::size_t h = t.hk * group + g;
        const float* l = s.l.data() + g * kQueryBlock;
        const float* m = s.m.data() + g * kQueryBlock;
        for (std::size_t r = 0; r < t.rows; ++r) {
            const std::size_t row = c.first_row(t, h) + r;
            if (diag.argmax) {
                diag.argmax->data()[row] = static_cast<float>(s.best_key[g * kQueryBlock + r]);
            }
            float* o = c.output(t, h) + r * c.dims.dv;
            bases[r] = 0.0f;
            factors[r] = 0.0f;
            if (l[r] == 0.0f) {
                std::fill_n(o, c.dims.dv, 0.0f);
                if (diag.lse) {
                    diag.lse->data()[row] = kNegInf;
                }
                ++empty_rows;
                continue;
            }
            float base = score::exp_base<L>(m[r]);
            bases[r] = base;
            float l_row = l[r];
            float alpha = 1.0f;
            if (!c.spec.sinks.empty()) {
                const float sink = c.spec.sinks[h];
                const auto step = score::raise_base<L>(base, sink);
                base = step.base;
                alpha = step.alpha;
                l_row = l_row * alpha + score::sink_weight<L>(sink, base);
            }
            if (diag.lse) {
                diag.lse->data()[row] = score::log_sum_exp(base, static_cast<double>(l_row));
            }
            const float inv = alpha / l_row;
            factors[r] = inv;
            for (std::size_t x = 0; x < c.dims.dv; ++x) {
                o[x] *= inv;
            }
        }
        if (c.spec.pooled_to != nullptr) {
            s.pooled.finish(g, bases.data(), factors.data(), c.first_row(t, h));
        }
    }
    return empty_rows;
}

} // namespace

Workspace streaming_workspace(const Shape& q, const Shape& k, const Shape& v) {
    (void)v;
    const std::uint64_t group = k[1] == 0 ? 1 : q[1] / k[1];
    const std::uint64_t qb = kQueryBlock;
    // Scratch: qt [G, D, QB]; st [KB, stride]; m, l, best [G, QB]; alpha [QB]; best_key.
    std::uint64_t floats = detail::saturating_product({group, q[3], qb});
    floats = detail::saturating_sum(floats, kKeyBlock * kScoreStride);
    floats = detail::saturating_sum(floats, detail::saturating_product({3, group, qb}));
    floats = detail::saturating_sum(floats, qb);
    Workspace w;
    w.per_thread =
        detail::saturating_sum(detail::saturating_product({sizeof(float), floats}),
                               detail::saturating_product({sizeof(std::int64_t), group, qb}));
    return w;
}

void attend_streaming_into(
    TensorView q, TensorView k, TensorView v, const AttentionSpec& spec, AttentionResult& result) {
    const detail::Dims dims(q, k, v);
    const float scale = score_scale(spec, dims.d);

    // The output and the score features' lse and argmax, applied per score in pass 2
    // (entropy and top-k need whole rows: attend() sends them to attend_materialized;
    // requested here they stay empty); no weights. Storage of the right shape is kept.
    detail::fit_result(result, dims, spec, false);

    const std::size_t blocks = (dims.lq + kQueryBlock - 1) / kQueryBlock;
    const Call call{q, k, v, spec, dims, detail::kernel_ops(spec.simd), result, blocks};
    const std::size_t tasks = dims.b * dims.hkv * blocks;
    const unsigned threads = detail::resolve_threads(spec.threads, tasks);
    detail::blas_single_threaded();

    std::vector<Scratch> scratch(threads);
    std::vector<std::int64_t> masked_rows(threads, 0);
    detail::parallel_for(tasks, threads, [&](unsigned worker, std::size_t index) {
        const Task t = call.task(index);
        Scratch& s = scratch[worker];
        start_task(s, call, t, scale);
        key_blocks(s, call, t);
        masked_rows[worker] += finish_rows(s, call, t);
    });

    for (const auto n : masked_rows) {
        result.rows_fully_masked += n;
    }
}

AttentionResult
attend_streaming(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec) {
    AttentionResult result;
    attend_streaming_into(q, k, v, spec, result);
    return result;
}

} // namespace attn

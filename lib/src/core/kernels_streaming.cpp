// The streaming kernel: one pass over key blocks with an online softmax, so no Lq x Lk
// matrix ever exists. Memory: the output plus, per thread, the group's scaled Qᵀ blocks,
// one [KB, 64] score block and a running max and sum per query row. It never returns
// weights (attend_materialized does).
//
// Legend: B batch, H query heads, Hkv key/value heads, G = H / Hkv heads per group,
//         Lq queries, Lk keys, D query/key features, Dv value features,
//         QB query rows per task (64), KB keys per block.
#include "attn/kernels.hpp"
#include "blas.hpp"
#include "kernel_common.hpp"
#include "kernel_ops.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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
};

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
    const std::size_t group = dims.group(); // G: query heads sharing one K/V head
    const float scale = score_scale(spec, dims.d);
    const detail::KernelOps& ops = detail::kernel_ops(spec.simd);

    // The output and the score features' lse and argmax, applied per score in pass 2
    // (entropy and top-k need whole rows: attend() sends them to attend_materialized;
    // requested here they stay empty); no weights. Storage of the right shape is kept.
    detail::fit_result(result, dims, spec, false);

    // One task = (batch, K/V head, query block) with all G query heads of the group, so
    // each K/V block is loaded once and used G times while it is in cache.
    const std::size_t blocks = (dims.lq + kQueryBlock - 1) / kQueryBlock;
    const std::size_t tasks = dims.b * dims.hkv * blocks;
    const unsigned threads = detail::resolve_threads(spec.threads, tasks);
    detail::blas_single_threaded();

    std::vector<Scratch> scratch(threads);
    std::vector<std::int64_t> masked_rows(threads, 0);

    detail::parallel_for(tasks, threads, [&](unsigned worker, std::size_t task) {
        // Under a causal mask later query blocks see more keys: hand them out first so
        // the last tasks to finish are the short ones.
        const std::size_t blk = blocks - 1 - task % blocks;
        const std::size_t hk = (task / blocks) % dims.hkv;
        const std::size_t b = task / (blocks * dims.hkv);
        const std::size_t i0 = blk * kQueryBlock;
        const std::size_t rows = std::min(kQueryBlock, dims.lq - i0);
        const std::size_t bk = dims.bk == 1 ? 0 : b;
        const float* k_head = k.data() + (bk * dims.hkv + hk) * dims.lk * dims.d;
        const float* v_head = v.data() + (bk * dims.hkv + hk) * dims.lk * dims.dv;
        const std::uint8_t* pad_row = padding_row(spec.key_padding, b, dims.lk);
        const KeyRule rule = key_rule(spec, b, dims.lq, dims.lk); // varlen: sequence b's own Lk

        Scratch& s = scratch[worker];
        s.qt.resize(group * dims.d * kQueryBlock);
        s.st.resize(kKeyBlock * kScoreStride);
        s.m.resize(group * kQueryBlock);
        s.l.resize(group * kQueryBlock);
        s.alpha.resize(kQueryBlock);
        s.best.assign(group * kQueryBlock, kNegInf);
        s.best_key.assign(group * kQueryBlock, -1);

        // Qᵀ with the scale folded in (scores come out scaled; exact for D = 64, where
        // scale = 1/8), zero columns past the last row; running max -inf, sum 0; output 0.
        for (std::size_t g = 0; g < group; ++g) {
            const std::size_t h = hk * group + g;
            const float* q_blk = q.data() + ((b * dims.h + h) * dims.lq + i0) * dims.d;
            float* qt = s.qt.data() + g * dims.d * kQueryBlock;
            for (std::size_t x = 0; x < dims.d; ++x) {
                for (std::size_t r = 0; r < kQueryBlock; ++r) {
                    qt[x * kQueryBlock + r] = r < rows ? scale * q_blk[r * dims.d + x] : 0.0f;
                }
            }
            std::fill_n(s.m.data() + g * kQueryBlock, kQueryBlock, kNegInf);
            std::fill_n(s.l.data() + g * kQueryBlock, kQueryBlock, 0.0f);
            float* o_blk = result.output.data() + ((b * dims.h + h) * dims.lq + i0) * dims.dv;
            std::fill_n(o_blk, rows * dims.dv, 0.0f);
        }

        // Keys outside `any` are invisible to every row of the block (skipped: causal
        // attention costs about half, a window less); keys inside `all` are visible to
        // every row (no per-score test of the key rule there).
        const KeyRange any = rule.any_keys(i0, i0 + rows - 1);
        const KeyRange all = rule.all_keys(i0, i0 + rows - 1);
        const std::size_t key_end = any.end;

        for (std::size_t j0 = any.begin; j0 < key_end; j0 += kKeyBlock) {
            const std::size_t kb = std::min(kKeyBlock, key_end - j0);
            // A block whose keys are all padding is skipped whole.
            if (pad_row != nullptr && std::all_of(pad_row + j0,
                                                  pad_row + j0 + kb,
                                                  [](std::uint8_t p) { return p == 0; })) {
                continue;
            }
            const bool edge = j0 < all.begin || j0 + kb > all.end;
            const std::size_t next_j0 = std::min(j0 + kb, key_end);
            const std::size_t next_kb = std::min(kKeyBlock, key_end - next_j0);
            for (std::size_t g = 0; g < group; ++g) {
                const std::size_t h = hk * group + g;
                float* st = s.st.data();
                float* m = s.m.data() + g * kQueryBlock;
                float* l = s.l.data() + g * kQueryBlock;
                float* o_blk = result.output.data() + ((b * dims.h + h) * dims.lq + i0) * dims.dv;

                // pass 1: St[kb, QB] = K_block · (scale · Q_block)ᵀ. The micro-GEMM
                // broadcasts K entries against Qᵀ rows, so neither K nor V is repacked.
                // The group's first head pulls this block's V toward L2 meanwhile.
                ops.gemm({.m = kb,
                          .n = kQueryBlock,
                          .k = dims.d,
                          .a = k_head + j0 * dims.d,
                          .a_row = dims.d,
                          .a_col = 1,
                          .b = s.qt.data() + g * dims.d * kQueryBlock,
                          .ldb = kQueryBlock,
                          .c = st,
                          .ldc = kScoreStride,
                          .prefetch = v_head + j0 * dims.dv,
                          .prefetch_bytes = g == 0 ? kb * dims.dv * sizeof(float) : 0});

                // pass 2: softcap, bias, ALiBi, then masks. A blocked key (masks, a -inf
                // bias) becomes exactly -inf even when its score is NaN (blocking wins);
                // only blocks that need it pay.
                if (spec.softcap) {
                    const float cap = *spec.softcap;
                    for (std::size_t j = 0; j < kb; ++j) {
                        for (std::size_t r = 0; r < rows; ++r) {
                            float& x = st[j * kScoreStride + r];
                            x = cap * std::tanh(x / cap);
                        }
                    }
                }
                if (spec.bias != nullptr) {
                    for (std::size_t r = 0; r < rows; ++r) {
                        const float* bias_row =
                            spec.bias->data() + pair_row_offset(*spec.bias, b, h, i0 + r);
                        for (std::size_t j = 0; j < kb; ++j) {
                            // A -inf bias blocks as a mask does, even a NaN score.
                            const float bj = bias_row[j0 + j];
                            float& x = st[j * kScoreStride + r];
                            x = bj == kNegInf ? kNegInf : x + bj;
                        }
                    }
                }
                if (!spec.alibi_slopes.empty()) {
                    const float slope = spec.alibi_slopes[h];
                    for (std::size_t r = 0; r < rows; ++r) {
                        const std::int64_t diag = rule.diagonal(i0 + r);
                        for (std::size_t j = 0; j < kb; ++j) {
                            st[j * kScoreStride + r] += detail::alibi_bias(slope, diag, j0 + j);
                        }
                    }
                }
                if (spec.keep_mask != nullptr) {
                    for (std::size_t r = 0; r < rows; ++r) {
                        const std::uint8_t* mask_row = pair_row(spec.keep_mask, b, h, i0 + r);
                        for (std::size_t j = 0; j < kb; ++j) {
                            if (!masks_keep(mask_row, nullptr, j0 + j)) {
                                st[j * kScoreStride + r] = kNegInf;
                            }
                        }
                    }
                }
                if (pad_row != nullptr) {
                    for (std::size_t j = 0; j < kb; ++j) {
                        if (!masks_keep(nullptr, pad_row, j0 + j)) {
                            std::fill_n(st + j * kScoreStride, kScoreColumns, kNegInf);
                        }
                    }
                }
                if (edge) {
                    // Keys of the block outside a row's range: [j0, begin) and [end, j0 + kb).
                    for (std::size_t r = 0; r < rows; ++r) {
                        const KeyRange keys = rule.keys(i0 + r);
                        for (std::size_t j = j0; j < j0 + kb; ++j) {
                            if (!keys.contains(j)) {
                                st[(j - j0) * kScoreStride + r] = kNegInf;
                            }
                        }
                    }
                }
                if (spec.want_argmax) {
                    // The largest final score is the largest weight; blocks run in key
                    // order and only a strictly larger score wins, so ties keep the
                    // first key, as in attend_materialized.
                    float* best = s.best.data() + g * kQueryBlock;
                    std::int64_t* best_key = s.best_key.data() + g * kQueryBlock;
                    for (std::size_t j = 0; j < kb; ++j) {
                        for (std::size_t r = 0; r < rows; ++r) {
                            const float x = st[j * kScoreStride + r];
                            if (x > best[r]) {
                                best[r] = x;
                                best_key[r] = static_cast<std::int64_t>(j0 + j);
                            }
                        }
                    }
                }

                // pass 3: online softmax (Milakov & Gimelshein 2018, "Online normalizer
                // calculation for softmax"; Rabe & Staats 2021, "Self-attention does not
                // need O(n²) memory"). Per query row, with m the running max and l the
                // running sum of exp(s - m):
                //   m' = max(m, max_j s_j)      alpha = exp(m - m')   (1 if m' == m)
                //   p_j = exp(s_j - m')         l' = l·alpha + sum_j p_j
                //   O' = O·alpha + sum_j p_j·V_j
                // exp(-inf - m') is exactly 0, so masked keys add nothing; a NaN score
                // never becomes the max but makes p, l and the row's output NaN.
                const bool rescale = ops.online_softmax(st, kb, m, l, s.alpha.data());

                // pass 4: O = diag(alpha)·O + P·V_block, P read transposed from St. The
                // accumulator is rescaled only when some row's max grew. The group's last
                // head pulls the next K block toward L2 meanwhile.
                ops.gemm({.m = rows,
                          .n = dims.dv,
                          .k = kb,
                          .a = st,
                          .a_row = 1,
                          .a_col = kScoreStride,
                          .b = v_head + j0 * dims.dv,
                          .ldb = dims.dv,
                          .c = o_blk,
                          .ldc = dims.dv,
                          .accumulate = true,
                          .row_scale = rescale ? s.alpha.data() : nullptr,
                          .prefetch = k_head + next_j0 * dims.d,
                          .prefetch_bytes = g + 1 == group ? next_kb * dims.d * sizeof(float) : 0});
            }
        }

        // Normalise: O / l. l == 0 exactly when the row saw no key (a visible key adds
        // exp(0) = 1 at its row's max, a NaN one makes l NaN): zeros, as the contract says.
        // A sink logit joins the denominator at the end (it has no value row):
        //   m' = max(m, sink), l' = l·exp(m - m') + exp(sink - m'), O = O·exp(m - m') / l'.
        // A row that saw no key stays empty (zeros) even with a sink.
        std::int64_t empty_rows = 0;
        for (std::size_t g = 0; g < group; ++g) {
            const std::size_t h = hk * group + g;
            const float* l = s.l.data() + g * kQueryBlock;
            const float* m = s.m.data() + g * kQueryBlock;
            float* o_blk = result.output.data() + ((b * dims.h + h) * dims.lq + i0) * dims.dv;
            for (std::size_t r = 0; r < rows; ++r) {
                const std::size_t row = (b * dims.h + h) * dims.lq + i0 + r;
                if (result.diagnostics.argmax) {
                    result.diagnostics.argmax->data()[row] =
                        static_cast<float>(s.best_key[g * kQueryBlock + r]);
                }
                float* o = o_blk + r * dims.dv;
                if (l[r] == 0.0f) {
                    std::fill_n(o, dims.dv, 0.0f);
                    if (result.diagnostics.lse) {
                        result.diagnostics.lse->data()[row] = kNegInf;
                    }
                    ++empty_rows;
                    continue;
                }
                // m is -inf only when just NaN scores were seen (they were taken at 0).
                const float m_row = m[r] == kNegInf ? 0.0f : m[r];
                float l_row = l[r];
                float shift = 1.0f;
                float m_fin = m_row;
                if (!spec.sinks.empty()) {
                    const float sink = spec.sinks[h];
                    if (sink > m_row) {
                        m_fin = sink;
                        shift = std::exp(m_row - sink);
                    }
                    l_row = l_row * shift + std::exp(sink - m_fin);
                }
                if (result.diagnostics.lse) {
                    result.diagnostics.lse->data()[row] = static_cast<float>(
                        static_cast<double>(m_fin) + std::log(static_cast<double>(l_row)));
                }
                const float inv = shift / l_row;
                for (std::size_t x = 0; x < dims.dv; ++x) {
                    o[x] *= inv;
                }
            }
        }
        masked_rows[worker] += empty_rows;
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

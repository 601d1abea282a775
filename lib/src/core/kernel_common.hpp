// What the attention drivers share: index helpers (the query block that makes one task;
// which keys a row sees is attn/visibility.hpp's KeyRule), the scalar instantiation of the
// score pipeline (kernel_score-inl.h: RowScores, one row's final scores) and the scalar
// feature row of the materialized driver, templated on the element type (float or
// double). No SIMD here: the vectorised paths live in kernel_ops.
// Legend: B batch, H query heads, Lq queries, Lk keys.
#pragma once

#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/huge_pages.hpp"
#include "attn/visibility.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <hwy/highway.h>
#include <initializer_list>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

// The score pipeline for Highway's static target (scalar code: no target attributes).
#include "core/kernel_score-inl.h"

namespace attn::detail {

/// The score pipeline's scalar instantiation (kernel_score-inl.h, static target).
namespace score = HWY_NAMESPACE;
template <class T> using Scalar = score::ScalarLanes<T>;

/// QB: query rows per task. Fixed (never derived from the thread count) so results are
/// bit-identical for every thread count; 64 = one micro-kernel panel of 4 x 16 floats.
constexpr std::size_t kQueryBlock = 64;

/// The sizes of one attention call: Q [B, H, Lq, D], K [Bk, Hkv, Lk, D], V [Bk, Hkv, Lk, Dv]
/// (Bk is B or 1; Hkv divides H once attend() has checked the shapes).
struct Dims {
    std::size_t b;
    std::size_t h;
    std::size_t lq;
    std::size_t d;
    std::size_t bk;
    std::size_t hkv;
    std::size_t lk;
    std::size_t dv;

    /// Of rank-4 tensors or views (anything with shape()).
    template <class Q>
    Dims(const Q& q, const Q& k, const Q& v)
        : b(q.shape()[0]), h(q.shape()[1]), lq(q.shape()[2]), d(q.shape()[3]), bk(k.shape()[0]),
          hkv(k.shape()[1]), lk(k.shape()[2]), dv(v.shape()[3]) {}

    /// G: query heads per key/value head (grouped-query attention).
    std::size_t group() const { return h / hkv; }
};

/// The product of `factors`, saturating at 2^64 - 1 (workspace sizes of absurd shapes).
inline std::uint64_t saturating_product(std::initializer_list<std::uint64_t> factors) {
    std::uint64_t out = 1;
    for (const std::uint64_t f : factors) {
        if (f != 0 && out > std::numeric_limits<std::uint64_t>::max() / f) {
            return std::numeric_limits<std::uint64_t>::max();
        }
        out *= f;
    }
    return out;
}

/// a + b, saturating at 2^64 - 1.
inline std::uint64_t saturating_sum(std::uint64_t a, std::uint64_t b) {
    return a > std::numeric_limits<std::uint64_t>::max() - b
               ? std::numeric_limits<std::uint64_t>::max()
               : a + b;
}

/// The query rows one task of the materialized kernels owns: rows [i0, i0 + rows) of head
/// h of batch b.
struct QueryBlockTask {
    std::size_t b;
    std::size_t h;
    std::size_t i0;
    std::size_t rows;
};

/// Task `task` of B·H·blocks (blocks = ceil(Lq / QB)), each head's blocks in reverse order:
/// under a causal mask the longest blocks go first, so the last tasks to finish are short.
inline QueryBlockTask
query_block_task(std::size_t task, std::size_t blocks, std::size_t n_h, std::size_t lq) {
    const std::size_t blk = blocks - 1 - task % blocks;
    const std::size_t i0 = blk * kQueryBlock;
    return {task / (blocks * n_h), (task / blocks) % n_h, i0, std::min(kQueryBlock, lq - i0)};
}

/// Where a task's [rows, Lk] scores, then weights, live: rows from `first_row` on of the
/// returned weights when there are any, else the worker's scratch (QB x Lk, reused; what
/// spec.weights_to's `store` gets).
template <class T>
T* block_weights(std::optional<xt::xtensor<T, 4>>& weights,
                 std::vector<T>& scratch,
                 std::size_t first_row,
                 std::size_t lk) {
    if (weights) {
        return weights->data() + first_row * lk;
    }
    scratch.resize(kQueryBlock * lk);
    return scratch.data();
}

/// Exact zeros in the output rows [rows, Dv] of a block that saw no key (empty[r]), even
/// if V holds inf or NaN.
template <class T>
void zero_empty_rows(T* o_blk,
                     const std::array<bool, kQueryBlock>& empty,
                     std::size_t rows,
                     std::size_t dv) {
    for (std::size_t r = 0; r < rows; ++r) {
        if (empty[r]) {
            std::fill(o_blk + r * dv, o_blk + (r + 1) * dv, T{0});
        }
    }
}

/// Any per-score feature the vectorised softmax_row does not cover.
template <class T> bool has_row_features(const BasicAttentionSpec<T>& spec) {
    return spec.window.bounded() || spec.softcap.has_value() || !spec.alibi_slopes.empty() ||
           !spec.sinks.empty() || spec.want_lse || spec.want_entropy || spec.want_argmax ||
           spec.top_k > 0;
}

/// `t` with shape `shape`: its storage kept when it already has that shape (a caller-owned
/// result reused across calls, as BLAS's C), else freshly allocated, on huge pages when
/// `huge` (the output: up to 19 ms less CPU at L = 4096; not the Lq x Lk weights, whose
/// 512 MB made compaction stall the faults: 496 ms median against 422 ms without).
/// The contents are left for the kernel, which overwrites every element.
template <class T>
void fit_tensor(xt::xtensor<T, 4>& t, const std::array<std::size_t, 4>& shape, bool huge = false) {
    if (t.shape() != shape) {
        t = huge ? uninitialized_tensor<T>(shape) : xt::xtensor<T, 4>::from_shape(shape);
    }
}

/// fit_tensor() on an optional tensor when `wanted`; otherwise the tensor is dropped.
template <class T>
void fit_optional(std::optional<xt::xtensor<T, 4>>& t,
                  bool wanted,
                  const std::array<std::size_t, 4>& shape) {
    if (!wanted) {
        t.reset();
    } else if (!t) {
        t = xt::xtensor<T, 4>::from_shape(shape);
    } else {
        fit_tensor(*t, shape);
    }
}

/// Makes `result` hold what a kernel returns for these sizes and this spec: output
/// [B, H, Lq, Dv]; the diagnostics spec.want_* asks for ([B, H, Lq, 1] each, top-k
/// [B, H, Lq, K]); rows_fully_masked 0. Only the materialized kernels (`whole_rows`) return
/// weights ([B, H, Lq, Lk] iff spec.want_weights), entropy and top-k. Storage of the right
/// shape is kept (attend_into), anything else is allocated or dropped.
template <class T>
void fit_result(BasicAttentionResult<T>& result,
                const Dims& dims,
                const BasicAttentionSpec<T>& spec,
                bool whole_rows) {
    const std::array<std::size_t, 4> one{dims.b, dims.h, dims.lq, 1};
    fit_tensor(result.output, {dims.b, dims.h, dims.lq, dims.dv}, true);
    const bool to_caller = whole_rows && spec.want_weights && spec.weights_to != nullptr;
    ATTN_ASSERT(!to_caller || spec.weights_to->size == dims.b * dims.h * dims.lq * dims.lk);
    ATTN_ASSERT(!to_caller || spec.weights_to->store);
    fit_optional(result.weights,
                 whole_rows && spec.want_weights && !to_caller,
                 {dims.b, dims.h, dims.lq, dims.lk});
    BasicRowDiagnostics<T>& diag = result.diagnostics;
    fit_optional(diag.lse, spec.want_lse, one);
    fit_optional(diag.argmax, spec.want_argmax, one);
    fit_optional(diag.entropy, whole_rows && spec.want_entropy, one);
    const bool top_k = whole_rows && spec.top_k > 0;
    fit_optional(diag.top_k_indices, top_k, {dims.b, dims.h, dims.lq, spec.top_k});
    fit_optional(diag.top_k_weights, top_k, {dims.b, dims.h, dims.lq, spec.top_k});
    result.rows_fully_masked = 0;
}

/// Where one row's diagnostics go (each pointer null when not asked for).
template <class T> struct RowOut {
    T* lse = nullptr;
    T* entropy = nullptr;
    T* argmax = nullptr;
    T* top_idx = nullptr; // [K]
    T* top_w = nullptr;   // [K]
};

/// The diagnostics of row `row` (= (b·H + h)·Lq + i) in `diag`, allocated as above.
template <class T>
RowOut<T> row_out(BasicRowDiagnostics<T>& diag, std::size_t row, std::size_t top_k) {
    RowOut<T> out;
    out.lse = diag.lse ? diag.lse->data() + row : nullptr;
    out.entropy = diag.entropy ? diag.entropy->data() + row : nullptr;
    out.argmax = diag.argmax ? diag.argmax->data() + row : nullptr;
    if (top_k > 0) {
        out.top_idx = diag.top_k_indices->data() + row * top_k;
        out.top_w = diag.top_k_weights->data() + row * top_k;
    }
    return out;
}

/// One query row's side of the score pipeline in scalar T: its steps (the spec's scale,
/// softcap, bias and ALiBi) and what they read (the bias, keep-mask and padding rows, the
/// keys its KeyRule lets it see, its ALiBi slope and diagonal). operator()(raw, j) is key
/// j's final score: score::final_score over these, -inf when the key is blocked.
template <class T> struct RowScores {
    score::ScoreSteps<T> steps;
    KeyRange visible;
    const T* bias = nullptr;
    const std::uint8_t* mask = nullptr;
    const std::uint8_t* pad = nullptr;
    T slope = T{0};
    std::int64_t diag = 0;

    /// Row i of head h under `rule` (batch b's). `scale`: the scale to apply, or none
    /// where the raw scores already carry it (the streaming kernel scales Q).
    RowScores(const BasicAttentionSpec<T>& spec,
              std::optional<T> scale,
              const KeyRule& rule,
              std::size_t b,
              std::size_t h,
              std::size_t i,
              const std::uint8_t* pad_row)
        : visible(rule.keys(i)), bias(pair_row(spec.bias, b, h, i)),
          mask(pair_row(spec.keep_mask, b, h, i)), pad(pad_row),
          slope(spec.alibi_slopes.empty() ? T{0} : spec.alibi_slopes[h]), diag(rule.diagonal(i)) {
        steps.scale = scale.has_value();
        steps.scale_by = scale.value_or(T{1});
        steps.softcap = spec.softcap.has_value();
        steps.cap = spec.softcap.value_or(T{1});
        steps.bias = bias != nullptr;
        steps.alibi = !spec.alibi_slopes.empty();
    }

    /// Whether the rule, the keep-mask and the padding let key j through (a -inf bias
    /// blocks too: operator() adds that).
    bool passes(std::size_t j) const { return visible.contains(j) && masks_keep(mask, pad, j); }

    T operator()(T raw, std::size_t j) const {
        const T b = bias != nullptr ? bias[j] : T{0};
        const bool keep = score::keep_unless_bias_blocks<Scalar<T>>(passes(j), steps.bias, b);
        const T alibi = steps.alibi ? score::alibi_term(slope, diag, j) : T{0};
        return score::final_score<Scalar<T>>(raw, steps, b, alibi, keep);
    }
};

/// The scalar weights row behind the score features (window, softcap, ALiBi, sinks and
/// the diagnostics), in T = float (attend_materialized, where the vectorised
/// ops.softmax_row covers the plain case) or T = double (every row of the float64 driver).
/// Over keys j < n (the causal limit; keys from n to lk get weight 0): x_j = scores(s_j, j)
/// (the pipeline's transform: RowScores), then the pipeline's row statistics with the
/// sink: w_j = exp(x_j - m) / (exp(sink - m) + sum_j exp(x_j - m)), m = max(max_j x_j, sink).
/// Scores, exponentials and weights are computed in T; the sum and the entropy accumulate
/// in double for both. Returns false when no key is visible (the caller zeros the row; a
/// sink alone does not make a row visible).
template <class T>
bool feature_row(T* s,
                 std::size_t n,
                 std::size_t lk,
                 const RowScores<T>& scores,
                 const BasicAttentionSpec<T>& spec,
                 std::size_t h,
                 const RowOut<T>& out) {
    using L = Scalar<T>;
    // pass 1: final scores, row max and argmax (first key on ties).
    T row_max = L::neg_inf();
    std::int64_t best = -1;
    bool any_visible = false;
    // Top-k candidates: every visible key with a number for a score, kept even when its
    // weight rounds to 0 (-1 in top_k means "no visible key", never "weight underflowed").
    std::vector<std::size_t> keys;
    for (std::size_t j = 0; j < n; ++j) {
        const T x = scores(s[j], j);
        s[j] = x;
        any_visible = any_visible || L::any_visible(x);
        if (out.top_idx != nullptr && x != L::neg_inf() && !std::isnan(x)) {
            keys.push_back(j);
        }
        score::take_if_larger(x, j, row_max, best);
    }
    if (out.argmax != nullptr) {
        *out.argmax = static_cast<T>(best);
    }
    if (out.top_idx != nullptr) {
        std::fill_n(out.top_idx, spec.top_k, T{-1});
        std::fill_n(out.top_w, spec.top_k, T{0});
    }
    if (!any_visible) {
        if (out.lse != nullptr) {
            *out.lse = L::neg_inf();
        }
        if (out.entropy != nullptr) {
            *out.entropy = T{0};
        }
        return false;
    }
    // pass 2: exponentials against the base; the sink raises the base first (the whole
    // row is known) and joins the denominator.
    T base = score::exp_base<L>(row_max);
    double sum = 0.0;
    if (!spec.sinks.empty()) {
        base = score::raise_base<L>(base, spec.sinks[h]).base;
        sum = static_cast<double>(score::sink_weight<L>(spec.sinks[h], base));
    }
    for (std::size_t j = 0; j < n; ++j) {
        s[j] = score::exp_weight<L>(s[j], base); // exactly 0 for blocked keys
        sum += static_cast<double>(s[j]);
    }
    // pass 3: normalise; entropy over the nonzero weights.
    const T inv = score::inverse_sum<T>(sum);
    double entropy = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        s[j] *= inv;
        if (s[j] > T{0}) {
            entropy -= static_cast<double>(s[j]) * std::log(static_cast<double>(s[j]));
        }
    }
    std::fill(s + n, s + lk, T{0});
    if (out.lse != nullptr) {
        *out.lse = score::log_sum_exp(base, sum);
    }
    if (out.entropy != nullptr) {
        *out.entropy = static_cast<T>(entropy);
    }
    if (out.top_idx != nullptr) {
        // The K largest weights of visible keys, largest first, lower key first on ties.
        const std::size_t kk = std::min(spec.top_k, keys.size());
        std::partial_sort(
            keys.begin(),
            keys.begin() + static_cast<std::ptrdiff_t>(kk),
            keys.end(),
            [s](std::size_t a, std::size_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
        for (std::size_t t = 0; t < kk; ++t) {
            out.top_idx[t] = static_cast<T>(keys[t]);
            out.top_w[t] = s[keys[t]];
        }
    }
    return true;
}

/// Pass 2 of the materialized kernels over one task's rows [i0, i0 + rows) of head (b, h):
/// each row r of unscaled scores p[r·Lk + j] becomes its weights, through feature_row when
/// `features`, else through plain_row(srow, limit, bias_row, mask_row, pad_row) -> visible
/// (the float driver's vectorised softmax_row; the double driver passes features = true and
/// plain_row = nullptr). Keys at or past a row's causal limit, up to `zero_end` (Lk; less
/// when the caller never reads the rest), get weight exactly 0; a row that sees no key gets
/// zeros and empty[r] = true. first_row = (b·H + h)·Lq + i0 locates the diagnostics.
/// Returns how many rows saw no key.
template <class T, class PlainRow>
std::int64_t weights_block(T* p,
                           std::array<bool, kQueryBlock>& empty,
                           const QueryBlockTask& task,
                           std::size_t first_row,
                           std::size_t lq,
                           std::size_t lk,
                           std::size_t zero_end,
                           T scale,
                           const BasicAttentionSpec<T>& spec,
                           BasicRowDiagnostics<T>& diag_out,
                           bool features,
                           const PlainRow& plain_row) {
    const KeyRule rule = key_rule(spec, task.b, lq, lk);
    const std::uint8_t* pad_row = padding_row(spec.key_padding, task.b, lk);
    std::int64_t empty_rows = 0;
    for (std::size_t r = 0; r < task.rows; ++r) {
        const std::size_t i = task.i0 + r;
        T* srow = p + r * lk;
        const std::size_t limit = rule.causal_end(i);
        const T* bias_row = pair_row(spec.bias, task.b, task.h, i);
        const std::uint8_t* mask_row = pair_row(spec.keep_mask, task.b, task.h, i);
        bool visible = false;
        if (features) {
            visible = feature_row(srow,
                                  limit,
                                  lk,
                                  RowScores<T>(spec, scale, rule, task.b, task.h, i, pad_row),
                                  spec,
                                  task.h,
                                  row_out(diag_out, first_row + r, spec.top_k));
        } else if constexpr (!std::is_null_pointer_v<PlainRow>) {
            visible = plain_row(srow, limit, bias_row, mask_row, pad_row);
        }
        if (!visible) {
            // No key visible: the contract gives a zero row (PyTorch would give NaN).
            std::fill(srow, srow + lk, T{0});
            empty[r] = true;
            ++empty_rows;
            continue;
        }
        std::fill(srow + limit, srow + std::max(limit, zero_end), T{0});
    }
    return empty_rows;
}

} // namespace attn::detail

// The float64 kernel (`precision: f64`): the reference-grade path for users checking their
// own kernels. Per (batch, head, block of 64 queries): scores against every key with one
// dgemm, a scalar double softmax carrying every feature and diagnostic, then P·V with one
// dgemm. Plain and simple on purpose: no SIMD, no key-block skipping beyond the causal
// limit, no online softmax. It never holds an Lq×Lk matrix unless weights are asked for.
//
// Legend: B batch, H query heads, Hkv key/value heads, Lq queries, Lk keys,
//         D query/key features, Dv value features, QB query rows per task.
#include "attn/kernels.hpp"
#include "blas.hpp"
#include "kernel_common.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace attn {

namespace {
using detail::kQueryBlock;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Where one row's diagnostics go (each pointer null when not asked for).
struct RowOut64 {
    double* lse = nullptr;
    double* entropy = nullptr;
    double* argmax = nullptr;
    double* top_idx = nullptr; // [K]
    double* top_w = nullptr;   // [K]
};

/// One weights row in double, the same definition as the float kernels' feature row.
/// Over keys j < n (the causal limit; keys from n to lk get weight 0):
///   x_j = scale·s_j; x_j = cap·tanh(x_j / cap); x_j += bias_j + slope·(j - diag);
///   x_j = -inf where the keep-mask, the padding or the window blocks key j;
///   m = max(max_j x_j, sink); w_j = exp(x_j - m) / (exp(sink - m) + sum_j exp(x_j - m)).
/// Returns false when no key is visible (a sink alone does not make a row visible).
bool softmax_row64(double* s,
                   std::size_t n,
                   std::size_t lk,
                   double scale,
                   const AttentionSpec64& spec,
                   std::size_t h,
                   std::int64_t diag,
                   const double* bias,
                   const std::uint8_t* mask,
                   const std::uint8_t* pad,
                   const RowOut64& out) {
    const bool window = spec.window.left >= 0 || spec.window.right >= 0;
    const double slope = spec.alibi_slopes.empty() ? 0.0 : spec.alibi_slopes[h];
    // pass 1: final scores, row max and argmax (first key on ties).
    double row_max = kNegInf;
    std::int64_t best = -1;
    bool any_visible = false;
    for (std::size_t j = 0; j < n; ++j) {
        double x = s[j] * scale;
        if (spec.softcap) {
            x = *spec.softcap * std::tanh(x / *spec.softcap);
        }
        if (bias != nullptr) {
            x += bias[j];
        }
        if (!spec.alibi_slopes.empty()) {
            const std::int64_t d = static_cast<std::int64_t>(j) - diag;
            x -= slope * static_cast<double>(d < 0 ? -d : d); // -slope·|j - diag|
        }
        if ((mask != nullptr && mask[j] == 0) || (pad != nullptr && pad[j] == 0) ||
            (window && !detail::window_sees(spec.window, diag, j))) {
            x = kNegInf;
        }
        s[j] = x;
        any_visible = any_visible || x != kNegInf; // NaN counts as visible: it propagates
        if (x > row_max) {
            row_max = x;
            best = static_cast<std::int64_t>(j);
        }
    }
    std::fill(s + n, s + lk, 0.0);
    if (out.argmax != nullptr) {
        *out.argmax = static_cast<double>(best);
    }
    if (out.top_idx != nullptr) {
        std::fill_n(out.top_idx, spec.top_k, -1.0);
        std::fill_n(out.top_w, spec.top_k, 0.0);
    }
    if (!any_visible) {
        if (out.lse != nullptr) {
            *out.lse = kNegInf;
        }
        if (out.entropy != nullptr) {
            *out.entropy = 0.0;
        }
        return false;
    }
    // pass 2: max-subtracted exponentials; the sink joins the max and the denominator.
    const bool sink = !spec.sinks.empty();
    if (sink && spec.sinks[h] > row_max) {
        row_max = spec.sinks[h];
    }
    if (row_max == kNegInf) {
        row_max = 0.0; // only NaN scores are visible: they stay NaN
    }
    double sum = sink ? std::exp(spec.sinks[h] - row_max) : 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        s[j] = std::exp(s[j] - row_max); // exp(-inf) = 0 for blocked keys
        sum += s[j];
    }
    // pass 3: normalise; entropy over the nonzero weights.
    const double inv = 1.0 / sum;
    double entropy = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        s[j] *= inv;
        if (s[j] > 0.0) {
            entropy -= s[j] * std::log(s[j]);
        }
    }
    if (out.lse != nullptr) {
        *out.lse = row_max + std::log(sum);
    }
    if (out.entropy != nullptr) {
        *out.entropy = entropy;
    }
    if (out.top_idx != nullptr) {
        // The K largest nonzero weights, largest first, lower key first on ties.
        std::vector<std::size_t> keys;
        for (std::size_t j = 0; j < n; ++j) {
            if (s[j] > 0.0) {
                keys.push_back(j);
            }
        }
        const std::size_t kk = std::min(spec.top_k, keys.size());
        std::partial_sort(
            keys.begin(),
            keys.begin() + static_cast<std::ptrdiff_t>(kk),
            keys.end(),
            [s](std::size_t a, std::size_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
        for (std::size_t t = 0; t < kk; ++t) {
            out.top_idx[t] = static_cast<double>(keys[t]);
            out.top_w[t] = s[keys[t]];
        }
    }
    return true;
}

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
    const double scale =
        spec.scale ? *spec.scale : (d > 0 ? 1.0 / std::sqrt(static_cast<double>(d)) : 1.0);
    const bool bottom_right =
        spec.causal == Causal::bottom_right || spec.align == Align::bottom_right;
    const std::int64_t diag0 =
        bottom_right ? static_cast<std::int64_t>(lk) - static_cast<std::int64_t>(lq) : 0;

    AttentionResult64 result;
    result.output = Tensor64::from_shape({n_b, n_h, lq, dv});
    if (spec.want_weights) {
        result.weights = Tensor64::from_shape({n_b, n_h, lq, lk});
    }
    RowDiagnostics64& diag_out = result.diagnostics;
    if (spec.want_lse) {
        diag_out.lse = Tensor64::from_shape({n_b, n_h, lq, 1});
    }
    if (spec.want_entropy) {
        diag_out.entropy = Tensor64::from_shape({n_b, n_h, lq, 1});
    }
    if (spec.want_argmax) {
        diag_out.argmax = Tensor64::from_shape({n_b, n_h, lq, 1});
    }
    if (spec.top_k > 0) {
        diag_out.top_k_indices = Tensor64::from_shape({n_b, n_h, lq, spec.top_k});
        diag_out.top_k_weights = Tensor64::from_shape({n_b, n_h, lq, spec.top_k});
    }

    const std::size_t blocks = (lq + kQueryBlock - 1) / kQueryBlock;
    const std::size_t tasks = n_b * n_h * blocks;
    const unsigned threads = detail::resolve_threads(spec.threads, tasks);
    detail::blas_single_threaded();
    std::vector<std::vector<double>> scratch(threads);
    std::vector<std::int64_t> masked_rows(threads, 0);

    detail::parallel_for(tasks, threads, [&](unsigned worker, std::size_t task) {
        const std::size_t blk = task % blocks;
        const std::size_t h = (task / blocks) % n_h;
        const std::size_t b = task / (blocks * n_h);
        const std::size_t i0 = blk * kQueryBlock;
        const std::size_t rows = std::min(kQueryBlock, lq - i0);
        const std::size_t bk = n_bk == 1 ? 0 : b;
        const std::size_t hk = h / group;

        const double* q_blk = q.data() + ((b * n_h + h) * lq + i0) * d;
        const double* k_head = k.data() + (bk * n_hkv + hk) * lk * d;
        const double* v_head = v.data() + (bk * n_hkv + hk) * lk * dv;
        double* o_blk = result.output.data() + ((b * n_h + h) * lq + i0) * dv;
        const std::uint8_t* pad_row = detail::padding_row(spec.key_padding, b, lk);

        double* p = nullptr; // [rows, Lk] scores, then weights
        if (result.weights) {
            p = result.weights->data() + ((b * n_h + h) * lq + i0) * lk;
        } else {
            auto& buf = scratch[worker];
            buf.resize(kQueryBlock * lk);
            p = buf.data();
        }

        // Keys past the last row's causal limit are invisible to the whole block: left out
        // of both GEMMs (as in the float kernels, so inf/NaN there cannot leak in as 0·inf).
        const std::size_t n_vis = detail::causal_visible(spec.causal, i0 + rows - 1, lq, lk);

        // pass 1: unscaled scores = Q_blk · Kᵀ (the row pass scales, as the float kernels do).
        detail::dgemm(rows, n_vis, d, 1.0, q_blk, d, k_head, d, true, 0.0, p, lk);

        // pass 2: per row, features, masks and the softmax.
        std::vector<bool> empty(rows, false);
        std::int64_t empty_rows = 0;
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t i = i0 + r;
            double* srow = p + r * lk;
            const std::size_t row = (b * n_h + h) * lq + i;
            RowOut64 out;
            out.lse = diag_out.lse ? diag_out.lse->data() + row : nullptr;
            out.entropy = diag_out.entropy ? diag_out.entropy->data() + row : nullptr;
            out.argmax = diag_out.argmax ? diag_out.argmax->data() + row : nullptr;
            if (spec.top_k > 0) {
                out.top_idx = diag_out.top_k_indices->data() + row * spec.top_k;
                out.top_w = diag_out.top_k_weights->data() + row * spec.top_k;
            }
            const double* bias_row =
                spec.bias ? spec.bias->data() + detail::pair_row_offset(*spec.bias, b, h, i)
                          : nullptr;
            const std::uint8_t* mask_row =
                spec.keep_mask
                    ? spec.keep_mask->data() + detail::pair_row_offset(*spec.keep_mask, b, h, i)
                    : nullptr;
            const bool visible = softmax_row64(srow,
                                               detail::causal_visible(spec.causal, i, lq, lk),
                                               lk,
                                               scale,
                                               spec,
                                               h,
                                               static_cast<std::int64_t>(i) + diag0,
                                               bias_row,
                                               mask_row,
                                               pad_row,
                                               out);
            if (!visible) {
                // No key visible: the contract gives a zero row (PyTorch would give NaN).
                std::fill(srow, srow + lk, 0.0);
                empty[r] = true;
                ++empty_rows;
            }
        }
        masked_rows[worker] += empty_rows;

        // pass 3: output = P · V, then exact zeros for rows that saw no key (even if V
        // holds inf or NaN).
        detail::dgemm(rows, dv, n_vis, 1.0, p, lk, v_head, dv, false, 0.0, o_blk, dv);
        for (std::size_t r = 0; r < rows; ++r) {
            if (empty[r]) {
                std::fill(o_blk + r * dv, o_blk + (r + 1) * dv, 0.0);
            }
        }
    });

    for (const auto n : masked_rows) {
        result.rows_fully_masked += n;
    }
    return result;
}

} // namespace attn

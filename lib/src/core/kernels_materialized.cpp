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

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace attn {

namespace {
using detail::kQueryBlock;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// Where one row's diagnostics go (each pointer null when not asked for).
struct RowOut {
    float* lse = nullptr;
    float* entropy = nullptr;
    float* argmax = nullptr;
    float* top_idx = nullptr; // [K]
    float* top_w = nullptr;   // [K]
};

/// The scalar weights row behind the issue-7 features (window, softcap, ALiBi, sinks and
/// the diagnostics); the vectorised ops.softmax_row covers the plain case. Over j < n:
///   x_j = scale·s_j; x_j = cap·tanh(x_j / cap); x_j += bias_j + slope·(j - diag);
///   x_j = -inf where a mask, the padding or the window blocks key j;
///   m = max(max_j x_j, sink); w_j = exp(x_j - m) / (exp(sink - m) + sum_j exp(x_j - m)).
/// Returns false when no key is visible (the caller zeros the row; a sink alone does not
/// make a row visible).
bool feature_row(float* s,
                 std::size_t n,
                 std::size_t lk,
                 float scale,
                 const AttentionSpec& spec,
                 std::size_t h,
                 std::int64_t diag,
                 const float* bias,
                 const std::uint8_t* mask,
                 const std::uint8_t* pad,
                 const RowOut& out) {
    const bool window = detail::has_window(spec);
    const float slope = spec.alibi_slopes.empty() ? 0.0f : spec.alibi_slopes[h];
    float row_max = kNegInf;
    std::int64_t best = -1;
    bool any_visible = false;
    for (std::size_t j = 0; j < n; ++j) {
        float x = s[j] * scale;
        if (spec.softcap) {
            x = *spec.softcap * std::tanh(x / *spec.softcap);
        }
        if (bias != nullptr) {
            x += bias[j];
        }
        if (!spec.alibi_slopes.empty()) {
            x += detail::alibi_bias(slope, diag, j);
        }
        if ((mask != nullptr && mask[j] == 0) || (pad != nullptr && pad[j] == 0) ||
            (window && !detail::window_sees(spec.window, diag, j))) {
            x = kNegInf;
        }
        s[j] = x;
        any_visible = any_visible || x != kNegInf;
        if (x > row_max) {
            row_max = x;
            best = static_cast<std::int64_t>(j);
        }
    }
    if (out.argmax != nullptr) {
        *out.argmax = static_cast<float>(best);
    }
    if (out.top_idx != nullptr) {
        std::fill_n(out.top_idx, spec.top_k, -1.0f);
        std::fill_n(out.top_w, spec.top_k, 0.0f);
    }
    if (!any_visible) {
        if (out.lse != nullptr) {
            *out.lse = kNegInf;
        }
        if (out.entropy != nullptr) {
            *out.entropy = 0.0f;
        }
        return false;
    }
    const bool sink = !spec.sinks.empty();
    if (sink && spec.sinks[h] > row_max) {
        row_max = spec.sinks[h];
    }
    if (row_max == kNegInf) {
        row_max = 0.0f; // only NaN scores are visible: they stay NaN
    }
    double sum = sink ? static_cast<double>(std::exp(spec.sinks[h] - row_max)) : 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        s[j] = std::exp(s[j] - row_max);
        sum += static_cast<double>(s[j]);
    }
    const float inv = static_cast<float>(1.0 / sum);
    double entropy = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        s[j] *= inv;
        if (s[j] > 0.0f) {
            entropy -= static_cast<double>(s[j]) * std::log(static_cast<double>(s[j]));
        }
    }
    std::fill(s + n, s + lk, 0.0f);
    if (out.lse != nullptr) {
        *out.lse = static_cast<float>(static_cast<double>(row_max) + std::log(sum));
    }
    if (out.entropy != nullptr) {
        *out.entropy = static_cast<float>(entropy);
    }
    if (out.top_idx != nullptr) {
        // The K largest nonzero weights, largest first, lower key first on ties.
        std::vector<std::size_t> keys;
        for (std::size_t j = 0; j < n; ++j) {
            if (s[j] > 0.0f) {
                keys.push_back(j);
            }
        }
        const std::size_t kk = std::min(spec.top_k, keys.size());
        std::partial_sort(keys.begin(),
                          keys.begin() + static_cast<std::ptrdiff_t>(kk),
                          keys.end(),
                          [s](std::size_t a, std::size_t b) {
                              return s[a] > s[b] || (s[a] == s[b] && a < b);
                          });
        for (std::size_t t = 0; t < kk; ++t) {
            out.top_idx[t] = static_cast<float>(keys[t]);
            out.top_w[t] = s[keys[t]];
        }
    }
    return true;
}

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
    const float scale =
        spec.scale ? *spec.scale : (d > 0 ? 1.0f / std::sqrt(static_cast<float>(d)) : 1.0f);
    const detail::KernelOps& ops = detail::kernel_ops(spec.simd);

    AttentionResult result;
    result.output = Tensor::from_shape({n_b, n_h, lq, dv});
    if (spec.want_weights) {
        result.weights = Tensor::from_shape({n_b, n_h, lq, lk});
    }
    const bool features = detail::has_row_features(spec);
    const std::int64_t diag0 = detail::diagonal_offset(spec, lq, lk);
    RowDiagnostics& diag_out = result.diagnostics;
    if (spec.want_lse) {
        diag_out.lse = Tensor::from_shape({n_b, n_h, lq, 1});
    }
    if (spec.want_entropy) {
        diag_out.entropy = Tensor::from_shape({n_b, n_h, lq, 1});
    }
    if (spec.want_argmax) {
        diag_out.argmax = Tensor::from_shape({n_b, n_h, lq, 1});
    }
    if (spec.top_k > 0) {
        diag_out.top_k_indices = Tensor::from_shape({n_b, n_h, lq, spec.top_k});
        diag_out.top_k_weights = Tensor::from_shape({n_b, n_h, lq, spec.top_k});
    }

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
        const std::size_t blk = blocks - 1 - task % blocks; // longest causal blocks first
        const std::size_t h = (task / blocks) % n_h;
        const std::size_t b = task / (blocks * n_h);
        const std::size_t i0 = blk * kQueryBlock;
        const std::size_t rows = std::min(kQueryBlock, lq - i0);
        const std::size_t bk = n_bk == 1 ? 0 : b;
        const std::size_t hk = h / group;

        const float* q_blk = q.data() + ((b * n_h + h) * lq + i0) * d;
        const float* kt_head = kt.data() + (bk * n_hkv + hk) * d * lk;
        const float* v_head = v.data() + (bk * n_hkv + hk) * lk * dv;
        float* o_blk = result.output.data() + ((b * n_h + h) * lq + i0) * dv;
        const std::uint8_t* pad_row = detail::padding_row(spec.key_padding, b, lk);

        float* p = nullptr; // [rows, Lk] scores, then weights
        if (result.weights) {
            p = result.weights->data() + ((b * n_h + h) * lq + i0) * lk;
        } else {
            auto& buf = scratch[worker];
            buf.resize(kQueryBlock * lk);
            p = buf.data();
        }

        // Keys past the last row's causal limit are invisible to the whole block:
        // skip them in both GEMMs (causal costs about half).
        const std::size_t n_vis = detail::causal_visible(spec.causal, i0 + rows - 1, lq, lk);

        // pass 1: scores = Q_blk · Kᵀ[:, 0:n_vis] (unscaled; the softmax scales).
        ops.gemm(rows, n_vis, d, q_blk, d, 1, kt_head, lk, p, lk, false, nullptr);

        // pass 2: per row, scale, bias, masks and a max-subtracted softmax (vectorised);
        // keys past the row's causal limit get weight exactly 0.
        std::int64_t empty_rows = 0;
        std::array<bool, kQueryBlock> empty{};
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t i = i0 + r;
            float* srow = p + r * lk;
            const std::size_t limit = detail::causal_visible(spec.causal, i, lq, lk);
            const float* bias_row =
                spec.bias ? spec.bias->data() + detail::pair_row_offset(*spec.bias, b, h, i)
                          : nullptr;
            const std::uint8_t* mask_row =
                spec.keep_mask
                    ? spec.keep_mask->data() + detail::pair_row_offset(*spec.keep_mask, b, h, i)
                    : nullptr;
            bool visible = false;
            if (features) {
                const std::size_t row = (b * n_h + h) * lq + i;
                RowOut out;
                out.lse = diag_out.lse ? diag_out.lse->data() + row : nullptr;
                out.entropy = diag_out.entropy ? diag_out.entropy->data() + row : nullptr;
                out.argmax = diag_out.argmax ? diag_out.argmax->data() + row : nullptr;
                if (spec.top_k > 0) {
                    out.top_idx = diag_out.top_k_indices->data() + row * spec.top_k;
                    out.top_w = diag_out.top_k_weights->data() + row * spec.top_k;
                }
                visible = feature_row(srow,
                                      limit,
                                      lk,
                                      scale,
                                      spec,
                                      h,
                                      static_cast<std::int64_t>(i) + diag0,
                                      bias_row,
                                      mask_row,
                                      pad_row,
                                      out);
            } else {
                visible = ops.softmax_row(srow, limit, scale, bias_row, mask_row, pad_row);
            }
            if (!visible) {
                // No key visible: the contract gives a zero row (PyTorch would give NaN).
                std::fill(srow, srow + lk, 0.0f);
                empty[r] = true;
                ++empty_rows;
                continue;
            }
            std::fill(srow + limit, srow + lk, 0.0f);
        }
        masked_rows[worker] += empty_rows;

        // pass 3: output = P[:, 0:n_vis] · V[0:n_vis]
        ops.gemm(rows, dv, n_vis, p, lk, 1, v_head, dv, o_blk, dv, false, nullptr);
        if (empty_rows > 0) {
            // A fully masked row's output is exactly zero even if V holds inf or NaN.
            for (std::size_t r = 0; r < rows; ++r) {
                if (empty[r]) {
                    std::fill(o_blk + r * dv, o_blk + (r + 1) * dv, 0.0f);
                }
            }
        }
    });

    for (const auto n : masked_rows) {
        result.rows_fully_masked += n;
    }
    return result;
}

} // namespace attn

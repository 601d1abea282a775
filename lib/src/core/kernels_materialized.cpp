// The materialized kernel: for each (batch, head, block of queries) it computes the
// block's scores against the visible keys with one GEMM, applies bias and masks, takes
// a max-subtracted softmax per row, and multiplies by V with a second GEMM. Weights are
// written straight into the result when asked for; otherwise into a per-thread
// block x Lk scratch buffer, so memory stays linear in the sequence length.
//
// Legend: B batch, H query heads, Hkv key/value heads, Lq queries, Lk keys,
//         D query/key features, Dv value features, QB query rows per task.
#include "attn/kernels.hpp"

#include "blas.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace attn {

namespace {

constexpr std::size_t kQueryBlock = 64;  // QB: rows per task; fixed so results never
                                         // depend on the thread count.

/// How many leading keys query row i may see under the causal rule (all Lk if none).
std::size_t causal_visible(Causal causal, std::size_t i, std::size_t lq, std::size_t lk) {
    switch (causal) {
    case Causal::none:
        return lk;
    case Causal::top_left:
        return std::min(i + 1, lk);
    case Causal::bottom_right: {
        // j <= i + Lk - Lq  <=>  j < i + 1 + Lk - Lq, computed without unsigned wrap.
        const std::size_t end = i + 1 + lk;
        return end <= lq ? 0 : std::min(end - lq, lk);
    }
    }
    return lk;
}

/// Index of a broadcast [B|1, H|1, Lq, Lk] operand's row (b, h, i).
template <class T>
std::size_t pair_row_offset(const T& t, std::size_t b, std::size_t h, std::size_t i) {
    const auto& s = t.shape();
    const std::size_t bb = s[0] == 1 ? 0 : b;
    const std::size_t hh = s[1] == 1 ? 0 : h;
    return ((bb * s[1] + hh) * s[2] + i) * s[3];
}

}  // namespace

AttentionResult attend_materialized(const Tensor& q,
                                    const Tensor& k,
                                    const Tensor& v,
                                    const AttentionSpec& spec) {
    const std::size_t n_b = q.shape()[0];
    const std::size_t n_h = q.shape()[1];
    const std::size_t lq = q.shape()[2];
    const std::size_t d = q.shape()[3];
    const std::size_t n_bk = k.shape()[0];
    const std::size_t n_hkv = k.shape()[1];
    const std::size_t lk = k.shape()[2];
    const std::size_t dv = v.shape()[3];
    const std::size_t group = n_h / n_hkv;  // query heads per key/value head
    const float scale =
        spec.scale ? *spec.scale : (d > 0 ? 1.0f / std::sqrt(static_cast<float>(d)) : 1.0f);
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();

    AttentionResult result;
    result.output = Tensor::from_shape({n_b, n_h, lq, dv});
    if (spec.want_weights) {
        result.weights = Tensor::from_shape({n_b, n_h, lq, lk});
    }

    const std::size_t blocks = (lq + kQueryBlock - 1) / kQueryBlock;
    const std::size_t tasks = n_b * n_h * blocks;
    const unsigned threads = detail::resolve_threads(spec.threads, tasks);
    detail::blas_single_threaded();

    std::vector<std::vector<float>> scratch(threads);
    std::vector<std::int64_t> masked_rows(threads, 0);

    detail::parallel_for(tasks, threads, [&](unsigned worker, std::size_t task) {
        const std::size_t blk = task % blocks;
        const std::size_t h = (task / blocks) % n_h;
        const std::size_t b = task / (blocks * n_h);
        const std::size_t i0 = blk * kQueryBlock;
        const std::size_t rows = std::min(kQueryBlock, lq - i0);
        const std::size_t bk = n_bk == 1 ? 0 : b;
        const std::size_t hk = h / group;

        const float* q_blk = q.data() + ((b * n_h + h) * lq + i0) * d;
        const float* k_head = k.data() + (bk * n_hkv + hk) * lk * d;
        const float* v_head = v.data() + (bk * n_hkv + hk) * lk * dv;
        float* o_blk = result.output.data() + ((b * n_h + h) * lq + i0) * dv;

        float* p = nullptr;  // [rows, Lk] scores, then weights
        if (result.weights) {
            p = result.weights->data() + ((b * n_h + h) * lq + i0) * lk;
        } else {
            auto& buf = scratch[worker];
            buf.resize(kQueryBlock * lk);
            p = buf.data();
        }

        // Keys past the last row's causal limit are invisible to the whole block:
        // skip them in both GEMMs (causal costs about half).
        const std::size_t n_vis = causal_visible(spec.causal, i0 + rows - 1, lq, lk);

        // pass 1: scores = scale · Q_blk · K[0:n_vis]ᵀ
        detail::sgemm(rows, n_vis, d, scale, q_blk, d, k_head, d, true, 0.0f, p, lk);

        // pass 2: bias, masks, and a max-subtracted softmax per row.
        std::int64_t empty_rows = 0;
        std::array<bool, kQueryBlock> empty{};
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t i = i0 + r;
            float* s = p + r * lk;
            const std::size_t limit = causal_visible(spec.causal, i, lq, lk);
            const float* bias_row =
                spec.bias ? spec.bias->data() + pair_row_offset(*spec.bias, b, h, i) : nullptr;
            const std::uint8_t* mask_row =
                spec.keep_mask ? spec.keep_mask->data() + pair_row_offset(*spec.keep_mask, b, h, i)
                               : nullptr;
            const std::uint8_t* pad_row = nullptr;
            if (spec.key_padding != nullptr) {
                const std::size_t bp = spec.key_padding->shape()[0] == 1 ? 0 : b;
                pad_row = spec.key_padding->data() + bp * lk;
            }

            float row_max = neg_inf;
            bool any_visible = false;
            for (std::size_t j = 0; j < limit; ++j) {
                float x = s[j];
                if (bias_row != nullptr) {
                    x += bias_row[j];
                }
                // Masks win over everything, NaN included: a blocked key is exactly -inf.
                if ((mask_row != nullptr && mask_row[j] == 0) ||
                    (pad_row != nullptr && pad_row[j] == 0)) {
                    x = neg_inf;
                }
                s[j] = x;
                if (x != neg_inf) {
                    any_visible = true;
                }
                if (x > row_max) {  // NaN never compares greater: it propagates via exp below
                    row_max = x;
                }
            }
            if (!any_visible) {
                // No key visible: the contract gives a zero row (PyTorch would give NaN).
                std::fill(s, s + lk, 0.0f);
                empty[r] = true;
                ++empty_rows;
                continue;
            }
            // Subtracting the row max keeps exp() in range; exp(-inf - max) is exactly 0,
            // so masked weights are exactly 0. The sum is kept in double: Lk terms.
            double sum = 0.0;
            for (std::size_t j = 0; j < limit; ++j) {
                const float e = std::exp(s[j] - row_max);
                s[j] = e;
                sum += static_cast<double>(e);
            }
            const float inv = static_cast<float>(1.0 / sum);
            for (std::size_t j = 0; j < limit; ++j) {
                s[j] *= inv;
            }
            std::fill(s + limit, s + lk, 0.0f);
        }
        masked_rows[worker] += empty_rows;

        // pass 3: output = P[:, 0:n_vis] · V[0:n_vis]
        detail::sgemm(rows, dv, n_vis, 1.0f, p, lk, v_head, dv, false, 0.0f, o_blk, dv);
        if (n_vis == 0) {
            std::fill(o_blk, o_blk + rows * dv, 0.0f);
        }
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

}  // namespace attn

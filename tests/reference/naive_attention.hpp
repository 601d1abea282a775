// The test reference: float64, no BLAS, no blocking, written from the contract's
// wording (shared/interface.md). Obviously right; never optimise it.
#pragma once

#include "attn/attention.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace attn::reference {

struct Result {
    std::vector<double> output;  // [B, H, Lq, Dv]
    std::vector<double> weights; // [B, H, Lq, Lk]
    std::int64_t empty_rows = 0;
    std::vector<double> lse;          // [B, H, Lq]: log(sum_j exp(s_j) + exp(sink)); -inf if empty
    std::vector<double> entropy;      // [B, H, Lq]: -sum_j w_j log w_j; 0 if empty
    std::vector<std::int64_t> argmax; // [B, H, Lq]: first key of the largest weight; -1 if empty
};

/// q [B,H,Lq,D], k [Bk,Hkv,Lk,D], v [Bk,Hkv,Lk,Dv]; masks as in attend().
inline Result
naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec) {
    const std::size_t nb = q.shape()[0], nh = q.shape()[1], lq = q.shape()[2], d = q.shape()[3];
    const std::size_t hkv = k.shape()[1], lk = k.shape()[2], dv = v.shape()[3];
    const double scale =
        spec.scale ? static_cast<double>(*spec.scale) : 1.0 / std::sqrt(static_cast<double>(d));
    Result r;
    r.output.assign(nb * nh * lq * dv, 0.0);
    r.weights.assign(nb * nh * lq * lk, 0.0);
    r.lse.assign(nb * nh * lq, -std::numeric_limits<double>::infinity());
    r.entropy.assign(nb * nh * lq, 0.0);
    r.argmax.assign(nb * nh * lq, -1);
    // Diagonal offset of window and ALiBi: 0 (top-left) or Lk - Lq (bottom-right).
    const bool bottom_right =
        spec.causal == Causal::bottom_right || spec.align == Align::bottom_right;
    const long long diag_shift =
        bottom_right ? static_cast<long long>(lk) - static_cast<long long>(lq) : 0;
    for (std::size_t b = 0; b < nb; ++b) {
        const std::size_t bk = k.shape()[0] == 1 ? 0 : b;
        for (std::size_t h = 0; h < nh; ++h) {
            const std::size_t g = h / (nh / hkv); // kv head of query head h
            for (std::size_t i = 0; i < lq; ++i) {
                std::vector<double> s(lk);
                std::vector<bool> seen(lk, true);
                for (std::size_t j = 0; j < lk; ++j) {
                    double acc = 0.0;
                    for (std::size_t x = 0; x < d; ++x) {
                        acc += static_cast<double>(q(b, h, i, x)) *
                               static_cast<double>(k(bk, g, j, x));
                    }
                    s[j] = acc * scale;
                    if (spec.softcap) {
                        const double cap = static_cast<double>(*spec.softcap);
                        s[j] = cap * std::tanh(s[j] / cap);
                    }
                    const long long diag = static_cast<long long>(i) + diag_shift;
                    if (!spec.alibi_slopes.empty()) {
                        // FlashAttention / llama.cpp: -slope·|j - diag|.
                        s[j] -= static_cast<double>(spec.alibi_slopes[h]) *
                                std::fabs(static_cast<double>(static_cast<long long>(j) - diag));
                    }
                    // Window: diag - left <= j <= diag + right (-1: unbounded).
                    if ((spec.window.left >= 0 &&
                         static_cast<long long>(j) < diag - spec.window.left) ||
                        (spec.window.right >= 0 &&
                         static_cast<long long>(j) > diag + spec.window.right)) {
                        seen[j] = false;
                    }
                    // Masks and bias broadcast over a size-1 batch, head or query dim.
                    if (spec.bias != nullptr) {
                        const auto& t = *spec.bias;
                        const double bj = static_cast<double>(t(t.shape()[0] == 1 ? 0 : b,
                                                                t.shape()[1] == 1 ? 0 : h,
                                                                t.shape()[2] == 1 ? 0 : i,
                                                                j));
                        s[j] += bj;
                        if (bj == -std::numeric_limits<double>::infinity()) {
                            seen[j] = false; // blocked, even a NaN score
                        }
                    }
                    if (spec.keep_mask != nullptr) {
                        const auto& m = *spec.keep_mask;
                        if (m(m.shape()[0] == 1 ? 0 : b,
                              m.shape()[1] == 1 ? 0 : h,
                              m.shape()[2] == 1 ? 0 : i,
                              j) == 0) {
                            seen[j] = false;
                        }
                    }
                    if (spec.key_padding != nullptr) {
                        const auto& m = *spec.key_padding;
                        if (m(m.shape()[0] == 1 ? 0 : b, 0, 0, j) == 0) {
                            seen[j] = false;
                        }
                    }
                    // Causal as the contract words it: j <= i, or j <= i + Lk - Lq.
                    const auto ii = static_cast<long long>(i), jj = static_cast<long long>(j);
                    const auto shift = static_cast<long long>(lk) - static_cast<long long>(lq);
                    if ((spec.causal == Causal::top_left && jj > ii) ||
                        (spec.causal == Causal::bottom_right && jj > ii + shift)) {
                        seen[j] = false;
                    }
                    if (s[j] == -std::numeric_limits<double>::infinity()) {
                        seen[j] = false;
                    }
                }
                double mx = -std::numeric_limits<double>::infinity();
                bool any = false;
                std::int64_t best = -1;
                for (std::size_t j = 0; j < lk; ++j) {
                    if (seen[j]) {
                        any = true;
                        if (s[j] > mx) {
                            mx = s[j];
                            best = static_cast<std::int64_t>(j);
                        }
                    }
                }
                const std::size_t row = ((b * nh + h) * lq + i);
                if (!any) {
                    ++r.empty_rows;
                    continue;
                }
                r.argmax[row] = best;
                // A sink logit joins the denominator and the max, with no value row.
                const bool sink = !spec.sinks.empty();
                const double sink_logit = sink ? static_cast<double>(spec.sinks[h]) : 0.0;
                if (sink) {
                    mx = std::max(mx, sink_logit);
                }
                double sum = sink ? std::exp(sink_logit - mx) : 0.0;
                for (std::size_t j = 0; j < lk; ++j) {
                    if (seen[j]) {
                        sum += std::exp(s[j] - mx);
                    }
                }
                r.lse[row] = mx + std::log(sum);
                for (std::size_t j = 0; j < lk; ++j) {
                    const double w = seen[j] ? std::exp(s[j] - mx) / sum : 0.0;
                    r.weights[row * lk + j] = w;
                    if (w > 0.0) {
                        r.entropy[row] -= w * std::log(w);
                    }
                    for (std::size_t x = 0; x < dv && seen[j]; ++x) {
                        // A blocked key adds nothing, even a NaN or inf value.
                        r.output[row * dv + x] += w * static_cast<double>(v(bk, g, j, x));
                    }
                }
            }
        }
    }
    return r;
}

} // namespace attn::reference

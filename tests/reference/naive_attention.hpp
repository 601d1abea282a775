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
    std::vector<double> output;   // [B, H, Lq, Dv]
    std::vector<double> weights;  // [B, H, Lq, Lk]
    std::int64_t empty_rows = 0;
};

/// q [B,H,Lq,D], k [Bk,Hkv,Lk,D], v [Bk,Hkv,Lk,Dv]; masks as in attend().
inline Result naive_attention(const Tensor& q,
                              const Tensor& k,
                              const Tensor& v,
                              const AttentionSpec& spec) {
    const std::size_t nb = q.shape()[0], nh = q.shape()[1], lq = q.shape()[2], d = q.shape()[3];
    const std::size_t hkv = k.shape()[1], lk = k.shape()[2], dv = v.shape()[3];
    const double scale = spec.scale ? static_cast<double>(*spec.scale)
                                    : 1.0 / std::sqrt(static_cast<double>(d));
    Result r;
    r.output.assign(nb * nh * lq * dv, 0.0);
    r.weights.assign(nb * nh * lq * lk, 0.0);
    for (std::size_t b = 0; b < nb; ++b) {
        const std::size_t bk = k.shape()[0] == 1 ? 0 : b;
        for (std::size_t h = 0; h < nh; ++h) {
            const std::size_t g = h / (nh / hkv);  // kv head of query head h
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
                    if (spec.bias != nullptr) {
                        const auto& t = *spec.bias;
                        s[j] += static_cast<double>(t(t.shape()[0] == 1 ? 0 : b,
                                                      t.shape()[1] == 1 ? 0 : h, i, j));
                    }
                    if (spec.keep_mask != nullptr) {
                        const auto& m = *spec.keep_mask;
                        if (m(m.shape()[0] == 1 ? 0 : b, m.shape()[1] == 1 ? 0 : h, i, j) == 0) {
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
                for (std::size_t j = 0; j < lk; ++j) {
                    if (seen[j]) {
                        any = true;
                        mx = std::max(mx, s[j]);
                    }
                }
                const std::size_t row = ((b * nh + h) * lq + i);
                if (!any) {
                    ++r.empty_rows;
                    continue;
                }
                double sum = 0.0;
                for (std::size_t j = 0; j < lk; ++j) {
                    if (seen[j]) {
                        sum += std::exp(s[j] - mx);
                    }
                }
                for (std::size_t j = 0; j < lk; ++j) {
                    const double w = seen[j] ? std::exp(s[j] - mx) / sum : 0.0;
                    r.weights[row * lk + j] = w;
                    for (std::size_t x = 0; x < dv; ++x) {
                        r.output[row * dv + x] += w * static_cast<double>(v(bk, g, j, x));
                    }
                }
            }
        }
    }
    return r;
}

}  // namespace attn::reference

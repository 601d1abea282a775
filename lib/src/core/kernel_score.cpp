// detail::score_row: one row through the score pipeline's scalar instantiation
// (kernel_score-inl.h via RowScores and feature_row), so that tests can hold the one
// definition against a reference. No kernel calls it.
#include "attn/kernels.hpp"
#include "kernel_common.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace attn::detail {

template <class T>
ScoreRow<T> score_row(const std::vector<T>& raw,
                      T scale,
                      const BasicAttentionSpec<T>& spec,
                      std::size_t b,
                      std::size_t h,
                      std::size_t i,
                      std::size_t lq) {
    const std::size_t lk = raw.size();
    const KeyRule rule = key_rule(spec, b, lq, lk);
    const RowScores<T> scores(spec, scale, rule, b, h, i, padding_row(spec.key_padding, b, lk));
    ScoreRow<T> out;
    out.scores.assign(lk, T{0});
    for (std::size_t j = 0; j < lk; ++j) {
        out.scores[j] = scores(raw[j], j);
    }
    out.weights = raw;
    RowOut<T> row_out;
    row_out.lse = &out.lse;
    if (!feature_row(out.weights.data(), rule.causal_end(i), lk, scores, spec, h, row_out)) {
        std::fill(out.weights.begin(), out.weights.end(), T{0});
        out.lse = -std::numeric_limits<T>::infinity();
    }
    return out;
}

template ScoreRow<float> score_row(const std::vector<float>&,
                                   float,
                                   const AttentionSpec&,
                                   std::size_t,
                                   std::size_t,
                                   std::size_t,
                                   std::size_t);
template ScoreRow<double> score_row(const std::vector<double>&,
                                    double,
                                    const BasicAttentionSpec<double>&,
                                    std::size_t,
                                    std::size_t,
                                    std::size_t,
                                    std::size_t);

} // namespace attn::detail

// A comparison (attn/problem/attention_compare.hpp) as the files `attn compare` writes:
// .json, .csv and .npz bytes, and the one summary line. The bytes only: writing them is the
// caller's (the atomic writer). Does not: compare anything.
#pragma once

#include "attn/problem/attention_compare.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attn::problem {

/// {"js": [[..]], "tv", "max_abs", "top1", "topk" (each of the grid's shape, [layers][H]),
/// "top_k": K, "rows": query rows per cell}; NaN as "nan". One line, no trailing newline.
std::string compare_json(const AttentionComparison& c);

/// Header `layer,head,js,tv,max_abs,top1,topk`, then one row per cell (a grid of one axis:
/// layer 0; of more than two: the leading axes flattened into `layer`).
std::string compare_csv(const AttentionComparison& c);

/// np.savez's layout: each metric (float64, the grid's shape), top_k and rows ([1], int64).
std::vector<std::uint8_t> compare_npz(const AttentionComparison& c);

/// "most different: layer 1 head 3 (js 0.0123); mean js 0.00456 over 8 heads" (no newline).
std::string compare_summary(const AttentionComparison& c);

} // namespace attn::problem

// "select_heads" and "query_rows": which heads and query rows of the weights, the per-row
// diagnostics and the head statistics a result keeps. Every head and row is still computed
// (a later layer needs them all); the kept ones are picked as the kernel hands its blocks
// over, so the weights of the other heads and rows are never held. Does not: decide where
// weights go (layer_analysis.hpp), parse "0,3,5-7" (model::parse_index_list, the one parser).
#pragma once

#include "attn/attention.hpp"
#include "attn/problem/head_stats.hpp"
#include "attn/problem/problem.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::problem {

/// A list of indices as a field holds it: a non-empty JSON list of integers >= 0, or a
/// string like "0,3,5-7". `field` names it in messages (it may be an option_name), `noun`
/// its items ("layer", "head"). Throws InputError for anything else or a number given twice.
std::vector<std::size_t>
index_selection(const nlohmann::json& j, std::string_view field, std::string_view noun);

/// "query_rows": [A, B] (integers or null) or "A:B" (either side may be empty), resolved
/// against `lq` query rows as Python's slice(A, B).indices(lq) does (negatives count from
/// the end, out-of-range ends clipped). Throws InputError naming the field when the value
/// has another form or the rows it keeps are none (A >= B once resolved).
std::array<std::size_t, 2> query_rows_of(const nlohmann::json& j, std::size_t lq);

/// The heads and rows of [B, H, Lq, X] a problem's result keeps.
struct Selection {
    std::vector<std::size_t> heads; ///< ascending: every head when none was selected
    std::size_t row_begin = 0, row_end = 0;
    std::size_t all_heads = 0, all_rows = 0; ///< H and Lq of the kernel's call

    /// p's selection for a call with `heads` query heads and `lq` query rows.
    Selection(const Problem& p, std::size_t heads, std::size_t lq);
    /// Whether anything is left out.
    bool partial() const { return heads.size() != all_heads || row_end - row_begin != all_rows; }
    std::size_t rows() const { return row_end - row_begin; }
    /// Elements of a kept [B, H', R, X] tensor (B = batch).
    std::size_t kept_size(std::size_t batch, std::size_t x) const {
        return batch * heads.size() * rows() * x;
    }

    /// Elements [first, first + count) of [B, H, Lq, X] (whole rows, as a kernel hands
    /// them over) passed on as the kept ones: `to(offset, values, n)` for each run of kept
    /// elements, offset into [B, H', R, X].
    template <class T, class To>
    void
    forward(std::size_t first, const T* values, std::size_t count, std::size_t x, To&& to) const;
    /// The kept part of t [B, H, Lq, X] as [B, H', R, X].
    template <class T> xt::xtensor<T, 4> slice(const xt::xtensor<T, 4>& t) const;
    /// The kept heads of head statistics' totals.
    HeadStatTotals slice(const HeadStatTotals& t) const;
};

template <class T, class To>
void Selection::forward(
    std::size_t first, const T* values, std::size_t count, std::size_t x, To&& to) const {
    ATTN_ASSERT(x > 0 && first % x == 0 && count % x == 0);
    std::size_t row = first / x; // of [B, H, Lq]
    const std::size_t end = (first + count) / x;
    while (row < end) {
        const std::size_t i = row % all_rows;
        const std::size_t bh = row / all_rows;
        const std::size_t b = bh / all_heads;
        const std::size_t h = bh % all_heads;
        // This head's rows in the block: [row, stop), the kept ones [lo, hi).
        const std::size_t stop = std::min(end, row - i + all_rows);
        const auto at = std::lower_bound(heads.begin(), heads.end(), h);
        if (at != heads.end() && *at == h) {
            const auto kept_head = static_cast<std::size_t>(at - heads.begin());
            const std::size_t lo = std::max(row, row - i + row_begin);
            const std::size_t hi = std::min(stop, row - i + row_end);
            if (lo < hi) {
                const std::size_t out_row =
                    (b * heads.size() + kept_head) * rows() + (lo - (row - i) - row_begin);
                to(out_row * x, values + (lo - first / x) * x, (hi - lo) * x);
            }
        }
        row = stop;
    }
}

} // namespace attn::problem

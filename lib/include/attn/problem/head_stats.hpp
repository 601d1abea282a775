// Per-head statistics ("return": ["head_stats"]): each query row's entropy, first_token,
// previous_token, self, distance, duplicate_token and induction, taken from its weights as
// the kernel hands each block of rows over, and their sums and qualifying rows per batch row
// and head. Does not: compute weights (the kernel), pool over texts (census), stack layers.
#pragma once

#include "attn/attention.hpp"
#include "attn/embedding.hpp"
#include "attn/io/array.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attn::problem {

inline constexpr std::size_t kHeadStats = 7;

/// The statistics' names, in the order every result, file and census holds them.
const std::array<const char*, kHeadStats>& head_stat_names();

/// Per batch row and head ([B·H], C order): each statistic's sum over its qualifying rows
/// and the count of those rows.
struct HeadStatTotals {
    std::size_t batch = 0, heads = 0;
    std::array<std::vector<double>, kHeadStats> sum;
    std::array<std::vector<std::int64_t>, kHeadStats> rows;
};

/// One call's statistics, row by row. Positions count real tokens only: with Lq = Lk query
/// i is key i's token (a padding query row counts for nothing); with Lq ≠ Lk query i sits
/// at position i and `self` has no row. `ids` ([B, Lk], or null: duplicate_token and
/// induction have no row) and `key_padding` ([B|1, 1, 1, Lk], or null) are borrowed.
class HeadStatRows {
  public:
    HeadStatRows(std::size_t batch,
                 std::size_t heads,
                 std::size_t lq,
                 std::size_t lk,
                 const Mask* key_padding,
                 const TokenIds* ids);

    /// Elements [first, first + count) of the call's weights [B, H, Lq, Lk]: whole rows of
    /// one head. Rows handed over at the same time by different threads must differ.
    template <class T> void add(std::size_t first, const T* values, std::size_t count);

    /// The sums and counts of the rows handed over, each summed in row order.
    HeadStatTotals totals() const;

  private:
    /// A batch row's tokens: each key's position (-1: padding), each position's key.
    struct Sequence {
        std::vector<std::int64_t> position;
        std::vector<std::size_t> key;
        std::vector<std::int64_t> ids; ///< by position; empty without ids
    };
    template <class T> void add_row(const T* a, const Sequence& s, std::size_t i, std::size_t row);

    std::size_t batch_, heads_, lq_, lk_;
    std::vector<Sequence> sequences_;
    std::vector<double> value_;         ///< [stat][B·H·Lq]
    std::vector<std::uint8_t> counted_; ///< [stat][B·H·Lq]
};

/// The result arrays "return": ["head_stats"] gives, by name in head_stat_names() order.
using HeadStatArrays = std::vector<std::pair<std::string, io::Array>>;

/// The means (sum / rows; NaN without a row) as [B, H] arrays, B dropped when !batched;
/// float64 arrays (values64 kept) when `f64`, else float32.
HeadStatArrays head_stat_means(const HeadStatTotals& t, bool batched, bool f64);

} // namespace attn::problem

// The interactive view of panels longer than kLongViewSide on either axis: instead of
// every cell, each panel holds max- and mean-pooled levels of colour indices (8-bit, the
// PNG's index rule) from 4096 x 4096 down, each level cut into bands of rows compressed
// on their own (decoded by the page when a view needs them), and, for every query row,
// its `top_k` strongest keys with their weights as float16, so full zoom shows those
// exactly. Built from rows handed over in any order by any thread (the kernel's row
// blocks, or a mapped file read panel by panel): Lq x Lk is never held. Builds bytes;
// writes no files.
#pragma once

#include "attn/attention.hpp"
#include "attn/render/heatmap.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn::render {

/// The side of a level-0 picture: a panel with more rows or keys gets the long view.
inline constexpr std::size_t kLongViewSide = 4096;
/// The coarsest level's side (levels halve from kLongViewSide down to it).
inline constexpr std::size_t kLongViewMinSide = 64;
/// Rows of a level per compressed block ("band").
inline constexpr std::size_t kLongViewBandRows = 128;
/// Query rows per compressed block of top-k lists.
inline constexpr std::size_t kLongViewTopKRows = 2048;

/// Whether a [rows, cols] panel gets the long view.
inline bool is_long_view(std::size_t rows, std::size_t cols) {
    return rows > kLongViewSide || cols > kLongViewSide;
}

/// One level's picture: h rows x w columns of pixels; pixel y covers the panel's rows
/// [floor(y·rows/h), floor((y+1)·rows/h)) (columns alike), so level l + 1's pixels are
/// unions of level l's.
struct LongViewLevel {
    std::size_t h = 0, w = 0;
};

/// The levels of a [rows, cols] panel: side min(n, 4096 >> l) on each axis, l = 0, 1, ...
/// down to kLongViewMinSide.
std::vector<LongViewLevel> long_view_levels(std::size_t rows, std::size_t cols);

/// The keys of a panel of `cols` keys in level 0's pixel columns: column x holds keys
/// [c[x], c[x + 1]), c from 0 to cols (what a PooledDestination pools into).
std::vector<std::size_t> long_view_columns(std::size_t cols);

/// The colour range of a page built while the weights are made (nothing to scan first):
/// options.vmin/vmax, else attention weights' own range [0, 1] (log: [1e-6 · vmax, vmax]).
/// Throws InputError for options.clip (quantiles need every value first).
ColorNorm streaming_norm(const HeatmapOptions& options);

/// A row whose unblocked keys are one range: keys [begin, end) have values, every other
/// key is blocked (a causal or sliding-window row).
struct LongViewKeys {
    std::size_t begin = 0, end = 0;
};

/// The long view of every panel of `shape` (its rows, cols, panel titles, labels and grid;
/// the panels' values are not read), coloured by `norm`. add_rows() may be called from
/// many threads at once, each row of each panel exactly once, in any order; finish()
/// returns the page. Memory: the top-k lists (rows x top_k x 6 bytes per panel), the
/// compressed levels and the bands being filled, never a panel's cells.
class LongViewPage {
  public:
    LongViewPage(const HeatmapInput& shape,
                 const HeatmapOptions& options,
                 const ColorNorm& norm,
                 std::vector<std::string> notes,
                 std::size_t top_k);
    ~LongViewPage();
    LongViewPage(const LongViewPage&) = delete;
    LongViewPage& operator=(const LongViewPage&) = delete;

    /// Rows [first, first + n) of `panel`: `values` n x cols in C order, `masked` (null:
    /// none blocked) the same with 1 = blocked (hatched, left out of pooling and top-k).
    void add_rows(std::size_t panel,
                  std::size_t first,
                  std::size_t n,
                  const float* values,
                  const std::uint8_t* masked);

    /// As add_rows, with row i's open keys as the range `keys[i]` (n ranges; the same page
    /// as the mask blocking every key outside keys[i]): no mask to write or scan.
    void add_rows_within(std::size_t panel,
                         std::size_t first,
                         std::size_t n,
                         const float* values,
                         const LongViewKeys* keys);

    /// As add_rows, from the streaming kernel's pooling instead of the weights (a
    /// PooledDestination whose columns are long_view_columns(cols) and top_k top_k()):
    /// rows [first, first + rows.rows) of `panel`, their level-0 pixels' max and sum and
    /// their top-k lists as they are. The levels equal add_rows' within float rounding
    /// (sums in another order), the lists the same keys where weights do not tie.
    void add_pooled(std::size_t panel, std::size_t first, const PooledRows& rows);

    /// The keys listed per row (the constructor's top_k, at most the panel's keys).
    std::size_t top_k() const;

    /// The page, once every row of every panel was added: the top-k lists packed on
    /// options.threads threads (a block of kLongViewTopKRows rows a task), the same bytes
    /// for any count.
    std::vector<std::uint8_t> finish();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// The long view of `input` from its values (a mapped file read panel by panel): the
/// colour range from every cell first (as heatmap_html_bytes), then each panel's rows in
/// blocks on `options.threads` threads, each panel released after each pass.
std::vector<std::uint8_t>
long_view_html_bytes(const HeatmapInput& input, const HeatmapOptions& options, std::size_t top_k);

} // namespace attn::render

// Comparing two attention maps of one shape (`attn compare A B`): per grid cell (layer and
// head) the mean over query rows of the Jensen–Shannon divergence, the total variation,
// top-1 agreement and top-k overlap, and the largest absolute difference, each row's
// values kept in its own slot and summed per cell in row order (the same for any
// threads). Two models are compared layer by layer (compare_models), never both models'
// maps held at once. Not here: `attn diff`'s allclose rule (compare.hpp), the files the
// comparison is written as (attention_compare_files.hpp), printing.
#pragma once

#include "attn/io/npy.hpp"
#include "attn/problem/solve.hpp"
#include "attn/problem/weights_read.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace attn::problem {

inline constexpr std::size_t kCompareMetrics = 5;

/// The metrics' names, in the order every result and file holds them:
/// js, tv, max_abs, top1, topk.
const std::array<const char*, kCompareMetrics>& compare_metric_names();

/// How the rows of two maps [..., Lq, Lk] fall into the grid: the leading axes read as
/// [outer, batch, inner] (C order); a cell is (outer, inner), pooled over the batch and
/// the query rows. `grid` is the cells' shape as written ([layers, H], [H], ...).
struct CompareLayout {
    std::size_t outer = 1, batch = 1, inner = 1, lq = 0, lk = 0;
    std::vector<std::size_t> grid;
    /// [batch · lq]: 1 = query row i of batch row b is compared, 0 = a padding row; empty:
    /// every row.
    std::vector<std::uint8_t> query_rows;

    std::size_t cells() const { return outer * inner; }
    std::size_t rows() const { return outer * batch * inner * lq; }
};

/// The comparison: each metric's per-cell means (C order over `grid`; NaN for a cell
/// without a compared row, max_abs 0 there).
struct AttentionComparison {
    std::vector<std::size_t> grid;
    std::size_t top_k = 5; ///< K as asked (each row uses min(K, Lk))
    std::int64_t rows = 0; ///< query rows compared per cell
    std::array<std::vector<double>, kCompareMetrics> values;

    std::size_t cells() const { return values[0].size(); }
    /// The cell with the largest js (the first of equals; 0 when every js is NaN).
    std::size_t most_different() const;
    /// The mean of the cells' js (NaN cells left out; NaN when all are).
    double mean_js() const;
    /// Cell x's position in the grid, e.g. {layer, head}.
    std::vector<std::size_t> cell_index(std::size_t x) const;
};

/// The per-row metrics of two maps handed over a block of rows at a time.
class CompareRows {
  public:
    /// Throws InputError naming "top_k" when top_k is 0.
    CompareRows(CompareLayout layout, std::size_t top_k);

    /// Elements [first, first + count) of both maps (C order over the whole layout): whole
    /// rows. Rows handed over at the same time by different threads must differ. A
    /// non-finite or negative value is kept for result() to report.
    void add(std::size_t first, const float* a, const float* b, std::size_t count);

    /// The per-cell means. Throws InputError when a row held a non-finite or negative
    /// value ("weights: expected finite values >= 0, ...").
    AttentionComparison result() const;

  private:
    void add_row(std::size_t row, const float* p, const float* q);

    CompareLayout layout_;
    std::size_t top_k_;
    std::vector<double> value_;     ///< [metric][row]
    std::vector<std::uint8_t> bad_; ///< [row]: a non-finite or negative value
};

/// Two maps of one layout compared (both rows() · lk values).
AttentionComparison compare_maps(std::span<const float> a,
                                 std::span<const float> b,
                                 const CompareLayout& layout,
                                 std::size_t top_k);

/// The layout of read weights: a result document's stacked layers and heads are the grid,
/// its batch pooled; a bare array's leading axes are the grid ([H, L, L] -> [H]).
CompareLayout weights_layout(const LoadedWeights& w);

/// Two weights files or result documents compared: the same shape, else InputError naming
/// B ("B: expected shape [..], got [..]").
AttentionComparison
compare_weights(const LoadedWeights& a, const LoadedWeights& b, std::size_t top_k);

/// Two models run on the same token ids.
struct ModelCompareRequest {
    nlohmann::json a, b;        ///< each model's document: "params" and "text"/"token_ids"
    std::filesystem::path base; ///< what relative paths are relative to
    std::size_t top_k = 5;
    SolveOptions solve;
    /// Where A's maps wait for B's (a temporary .npy file, removed before B runs; its
    /// mapping stays until the comparison is done).
    std::filesystem::path temp_dir;
    /// Keep both models' maps (mapped files already removed) for a picture: `maps` set.
    bool keep_maps = false;
    /// Called after each layer (done, total) of both runs (total = 2 · layers).
    std::function<void(std::size_t, std::size_t)> progress;
};

/// The maps compare_models kept: [layers, B, H, L, L] each.
struct ComparedMaps {
    std::shared_ptr<const io::NpyView> a, b;
    CompareLayout layout;
    std::vector<std::string> tokens; ///< batch row 0's labels, when "text" gave them
};

/// Runs model A with its weights streamed to a temporary mapped file, then model B,
/// comparing each block of B's rows with A's as the kernel makes them: memory bounded by
/// one layer's maps. Padding query rows (a batch of texts) are not compared. Throws
/// InputError naming B when the models' layer or head counts differ or their tokenizers
/// give other token ids.
AttentionComparison compare_models(const ModelCompareRequest& request,
                                   ComparedMaps* maps = nullptr);

} // namespace attn::problem

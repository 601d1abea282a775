// compute's --heatmap FILE.html for maps longer than 4096 (render/long_view.hpp), built as
// the kernel makes the weights: a destination solve() writes them to
// (SolveOptions::weights_to) that feeds each block of rows, with the cells the problem
// blocks, to the long view's builder. Lq x Lk is never held, in memory or on disk. Reads
// no files and prints nothing.
#pragma once

#include "attn/attention.hpp"
#include "attn/plot/weights_figure.hpp"
#include "attn/problem/problem.hpp"
#include "attn/render/long_view.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn::plot {

/// Whether weights of `shape` ([layers?, B?, H?, Lq, Lk]) get the long view.
bool streamed_view_wanted(const std::vector<std::size_t>& shape);

class StreamedView {
  public:
    /// The page for `problem`'s weights of `shape` (its plan's, with a leading layers axis
    /// for a stack whose layer numbers are `layers`), titled, labelled and laid out as
    /// result_figure() would, with each query row's `top_k` strongest keys kept exactly;
    /// finish() packs it on `threads` threads (0: all cores). `problem` is borrowed for the
    /// object's life. Throws InputError as result_shape_figure() does.
    StreamedView(const problem::Problem& problem,
                 const std::vector<std::size_t>& shape,
                 const std::vector<std::size_t>& layers,
                 const std::string& name,
                 double font_size,
                 std::size_t columns,
                 std::size_t top_k,
                 unsigned threads);
    ~StreamedView();
    StreamedView(const StreamedView&) = delete;
    StreamedView& operator=(const StreamedView&) = delete;

    /// Where solve() writes the weights (SolveOptions::weights_to); whole rows, any
    /// order, any thread.
    const WeightsDestination<float>& destination() const { return to_; }

    /// Where the streaming kernel pools the weights for this page instead (SolveOptions::
    /// pooled_to, with want_weights false: no weights are made), for a problem of one
    /// attention call that problem::pooled_direct() accepts; null otherwise.
    const PooledDestination* pooled() const { return pooled_ ? &*pooled_ : nullptr; }

    /// The page, once solve() has returned.
    std::vector<std::uint8_t> finish();

  private:
    void store(std::size_t first, const float* values, std::size_t count);
    void store_pooled(std::size_t first_row, const PooledRows& rows);

    const problem::Problem& problem_;
    WeightsFigure figure_;
    std::unique_ptr<render::LongViewPage> page_;
    WeightsDestination<float> to_;
    std::optional<PooledDestination> pooled_;
};

} // namespace attn::plot

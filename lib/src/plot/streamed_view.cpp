// The long view fed by the kernel (see attn/plot/streamed_view.hpp).
#include "attn/plot/streamed_view.hpp"

#include "attn/error.hpp"
#include "attn/problem/solve.hpp"
#include "attn/visibility.hpp"

#include <algorithm>

namespace attn::plot {

bool streamed_view_wanted(const std::vector<std::size_t>& shape) {
    return shape.size() >= 2 && render::is_long_view(shape[shape.size() - 2], shape.back());
}

StreamedView::StreamedView(const problem::Problem& problem,
                           const std::vector<std::size_t>& shape,
                           const std::vector<std::size_t>& layers,
                           const std::string& name,
                           double font_size,
                           std::size_t columns,
                           std::size_t top_k,
                           unsigned threads)
    : problem_(problem),
      figure_(result_shape_figure(shape, &problem, layers, name, font_size, columns)) {
    figure_.options.threads = threads;
    std::size_t size = 1;
    for (const std::size_t n : shape) {
        size *= n;
    }
    page_ = std::make_unique<render::LongViewPage>(figure_.input,
                                                   figure_.options,
                                                   render::streaming_norm(figure_.options),
                                                   std::vector<std::string>{},
                                                   top_k);
    to_.size = size;
    to_.zero_causal_tail = false; // store() blocks every cell past a row's causal limit
    to_.store = [this](std::size_t first, const float* values, std::size_t count) {
        store(first, values, count);
    };
    if (layers.empty() && problem::pooled_direct(problem)) {
        pooled_.emplace();
        pooled_->columns = render::long_view_columns(problem.lk);
        pooled_->top_k = page_->top_k();
        pooled_->store = [this](std::size_t first_row, const PooledRows& rows) {
            store_pooled(first_row, rows);
        };
    }
}

void StreamedView::store_pooled(std::size_t first_row, const PooledRows& rows) {
    // Row (b·H + h)·Lq + i of the kernel is row i of panel b·H + h (no rows or heads
    // selected: pooled_direct()).
    const std::size_t lq = figure_.dims.lq;
    page_->add_pooled(first_row / lq, first_row % lq, rows);
}

StreamedView::~StreamedView() = default;

void StreamedView::store(std::size_t first, const float* values, std::size_t count) {
    const Dims& d = figure_.dims;
    const std::size_t plane = d.lq * d.lk;
    ATTN_ASSERT(first % d.lk == 0 && count % d.lk == 0); // the kernel hands over whole rows
    // The cells the problem blocks, by the core's one rule (attn::Visibility); rows and
    // heads count the selected ones ("query_rows", "select_heads").
    const BasicAttentionSpec<float> spec = problem::attention_spec(problem_);
    const Visibility vis(spec, problem_.lq, problem_.lk);
    const bool positional =
        spec.keep_mask == nullptr && spec.key_padding == nullptr && spec.bias == nullptr;
    const std::size_t row0 = problem_.query_rows ? (*problem_.query_rows)[0] : 0;
    std::vector<std::uint8_t> blocked;
    std::vector<render::LongViewKeys> keys;
    while (count > 0) {
        const std::size_t panel = first / plane, row = (first % plane) / d.lk;
        const std::size_t n = std::min(count / d.lk, d.lq - row);
        const PanelRef& r = figure_.refs[panel];
        if (positional) { // one range of keys a row: blocked before and after it
            keys.resize(n);
            for (std::size_t i = 0; i < n; ++i) {
                const KeyRange k = vis.rule(r.b).keys(row0 + row + i);
                keys[i] = {k.begin, k.end};
            }
            page_->add_rows_within(panel, row, n, values, keys.data());
        } else {
            const std::size_t head =
                problem_.select_heads.empty() ? r.h : problem_.select_heads[r.h];
            blocked.resize(n * d.lk); // every cell written below
            bool any = false;
            for (std::size_t i = 0; i < n; ++i) {
                std::uint8_t* out = blocked.data() + i * d.lk;
                for (std::size_t j = 0; j < d.lk; ++j) {
                    out[j] = vis.sees(r.b, head, row0 + row + i, j) ? 0 : 1;
                }
                any = any || std::any_of(out, out + d.lk, [](std::uint8_t c) { return c != 0; });
            }
            page_->add_rows(panel, row, n, values, any ? blocked.data() : nullptr);
        }
        first += n * d.lk;
        values += n * d.lk;
        count -= n * d.lk;
    }
}

std::vector<std::uint8_t> StreamedView::finish() {
    return page_->finish();
}

} // namespace attn::plot

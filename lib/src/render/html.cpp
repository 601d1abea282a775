// The HTML view's data: colour indices, states and exact values packed, compressed and
// base64-encoded into the page template (lib/src/render/html/view.html) together with the
// script and style embedded beside it. No file I/O.
#include "attn/render/html.hpp"

#include "attn/error.hpp"
#include "attn/parallel.hpp"
#include "attn/render/colormap.hpp"
#include "attn/render/figure.hpp"
#include "attn/render/long_view.hpp"
#include "heatmap_detail.hpp"
#include "html_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>
#include <zlib.h>

namespace attn::render {

namespace detail {
extern const char kHtmlPageBytes[], kHtmlScriptBytes[], kHtmlHeadScriptBytes[], kHtmlStyleBytes[];
extern const std::size_t kHtmlPageByteCount, kHtmlScriptByteCount, kHtmlHeadScriptByteCount,
    kHtmlStyleByteCount;
} // namespace detail

namespace {

using detail::fill;
using detail::grouped;
using detail::html_text;
using detail::json_number;
using detail::json_string;
using detail::json_strings;
using detail::json_tables;
using detail::Pack;
using detail::packed;

/// The colorbar's ticks as the PNG and SVG place them (colorbar_ticks: 0.2, 0.4, ... on a
/// linear scale, decades on a log one) for a bar `height` px tall with 10 px labels:
/// [[position 0..1 from the bottom, "label"], ...].
std::string json_colorbar_ticks(const ColorNorm& norm, double height) {
    const int max_ticks = std::clamp(static_cast<int>(height / 25.0), 2, 9);
    std::string out = "[";
    for (const auto& [v, label] : detail::colorbar_ticks(norm, max_ticks)) {
        out += (out.size() == 1 ? "[" : ",[") + json_number(std::clamp(norm(v), 0.0, 1.0)) + "," +
               json_string(label) + "]";
    }
    return out + "]";
}

/// ,"panelScales":[null | {"cmap", "reversed", "vmin", "vmax", "ticks"}, ...]: the panels
/// with a colour scale of their own, which the page shows (and its colorbar) in it.
std::string panel_scales_json(const HeatmapInput& in) {
    std::string s = ",\"panelScales\":[";
    for (std::size_t p = 0; p < in.panels.size(); ++p) {
        s += p == 0 ? "" : ",";
        const std::optional<PanelScale>& sc = in.panels[p].scale;
        if (!sc) {
            s += "null";
            continue;
        }
        const std::optional<Colormap> cmap = find_colormap(sc->colormap);
        ATTN_ASSERT(cmap.has_value() && sc->vmax > sc->vmin);
        const std::string base =
            cmap->reversed ? cmap->name.substr(0, cmap->name.size() - 2) : cmap->name;
        const ColorNorm norm{sc->vmin, sc->vmax, ColorScale::linear};
        s += "{\"cmap\":" + json_string(base) +
             ",\"reversed\":" + (cmap->reversed ? "true" : "false") +
             ",\"vmin\":" + json_number(sc->vmin) + ",\"vmax\":" + json_number(sc->vmax) +
             ",\"ticks\":" + json_colorbar_ticks(norm, 240.0) + "}";
    }
    return s + "]";
}

/// Panel `k`'s colour rule: its own scale's, else the figure's.
detail::ColorIndexer panel_indexer(const HeatmapPanel& p, const ColorNorm& figure_norm) {
    return detail::ColorIndexer(
        p.scale ? ColorNorm{p.scale->vmin, p.scale->vmax, ColorScale::linear} : figure_norm);
}

/// Panel `k`'s cells as the page reads them, into `out`: colour index per cell, then (with
/// states) 0 value / 1 masked / 2 NaN per cell, then (exact) the float32 values. Read by
/// bands of rows, each released once done.
void panel_block(const HeatmapInput& in,
                 std::size_t k,
                 const ColorNorm& figure_norm,
                 bool states,
                 bool exact,
                 std::vector<std::uint8_t>& out) {
    const HeatmapPanel& p = in.panels[k];
    const detail::ColorIndexer index = panel_indexer(p, figure_norm);
    const std::size_t n = p.values.size(), band = detail::band_rows(in.cols) * in.cols;
    out.resize(n * (std::size_t{1} + (states ? 1U : 0U) + (exact ? 4U : 0U)));
    const float* v = p.values.data();
    for (std::size_t first = 0; first < n; first += band) {
        const std::size_t end = std::min(n, first + band);
        std::uint8_t* colour = out.data() + first;
        index.map(v + first, end - first, colour);
        for (std::size_t c = first; states && c < end; ++c) {
            const std::uint8_t st = (!p.masked.empty() && p.masked[c] != 0) ? 1
                                    : std::isnan(v[c])                      ? 2
                                                                            : 0;
            colour[c - first] = st != 0 ? 0 : colour[c - first];
            out[n + c] = st;
        }
        if (exact) {
            static_assert(sizeof(float) == 4);
            // little-endian float32, as Float32Array reads it on x86/ARM
            std::memcpy(
                out.data() + n * (states ? 2 : 1) + first * 4, v + first, (end - first) * 4);
        }
        if (in.release) {
            in.release(k, first, end - first);
        }
    }
}

/// One row's cells [j0, j1) (colour indices, and states unless null) pooled into a
/// thumbnail pixel: sum, count and maximum of the cells with a value (state 0).
template <bool kStates>
void pool_cells(const std::uint8_t* colour,
                const std::uint8_t* state,
                std::size_t j0,
                std::size_t j1,
                std::uint32_t& sum,
                std::uint32_t& count,
                std::uint8_t& best) {
    std::uint32_t s = 0, c = 0;
    std::uint8_t m = best;
    for (std::size_t j = j0; j < j1; ++j) {
        const bool ok = !kStates || state[j] == 0;
        const std::uint8_t v = ok ? colour[j] : 0; // best starts at 0: no effect
        s += v;
        c += ok ? 1U : 0U;
        m = std::max(m, v);
    }
    sum += s;
    count += c;
    best = m;
}

/// A panel's thumbnail (rows x cols cells into t.w x t.h pixels) made from its rows in
/// order. A pixel covers the cells the page's own pooling gives it: rows [floor(y R / h),
/// floor((y + 1) R / h)), at least one; columns alike (the last pixel takes any left
/// over), each pixel's columns contiguous.
class ThumbRows {
  public:
    ThumbRows(std::size_t rows, std::size_t cols, bool states, detail::Thumbs& t)
        : rows_(rows), cols_(cols), states_(states), t_(t), col_start_(t.w + 1, cols), sum_(t.w),
          count_(t.w), best_(t.w) {
        for (std::size_t j = cols; j-- > 0;) { // pixel x: [col_start_[x], col_start_[x + 1])
            col_start_[std::min(t.w - 1, j * t.w / cols)] = j;
        }
        next_pixel_row();
    }

    /// Rows [first, first + count), the next ones: colour indices and (with states) the
    /// states, `cols` a row.
    void add(const std::uint8_t* colour,
             const std::uint8_t* state,
             std::size_t first,
             std::size_t count) {
        for (std::size_t r = 0; r < count; ++r, colour += cols_) {
            for (std::size_t x = 0; x < t_.w; ++x) {
                const std::size_t j0 = col_start_[x], j1 = col_start_[x + 1];
                if (states_) {
                    pool_cells<true>(colour, state, j0, j1, sum_[x], count_[x], best_[x]);
                } else {
                    pool_cells<false>(colour, nullptr, j0, j1, sum_[x], count_[x], best_[x]);
                }
            }
            state = states_ ? state + cols_ : nullptr;
            if (first + r + 1 == end_) {
                emit();
            }
        }
    }

  private:
    /// Starts pixel row y_ (its rows end at end_).
    void next_pixel_row() {
        const std::size_t i0 = y_ * rows_ / t_.h;
        end_ = std::max(i0 + 1, (y_ + 1) * rows_ / t_.h);
        std::fill(sum_.begin(), sum_.end(), 0);
        std::fill(count_.begin(), count_.end(), 0);
        std::fill(best_.begin(), best_.end(), 0);
    }

    void emit() {
        for (std::size_t x = 0; x < t_.w; ++x) {
            const std::uint32_t c = count_[x];
            t_.max.push_back(best_[x]);
            t_.mean.push_back(c == 0 ? 0 : static_cast<std::uint8_t>((2 * sum_[x] + c) / (2 * c)));
            if (states_) {
                t_.state.push_back(c == 0 ? 1 : 0);
            }
        }
        ++y_;
        next_pixel_row();
    }

    std::size_t rows_, cols_;
    bool states_;
    detail::Thumbs& t_;
    std::vector<std::size_t> col_start_;
    std::vector<std::uint32_t> sum_, count_;
    std::vector<std::uint8_t> best_;
    std::size_t y_ = 0, end_ = 0;
};

/// Panel `k`'s colour indices alone (no states, not exact; Pack::fast) compressed into `z`
/// and pooled into `thumb` band by band as they are made, in `buf` (a band and a chunk),
/// so that no pass over them leaves the cache; each band released once done.
void panel_stream(const HeatmapInput& in,
                  std::size_t k,
                  const ColorNorm& figure_norm,
                  detail::FastDeflate& z,
                  ThumbRows& thumb,
                  std::vector<std::uint8_t>& buf) {
    const HeatmapPanel& p = in.panels[k];
    const detail::ColorIndexer index = panel_indexer(p, figure_norm);
    const std::size_t n = p.values.size(), band = detail::band_rows(in.cols) * in.cols;
    buf.resize(band + detail::kFastChunk);
    std::size_t held = 0; // at the front of buf, less than a chunk: not compressed yet
    for (std::size_t first = 0; first < n; first += band) {
        const std::size_t m = std::min(n, first + band) - first;
        index.map(p.values.data() + first, m, buf.data() + held);
        thumb.add(buf.data() + held, nullptr, first / in.cols, m / in.cols);
        const std::size_t total = held + m;
        const std::size_t whole =
            first + m == n ? total : total / detail::kFastChunk * detail::kFastChunk;
        z.add(std::span<const std::uint8_t>(buf.data(), whole));
        std::memmove(buf.data(), buf.data() + whole, total - whole);
        held = total - whole;
        if (in.release) {
            in.release(k, first, m);
        }
    }
}

/// One panel as the page gets it: its thumbnail and its block, packed.
struct PanelOut {
    detail::Thumbs thumb;
    std::string data;
};

/// A worker's buffers, reused panel after panel (fresh ones would be page-faulted and
/// zeroed each time): the panel's block and its compressed bytes.
struct Scratch {
    std::vector<std::uint8_t> block, z;
};

/// Finished panels into the page in panel order, whatever order they finish in: the thread
/// that finishes the next one appends it (and any after it already waiting) outside the
/// lock, while the other threads go on making theirs; a panel's bytes are freed once
/// appended. The page is the same for any thread count.
class OrderedPanels {
  public:
    OrderedPanels(std::size_t n, std::vector<std::uint8_t>& page, detail::Thumbs& thumbs)
        : waiting_(n), page_(page), thumbs_(thumbs) {}

    void finished(std::size_t k, PanelOut done) {
        std::unique_lock lock(mutex_);
        waiting_[k] = std::move(done);
        if (appending_) {
            return; // the appending thread takes it when its turn comes
        }
        appending_ = true;
        while (next_ < waiting_.size() && waiting_[next_]) {
            const std::size_t at = next_++;
            const PanelOut p = std::move(*waiting_[at]);
            waiting_[at].reset();
            lock.unlock();
            const detail::Thumbs& t = p.thumb;
            thumbs_.max.insert(thumbs_.max.end(), t.max.begin(), t.max.end());
            thumbs_.mean.insert(thumbs_.mean.end(), t.mean.begin(), t.mean.end());
            thumbs_.state.insert(thumbs_.state.end(), t.state.begin(), t.state.end());
            detail::append_element(page_, "p" + std::to_string(at), p.data);
            lock.lock();
        }
        appending_ = false;
    }

  private:
    std::mutex mutex_;
    std::vector<std::optional<PanelOut>> waiting_;
    std::size_t next_ = 0;
    bool appending_ = false;
    std::vector<std::uint8_t>& page_;
    detail::Thumbs& thumbs_;
};

void append(std::vector<std::uint8_t>& page, const std::string& s) {
    page.insert(page.end(), s.begin(), s.end());
}

} // namespace

namespace detail {

std::vector<std::uint8_t> view_page(const HeatmapInput& in,
                                    const HeatmapOptions& o,
                                    const ColorNorm& norm,
                                    const std::vector<std::string>& notes,
                                    const PageFlags& flags,
                                    const PanelWriter& write_panels) {
    const Colormap cmap = *find_colormap(o.colormap);
    std::vector<std::string> titles;
    for (std::size_t p = 0; p < in.panels.size(); ++p) {
        titles.push_back(in.panels[p].title.empty() ? "panel " + std::to_string(p)
                                                    : in.panels[p].title);
    }
    Thumbs thumbs;
    thumbs.w = std::min<std::size_t>(80, in.cols);
    thumbs.h = std::min<std::size_t>(80, in.rows);
    const std::string cmap_base =
        cmap.reversed ? cmap.name.substr(0, cmap.name.size() - 2) : cmap.name;
    const std::string meta =
        std::string("{") + "\"title\":" + json_string(o.title) +
        ",\"gridCols\":" + std::to_string(in.grid_cols) + ",\"rows\":" + std::to_string(in.rows) +
        ",\"cols\":" + std::to_string(in.cols) + ",\"panels\":" + json_strings(titles) +
        ",\"rowLabels\":" + json_strings(in.row_labels) +
        ",\"colLabels\":" + json_strings(in.col_labels) + ",\"cmap\":" + json_string(cmap_base) +
        ",\"reversed\":" + (cmap.reversed ? "true" : "false") + ",\"tables\":" + json_tables() +
        ",\"vmin\":" + json_number(norm.vmin) + ",\"vmax\":" + json_number(norm.vmax) +
        ",\"scale\":" + json_string(o.scale == ColorScale::log ? "log" : "linear") +
        ",\"ticks\":" + json_colorbar_ticks(norm, 240.0) +
        ",\"pool\":" + json_string(o.pool == PoolMode::mean ? "mean" : "max") +
        ",\"decimals\":" + std::to_string(o.decimals) + ",\"notes\":" + json_strings(notes) +
        ",\"exact\":" + (flags.exact ? "true" : "false") +
        ",\"maxExactCells\":" + std::to_string(flags.max_exact_cells) +
        ",\"hasState\":" + (flags.states ? "true" : "false") +
        ",\"thumbW\":" + std::to_string(thumbs.w) + ",\"thumbH\":" + std::to_string(thumbs.h) +
        flags.extra_meta + "}";
    const std::vector<std::pair<std::string, std::string>> kv = {
        {"TITLE", html_text(o.title.empty() ? "attention weights" : o.title)},
        {"STYLE", std::string(kHtmlStyleBytes, kHtmlStyleByteCount)},
        {"SCRIPT", std::string(kHtmlScriptBytes, kHtmlScriptByteCount)},
        {"HEADSCRIPT", std::string(kHtmlHeadScriptBytes, kHtmlHeadScriptByteCount)},
        {"META", meta}};

    // The page up to the panels, the panels' elements as the writer makes them, the
    // thumbnails, then the rest of the page.
    const std::string_view page(kHtmlPageBytes, kHtmlPageByteCount);
    const std::size_t at_panels = page.find("{{PANELS}}");
    const std::size_t at_thumbs = page.find("{{THUMBS}}");
    ATTN_ASSERT(at_panels != std::string_view::npos && at_thumbs > at_panels);
    std::vector<std::uint8_t> out;
    out.reserve(flags.reserve + (std::size_t{1} << 20));
    append(out, fill(page.substr(0, at_panels), kv));
    write_panels(out, thumbs);
    append(out, fill(page.substr(at_panels + 10, at_thumbs - at_panels - 10), kv));
    std::vector<std::uint8_t> all = std::move(thumbs.max);
    all.insert(all.end(), thumbs.mean.begin(), thumbs.mean.end());
    all.insert(all.end(), thumbs.state.begin(), thumbs.state.end());
    append(out, packed(all, Pack::small));
    append(out, fill(page.substr(at_thumbs + 10), kv));
    return out;
}

void append_element(std::vector<std::uint8_t>& page,
                    const std::string& id,
                    const std::string& data) {
    const std::string open = "<script type=\"application/octet-stream\" id=\"" + id + "\">";
    const std::string_view close = "</script>\n";
    page.insert(page.end(), open.begin(), open.end());
    page.insert(page.end(), data.begin(), data.end());
    page.insert(page.end(), close.begin(), close.end());
}

} // namespace detail

std::vector<std::uint8_t>
heatmap_html_bytes(const HeatmapInput& in, const HeatmapOptions& o, const HtmlLimits& limits) {
    const bool own_scales = std::any_of(in.panels.begin(),
                                        in.panels.end(),
                                        [](const HeatmapPanel& p) { return p.scale.has_value(); });
    if (is_long_view(in.rows, in.cols)) {
        if (own_scales) {
            throw InputError("HTML view: a panel with a colour scale of its own (attn compare's "
                             "A - B) needs a map of at most 4096 x 4096, not " +
                             std::to_string(in.rows) + " x " + std::to_string(in.cols));
        }
        return long_view_html_bytes(in, o, o.view_top_k);
    }
    const std::size_t plane = in.rows * in.cols;
    const std::size_t cells = plane * in.panels.size();
    if (cells > limits.max_cells) {
        throw InputError("HTML view: " + std::to_string(in.panels.size()) + " panels of " +
                         std::to_string(in.rows) + "x" + std::to_string(in.cols) + " = " +
                         grouped(cells) + " cells are too many for one page (at most " +
                         grouped(limits.max_cells) + "); pick panels with " + option_name("head") +
                         " N or " + option_name("batch") + " N, or draw a PNG (pooled with " +
                         option_name("pool") + " max|mean)");
    }
    detail::validate_heatmap(in, o);
    // Full resolution: the colour range from every cell, as an unpooled PNG has it.
    // One pass for the range and whether any cell is masked or NaN (the page then carries
    // a state per cell); each panel is released after it.
    std::vector<std::string> notes;
    bool states = false;
    const ColorNorm norm = detail::full_range(in, o, notes, &states);
    detail::PageFlags flags;
    flags.exact = cells <= limits.max_exact_cells;
    flags.max_exact_cells = limits.max_exact_cells;
    flags.states = states;
    flags.reserve = cells / 2;
    if (own_scales) {
        flags.extra_meta = panel_scales_json(in);
    }
    // Run-length deflate for large maps: the attention weights' runs compress as well, much
    // faster (detail::Pack).
    const detail::Pack pack =
        cells > (std::size_t{1} << 24) ? detail::Pack::fast : detail::Pack::small;
    // Each panel's block compressed as it is made, a panel a task on `threads` threads (its
    // cells in a worker's buffer), appended in panel order (see OrderedPanels).
    const auto panels = [&](std::vector<std::uint8_t>& out, detail::Thumbs& thumbs) {
        const std::size_t n = in.panels.size();
        const unsigned threads = attn::detail::resolve_threads(o.threads, n);
        std::vector<Scratch> scratch(threads);
        OrderedPanels order(n, out, thumbs);
        attn::detail::parallel_for(n, threads, [&](unsigned worker, std::size_t k) {
            Scratch& s = scratch[worker];
            PanelOut done;
            done.thumb.w = thumbs.w;
            done.thumb.h = thumbs.h;
            ThumbRows thumb(in.rows, in.cols, states, done.thumb);
            if (pack == detail::Pack::fast && !states && !flags.exact) {
                detail::FastDeflate z(s.z);
                panel_stream(in, k, norm, z, thumb, s.block);
                z.finish();
                done.data = base64_encode(s.z);
            } else {
                panel_block(in, k, norm, states, flags.exact, s.block);
                thumb.add(s.block.data(), states ? s.block.data() + plane : nullptr, 0, in.rows);
                done.data = packed(s.block, pack, &s.z);
            }
            order.finished(k, std::move(done));
        });
    };
    return detail::view_page(in, o, norm, notes, flags, panels);
}

std::string
heatmap_html(const HeatmapInput& in, const HeatmapOptions& o, const HtmlLimits& limits) {
    const std::vector<std::uint8_t> bytes = heatmap_html_bytes(in, o, limits);
    return {bytes.begin(), bytes.end()};
}

} // namespace attn::render

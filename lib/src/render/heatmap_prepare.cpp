// The data side of the heatmap: validation of the input and options, pooling of long
// sequences into displayed cells, and the colour range (vmin/vmax, quantile clipping,
// log scale). No layout and no pixels: heatmap.cpp lays out what this prepares.
#include "attn/error.hpp"
#include "attn/parallel.hpp"
#include "attn/render/cell_pass.hpp"
#include "attn/render/heatmap.hpp"
#include "heatmap_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

namespace attn::render {

using detail::ceil_div;

namespace {

/// numpy's default (linear interpolation) quantile; reorders `v`.
double quantile(std::vector<float>& v, double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
    const double a = static_cast<double>(v[lo]);
    if (lo + 1 >= v.size()) {
        return a;
    }
    const float next = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
    const double b = static_cast<double>(next);
    return a + (b - a) * (pos - static_cast<double>(lo));
}

/// "99", "99.5": a percentage without trailing zeros.
std::string percent(double q) {
    std::string s = format_fixed(q * 100.0, 2);
    while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
        s.pop_back();
    }
    return s;
}

} // namespace

ColorScale color_scale_named(const std::string& name) {
    if (name != "linear" && name != "log") {
        throw InputError(option_name("scale") + ": expected \"linear\" or \"log\", got \"" + name +
                         "\"");
    }
    return name == "log" ? ColorScale::log : ColorScale::linear;
}

PoolMode pool_mode_named(const std::string& name) {
    if (name != "max" && name != "mean") {
        throw InputError(option_name("pool") + ": expected \"max\" or \"mean\", got \"" + name +
                         "\"");
    }
    return name == "mean" ? PoolMode::mean : PoolMode::max;
}

namespace detail {

void validate_heatmap(const HeatmapInput& in, const HeatmapOptions& o) {
    if (in.rows == 0 || in.cols == 0) {
        throw InputError("weights: nothing to draw: the map is " + std::to_string(in.rows) + "x" +
                         std::to_string(in.cols));
    }
    if (in.panels.empty()) {
        throw InputError("weights: nothing to draw: no panels");
    }
    for ([[maybe_unused]] const auto& p : in.panels) {
        ATTN_ASSERT(p.values.size() == in.rows * in.cols);
        ATTN_ASSERT(p.masked.empty() || p.masked.size() == in.rows * in.cols);
    }
    if (!in.col_labels.empty() && in.col_labels.size() != in.cols) {
        throw InputError(option_name("key_tokens") + ": expected " + std::to_string(in.cols) +
                         " key labels (one per key), got " + std::to_string(in.col_labels.size()));
    }
    if (!in.row_labels.empty() && in.row_labels.size() != in.rows) {
        throw InputError(option_name("query_tokens") + ": expected " + std::to_string(in.rows) +
                         " query labels (one per query), got " +
                         std::to_string(in.row_labels.size()));
    }
    if (!find_colormap(o.colormap)) {
        std::string names;
        for (const auto& n : colormap_names()) {
            names += (names.empty() ? "" : ", ") + n;
        }
        throw InputError(option_name("colormap") + ": unknown colormap '" + o.colormap +
                         "' (expected one of " + names + ", optionally with _r)");
    }
    if (o.vmin && !std::isfinite(*o.vmin)) {
        throw InputError(option_name("vmin") + ": expected a finite number");
    }
    if (o.vmax && !std::isfinite(*o.vmax)) {
        throw InputError(option_name("vmax") + ": expected a finite number");
    }
    if (o.vmin && o.vmax && !(*o.vmin < *o.vmax)) {
        throw InputError(option_name("vmin") + "/" + option_name("vmax") + ": vmin (" +
                         format_fixed(*o.vmin, 6) + ") must be less than vmax (" +
                         format_fixed(*o.vmax, 6) + ")");
    }
    if (o.scale == ColorScale::log && o.vmin && !(*o.vmin > 0.0)) {
        throw InputError(option_name("vmin") + ": must be > 0 with " + option_name("scale") +
                         " log");
    }
    if (o.scale == ColorScale::log && o.vmax && !(*o.vmax > 0.0)) {
        throw InputError(option_name("vmax") + ": must be > 0 with " + option_name("scale") +
                         " log");
    }
    if (o.clip && !(*o.clip >= 0.5 && *o.clip <= 1.0)) {
        throw InputError(option_name("clip") + ": expected a quantile in [0.5, 1], e.g. 0.99");
    }
    if (o.decimals < 0 || o.decimals > 6) {
        throw InputError(option_name("decimals") + ": expected 0 to 6");
    }
    if (!(o.font_size >= 4.0 && o.font_size <= 72.0)) {
        throw InputError(option_name("font_size") + ": expected 4 to 72 (points)");
    }
    if (!(o.dpi >= 25.0 && o.dpi <= 600.0)) {
        throw InputError(option_name("dpi") + ": expected 25 to 600");
    }
}

} // namespace detail

namespace {

/// Pools row `row` of a panel without masked cells into acc/count (pixel row `base`): per
/// block of `pool` cells, NaN left out, the sum in order (mean) or the greatest value (max).
void pool_row(const float* row,
              std::size_t cols,
              std::size_t pool,
              bool mean,
              double* acc,
              std::uint32_t* count) {
    for (std::size_t x = 0, j0 = 0; j0 < cols; ++x, j0 += pool) {
        const std::size_t j1 = std::min(cols, j0 + pool);
        std::uint32_t c = 0;
        if (mean) {
            double a = acc[x];
            for (std::size_t j = j0; j < j1; ++j) {
                if (!std::isnan(row[j])) {
                    a += static_cast<double>(row[j]);
                    ++c;
                }
            }
            acc[x] = a;
        } else {
            float m = -std::numeric_limits<float>::infinity();
            for (std::size_t j = j0; j < j1; ++j) {
                c += std::isnan(row[j]) ? 0U : 1U;
                m = row[j] > m ? row[j] : m; // NaN never wins
            }
            acc[x] = std::max(acc[x], static_cast<double>(m));
        }
        count[x] += c;
    }
}

/// Column maxima and counts (fold_row_max) pooled `pool` columns a pixel into acc/count:
/// the greatest maximum of each block (NaN never wins) and the sum of its counts.
void pool_columns(const std::vector<float>& col_max,
                  const std::vector<std::uint32_t>& col_count,
                  std::size_t pool,
                  double* acc,
                  std::uint32_t* count) {
    const std::size_t cols = col_max.size();
    for (std::size_t x = 0, j0 = 0; j0 < cols; ++x, j0 += pool) {
        const std::size_t j1 = std::min(cols, j0 + pool);
        float m = -std::numeric_limits<float>::infinity();
        std::uint32_t c = 0;
        for (std::size_t j = j0; j < j1; ++j) {
            m = col_max[j] > m ? col_max[j] : m;
            c += col_count[j];
        }
        acc[x] = std::max(acc[x], static_cast<double>(m));
        count[x] += c;
    }
}

/// Pools panel `k` into `vals`/`states` (cells outside `mask` only), releasing its cells
/// band of rows by band (HeatmapInput::release); `masked`/`bad`: set when a pixel is
/// hatched or NaN.
void pool_panel(const HeatmapInput& in,
                std::size_t k,
                bool mean,
                const PreparedHeatmap& out,
                std::vector<float>& vals,
                std::vector<CellState>& states,
                bool& any_masked,
                bool& any_bad) {
    const HeatmapPanel& p = in.panels[k];
    const std::size_t n = out.rows * out.cols;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    vals.assign(n, nan);
    states.assign(n, CellState::value);
    const std::size_t band = detail::band_rows(in.cols);
    const auto release_rows = [&](std::size_t first, std::size_t rows) {
        if (in.release) {
            in.release(k, first * in.cols, rows * in.cols);
        }
    };
    if (out.pool_rows == 1 && out.pool_cols == 1) {
        for (std::size_t i = 0; i < n; ++i) {
            if (!p.masked.empty() && p.masked[i] != 0) {
                states[i] = CellState::masked;
                any_masked = true;
            } else if (std::isnan(p.values[i])) {
                states[i] = CellState::bad;
                any_bad = true;
            } else {
                vals[i] = p.values[i];
            }
        }
        release_rows(0, in.rows);
        return;
    }
    const double acc_start = mean ? 0.0 : -std::numeric_limits<double>::infinity();
    std::vector<double> acc(n, acc_start);
    std::vector<std::uint32_t> count(n, 0);
    std::vector<std::uint8_t> had_mask(n, 0);
    std::vector<std::size_t> col_to(in.cols);
    for (std::size_t j = 0; j < in.cols; ++j) {
        col_to[j] = j / out.pool_cols;
    }
    // Max pooling without a mask folds each block row's rows into column maxima (in
    // vectors), then pools those: the same maximum as row by row (a zero's sign aside:
    // which of +0 and -0 is met first may differ, not its colour).
    const bool fold = p.masked.empty() && !mean;
    std::vector<float> col_max(fold ? in.cols : 0);
    std::vector<std::uint32_t> col_count(fold ? in.cols : 0);
    for (std::size_t i = 0; i < in.rows; ++i) {
        if (i > 0 && i % band == 0) {
            release_rows(i - band, band);
        }
        const std::size_t base = (i / out.pool_rows) * out.cols;
        const float* row = p.values.data() + i * in.cols;
        if (fold) {
            if (i % out.pool_rows == 0) {
                std::fill(col_max.begin(), col_max.end(), -std::numeric_limits<float>::infinity());
                std::fill(col_count.begin(), col_count.end(), 0U);
            }
            fold_row_max(row, in.cols, col_max.data(), col_count.data());
            if ((i + 1) % out.pool_rows == 0 || i + 1 == in.rows) {
                pool_columns(col_max, col_count, out.pool_cols, &acc[base], &count[base]);
            }
            continue;
        }
        if (p.masked.empty()) {
            pool_row(row, in.cols, out.pool_cols, mean, &acc[base], &count[base]);
            continue;
        }
        const std::uint8_t* mrow = p.masked.data() + i * in.cols;
        for (std::size_t j = 0; j < in.cols; ++j) {
            const std::size_t d = base + col_to[j];
            if (mrow[j] != 0) {
                had_mask[d] = 1;
                continue;
            }
            const double v = static_cast<double>(row[j]);
            if (std::isnan(v)) {
                continue; // NaN is ignored unless the whole block is NaN
            }
            acc[d] = mean ? acc[d] + v : std::max(acc[d], v);
            ++count[d];
        }
    }
    const std::size_t last = (in.rows - 1) / band * band; // the last band's first row
    release_rows(last, in.rows - last);
    for (std::size_t d = 0; d < n; ++d) {
        if (count[d] > 0) {
            vals[d] = static_cast<float>(mean ? acc[d] / count[d] : acc[d]);
        } else if (had_mask[d] != 0) {
            states[d] = CellState::masked;
            any_masked = true;
        } else {
            states[d] = CellState::bad;
            any_bad = true;
        }
    }
}

/// The colour range of the values `visit(f)` passes to f (finite ones count; log: positive
/// ones), or vmin/vmax, or the clip quantiles; notes the clipping. Without --clip the values
/// are not copied (a streamed map's range costs one pass).
template <class Visit>
ColorNorm range_of(const HeatmapOptions& o, Visit visit, std::vector<std::string>& notes) {
    const bool log = o.scale == ColorScale::log;
    double lo = log ? 1e-3 : 0.0, hi = 1.0;
    const auto counted = [log](float v) { return std::isfinite(v) && (!log || v > 0.0f); };
    if (o.clip) {
        std::vector<float> data;
        visit([&](float v) {
            if (counted(v)) {
                data.push_back(v);
            }
        });
        if (!data.empty()) {
            hi = quantile(data, *o.clip);
            lo = quantile(data, 1.0 - *o.clip);
        }
    } else {
        float mn = std::numeric_limits<float>::infinity(), mx = -mn;
        visit([&](float v) {
            if (counted(v)) {
                mn = std::min(mn, v);
                mx = std::max(mx, v);
            }
        });
        if (mn <= mx) {
            lo = static_cast<double>(mn);
            hi = static_cast<double>(mx);
        }
    }
    if (log && !o.vmin && hi > 0.0) {
        lo = std::max(lo, hi * 1e-6); // at most 6 decades: one 1e-30 must not flatten all
    }
    if (o.clip && (!o.vmin || !o.vmax)) {
        notes.push_back("colours clipped to the " + percent(1.0 - *o.clip) + "%–" +
                        percent(*o.clip) + "% quantiles");
    }
    if (o.vmin) {
        lo = *o.vmin;
    }
    if (o.vmax) {
        hi = *o.vmax;
    }
    if (lo == hi && !o.vmin && !o.vmax) {
        // A constant map: centre it in the colormap (matplotlib would paint it all low).
        const double d = log ? 0.0 : (lo == 0.0 ? 0.5 : std::abs(lo) * 0.5);
        lo = log ? lo / 10.0 : lo - d;
        hi = log ? hi * 10.0 : hi + d;
    }
    if (!(lo < hi)) {
        throw InputError(option_name(o.vmin ? "vmin" : "vmax") + ": the colour range is empty (" +
                         format_fixed(lo, 6) + " to " + format_fixed(hi, 6) + "); give both " +
                         option_name("vmin") + " and " + option_name("vmax"));
    }
    return {lo, hi, o.scale};
}

void fix_range(const HeatmapOptions& o, PreparedHeatmap& out) {
    out.norm = range_of(
        o,
        [&](const auto& f) {
            for (std::size_t p = 0; p < out.values.size(); ++p) {
                for (std::size_t i = 0; i < out.values[p].size(); ++i) {
                    if (out.states[p][i] == CellState::value) {
                        f(out.values[p][i]);
                    }
                }
            }
        },
        out.notes);
}
} // namespace

namespace detail {

std::size_t band_rows(std::size_t cols) {
    return std::max<std::size_t>(1, kBandCells / std::max<std::size_t>(1, cols));
}

namespace {

/// A band of cells' part of the colour range: the least and greatest value the range
/// counts (finite; log: positive), and whether any cell is masked or NaN.
struct BandRange {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    bool state = false;
};

BandRange band_range(const HeatmapPanel& p, std::size_t first, std::size_t n, bool log) {
    BandRange r;
    const float* v = p.values.data() + first;
    float lo = r.lo, hi = r.hi;
    constexpr float kMax = std::numeric_limits<float>::max();
    if (p.masked.empty()) { // the common case, in vectors (cell_range)
        const CellRange c = cell_range(v, n, log);
        r.lo = c.lo;
        r.hi = c.hi;
        r.state = c.nan;
        return r;
    }
    const std::uint8_t* m = p.masked.data() + first;
    for (std::size_t i = 0; i < n; ++i) {
        const float x = v[i];
        const bool blocked = m[i] != 0;
        r.state = r.state || blocked || std::isnan(x);
        const bool counted = !blocked && std::fabs(x) <= kMax && (!log || x > 0.0F);
        lo = counted && x < lo ? x : lo;
        hi = counted && x > hi ? x : hi;
    }
    r.lo = lo;
    r.hi = hi;
    return r;
}

} // namespace

ColorNorm full_range(const HeatmapInput& in,
                     const HeatmapOptions& o,
                     std::vector<std::string>& notes,
                     bool* any_state) {
    // Bands of rows, on o.threads threads, each released once read; then the range from
    // each band's least and greatest counted value (the same as from every value: the
    // rule only takes the least and greatest), or, with clip, from every value in turn.
    const std::size_t cells = in.rows * in.cols, band = band_rows(in.cols) * in.cols;
    const std::size_t bands = (cells + band - 1) / band, tasks = bands * in.panels.size();
    std::vector<BandRange> parts(tasks);
    const bool log = o.scale == ColorScale::log;
    const unsigned threads = o.clip ? 1 : attn::detail::resolve_threads(o.threads, tasks);
    const auto read_band = [&](std::size_t t, const std::function<void(float)>* each) {
        const std::size_t k = t / bands, first = (t % bands) * band;
        const std::size_t n = std::min(band, cells - first);
        const HeatmapPanel& p = in.panels[k];
        parts[t] = band_range(p, first, n, log);
        for (std::size_t i = 0; each != nullptr && !p.scale && i < n; ++i) {
            if (p.masked.empty() || p.masked[first + i] == 0) {
                (*each)(p.values[first + i]);
            }
        }
        if (in.release) {
            in.release(k, first, n);
        }
    };
    const ColorNorm norm = range_of(
        o,
        [&](const auto& f) {
            if (o.clip) { // every value, in order, on this thread
                const std::function<void(float)> each = [&f](float v) { f(v); };
                for (std::size_t t = 0; t < tasks; ++t) {
                    read_band(t, &each);
                }
                return;
            }
            attn::detail::parallel_for(
                tasks, threads, [&](unsigned, std::size_t t) { read_band(t, nullptr); });
            for (std::size_t t = 0; t < tasks; ++t) {
                if (!in.panels[t / bands].scale) { // a panel with its own range is not in it
                    f(parts[t].lo);
                    f(parts[t].hi);
                }
            }
        },
        notes);
    if (any_state != nullptr) {
        *any_state =
            std::any_of(parts.begin(), parts.end(), [](const BandRange& r) { return r.state; });
    }
    return norm;
}

} // namespace detail

double ColorNorm::operator()(double v) const {
    if (scale == ColorScale::log) {
        if (!(v > 0.0)) {
            return -std::numeric_limits<double>::infinity();
        }
        return (std::log10(v) - std::log10(vmin)) / (std::log10(vmax) - std::log10(vmin));
    }
    return (v - vmin) / (vmax - vmin);
}

std::string format_fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    std::string s = buf;
    if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) {
        s.erase(0, 1);
    }
    return s;
}

PreparedHeatmap prepare_heatmap(const HeatmapInput& in,
                                const HeatmapOptions& o,
                                std::size_t max_rows,
                                std::size_t max_cols) {
    detail::validate_heatmap(in, o);
    for (const HeatmapPanel& p : in.panels) {
        if (p.scale) {
            throw InputError("heatmap: panel '" + p.title +
                             "' has a colour scale of its own, which only the HTML view draws");
        }
    }
    PreparedHeatmap out;
    out.pool_rows = ceil_div(in.rows, std::max<std::size_t>(1, max_rows));
    out.pool_cols = ceil_div(in.cols, std::max<std::size_t>(1, max_cols));
    out.rows = ceil_div(in.rows, out.pool_rows);
    out.cols = ceil_div(in.cols, out.pool_cols);
    const std::size_t n = in.panels.size();
    out.values.resize(n);
    out.states.resize(n);
    // One panel per task on o.threads threads; each pixel's cells pooled in order (the
    // same values for any thread count).
    std::vector<std::uint8_t> masked(n, 0), bad(n, 0);
    attn::detail::parallel_for(
        n, attn::detail::resolve_threads(o.threads, n), [&](unsigned, std::size_t p) {
            bool m = false, b = false;
            pool_panel(in, p, o.pool == PoolMode::mean, out, out.values[p], out.states[p], m, b);
            masked[p] = m ? 1 : 0;
            bad[p] = b ? 1 : 0;
        });
    out.any_masked = std::find(masked.begin(), masked.end(), 1) != masked.end();
    out.any_bad = std::find(bad.begin(), bad.end(), 1) != bad.end();
    if (out.pool_rows > 1 || out.pool_cols > 1) {
        out.notes.push_back(std::string(o.pool == PoolMode::max ? "max" : "mean") + "-pooled " +
                            std::to_string(out.pool_rows) + "\u00D7" +
                            std::to_string(out.pool_cols) + ": " + std::to_string(in.rows) +
                            "\u00D7" + std::to_string(in.cols) + " cells shown as " +
                            std::to_string(out.rows) + "\u00D7" + std::to_string(out.cols));
    }
    fix_range(o, out);
    return out;
}

} // namespace attn::render

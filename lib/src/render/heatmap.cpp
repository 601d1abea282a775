// The heatmap figure: pooling and colour normalisation (prepare_heatmap), tick choice
// (thinning, rotation), and the layout of panels, axis titles, colorbar and notes into
// a Figure. Sizes are matplotlib's at 100 dpi (10 pt labels, 12 pt title, 0.8 pt lines,
// 3.5 pt ticks), scaled with the dpi; the canvas is then cropped tight with a 0.1 in pad.
#include "attn/render/heatmap.hpp"

#include "attn/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace attn::render {

namespace {

constexpr std::size_t kMaxLabelChars = 24;
constexpr double kMaxAnnotatedSide = 4000.0; // px: a forced --annotate may grow cells to this

std::size_t ceil_div(std::size_t a, std::size_t b) {
    return (a + b - 1) / b;
}

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

void validate(const HeatmapInput& in, const HeatmapOptions& o) {
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
        throw InputError("--xlabels: expected " + std::to_string(in.cols) +
                         " key labels (one per key), got " + std::to_string(in.col_labels.size()));
    }
    if (!in.row_labels.empty() && in.row_labels.size() != in.rows) {
        throw InputError("--ylabels: expected " + std::to_string(in.rows) +
                         " query labels (one per query), got " +
                         std::to_string(in.row_labels.size()));
    }
    if (!find_colormap(o.colormap)) {
        std::string names;
        for (const auto& n : colormap_names()) {
            names += (names.empty() ? "" : ", ") + n;
        }
        throw InputError("--cmap: unknown colormap '" + o.colormap + "' (expected one of " + names +
                         ", optionally with _r)");
    }
    if (o.vmin && !std::isfinite(*o.vmin)) {
        throw InputError("--vmin: expected a finite number");
    }
    if (o.vmax && !std::isfinite(*o.vmax)) {
        throw InputError("--vmax: expected a finite number");
    }
    if (o.vmin && o.vmax && !(*o.vmin < *o.vmax)) {
        throw InputError("--vmin/--vmax: vmin (" + format_fixed(*o.vmin, 6) +
                         ") must be less than vmax (" + format_fixed(*o.vmax, 6) + ")");
    }
    if (o.scale == ColorScale::log && o.vmin && !(*o.vmin > 0.0)) {
        throw InputError("--vmin: must be > 0 with --scale log");
    }
    if (o.scale == ColorScale::log && o.vmax && !(*o.vmax > 0.0)) {
        throw InputError("--vmax: must be > 0 with --scale log");
    }
    if (o.clip && !(*o.clip >= 0.5 && *o.clip <= 1.0)) {
        throw InputError("--clip: expected a quantile in [0.5, 1], e.g. 0.99");
    }
    if (o.decimals < 0 || o.decimals > 6) {
        throw InputError("--decimals: expected 0 to 6");
    }
    if (!(o.dpi >= 25.0 && o.dpi <= 600.0)) {
        throw InputError("--dpi: expected 25 to 600");
    }
}

/// Pools one panel into out.values/out.states (cells outside `mask` only).
void pool_panel(const HeatmapInput& in,
                const HeatmapPanel& p,
                bool mean,
                PreparedHeatmap& out,
                std::vector<float>& vals,
                std::vector<CellState>& states) {
    const std::size_t n = out.rows * out.cols;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    vals.assign(n, nan);
    states.assign(n, CellState::value);
    if (out.pool_rows == 1 && out.pool_cols == 1) {
        for (std::size_t i = 0; i < n; ++i) {
            if (!p.masked.empty() && p.masked[i] != 0) {
                states[i] = CellState::masked;
                out.any_masked = true;
            } else if (std::isnan(p.values[i])) {
                states[i] = CellState::bad;
                out.any_bad = true;
            } else {
                vals[i] = p.values[i];
            }
        }
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
    for (std::size_t i = 0; i < in.rows; ++i) {
        const std::size_t base = (i / out.pool_rows) * out.cols;
        const float* row = p.values.data() + i * in.cols;
        const std::uint8_t* mrow = p.masked.empty() ? nullptr : p.masked.data() + i * in.cols;
        for (std::size_t j = 0; j < in.cols; ++j) {
            const std::size_t d = base + col_to[j];
            if (mrow != nullptr && mrow[j] != 0) {
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
    for (std::size_t d = 0; d < n; ++d) {
        if (count[d] > 0) {
            vals[d] = static_cast<float>(mean ? acc[d] / count[d] : acc[d]);
        } else if (had_mask[d] != 0) {
            states[d] = CellState::masked;
            out.any_masked = true;
        } else {
            states[d] = CellState::bad;
            out.any_bad = true;
        }
    }
}

void fix_range(const HeatmapOptions& o, PreparedHeatmap& out) {
    const bool log = o.scale == ColorScale::log;
    std::vector<float> data;
    for (std::size_t p = 0; p < out.values.size(); ++p) {
        for (std::size_t i = 0; i < out.values[p].size(); ++i) {
            const float v = out.values[p][i];
            if (out.states[p][i] == CellState::value && std::isfinite(v) && (!log || v > 0.0f)) {
                data.push_back(v);
            }
        }
    }
    double lo = log ? 1e-3 : 0.0, hi = 1.0;
    if (!data.empty()) {
        if (o.clip) {
            hi = quantile(data, *o.clip);
            lo = quantile(data, 1.0 - *o.clip);
        } else {
            const auto [mn, mx] = std::minmax_element(data.begin(), data.end());
            lo = static_cast<double>(*mn);
            hi = static_cast<double>(*mx);
        }
        if (log && !o.vmin) {
            lo = std::max(lo, hi * 1e-6); // at most 6 decades: one 1e-30 must not flatten all
        }
    }
    if (o.clip && (!o.vmin || !o.vmax)) {
        out.notes.push_back("colours clipped to the " + percent(1.0 - *o.clip) + "%–" +
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
        throw InputError(std::string(o.vmin ? "--vmin" : "--vmax") +
                         ": the colour range is empty (" + format_fixed(lo, 6) + " to " +
                         format_fixed(hi, 6) + "); give both --vmin and --vmax");
    }
    out.norm = {lo, hi, o.scale};
}

/// The smallest of 1, 2, 5, 10, 20, 50, ... whose spacing is at least `need` px.
std::size_t nice_step(double need, double pitch) {
    const std::size_t mant[] = {1, 2, 5};
    for (std::size_t decade = 1; decade < (std::size_t{1} << 40); decade *= 10) {
        for (std::size_t m : mant) {
            if (static_cast<double>(m * decade) * pitch >= need) {
                return m * decade;
            }
        }
    }
    return std::size_t{1} << 40;
}

std::string superscript(long k) {
    static const char* const kDigits[] = {"\u2070",
                                          "\u00B9",
                                          "\u00B2",
                                          "\u00B3",
                                          "\u2074",
                                          "\u2075",
                                          "\u2076",
                                          "\u2077",
                                          "\u2078",
                                          "\u2079"};
    std::string digits = std::to_string(std::labs(k));
    std::string out = k < 0 ? "\u207B" : "";
    for (char c : digits) {
        out += kDigits[c - '0'];
    }
    return out;
}

/// Colorbar ticks: "nice" steps (1, 2, 2.5, 5 × 10^k) for linear, decades for log.
std::vector<std::pair<double, std::string>> colorbar_ticks(const ColorNorm& norm, int max_ticks) {
    std::vector<std::pair<double, std::string>> ticks;
    const double lo = norm.vmin, hi = norm.vmax;
    if (norm.scale == ColorScale::linear) {
        const double range = hi - lo;
        const double mant[] = {1.0, 2.0, 2.5, 5.0};
        for (int k = static_cast<int>(std::floor(std::log10(range / max_ticks))) - 1;; ++k) {
            for (double m : mant) {
                const double step = m * std::pow(10.0, k);
                const double first = std::ceil(lo / step - 1e-9);
                const double last = std::floor(hi / step + 1e-9);
                if (last - first + 1 <= max_ticks) {
                    int decimals =
                        std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
                    if (m == 2.5 && step < 10.0) {
                        ++decimals;
                    }
                    // first and last are whole numbers: count in integers.
                    for (long i = std::lround(first); i <= std::lround(last); ++i) {
                        const double tick = static_cast<double>(i) * step;
                        ticks.emplace_back(tick, format_fixed(tick, decimals));
                    }
                    return ticks;
                }
            }
        }
    }
    const long d0 = std::lround(std::ceil(std::log10(lo) - 1e-9));
    const long d1 = std::lround(std::floor(std::log10(hi) + 1e-9));
    if (d1 - d0 + 1 >= 2) {
        const long stride = (d1 - d0 + max_ticks) / max_ticks;
        for (long d = d0; d <= d1; d += stride) {
            ticks.emplace_back(std::pow(10.0, static_cast<double>(d)), "10" + superscript(d));
        }
        return ticks;
    }
    for (long d = d0 - 1; d <= d1; ++d) {
        for (double m : {1.0, 2.0, 5.0}) {
            const double v = m * std::pow(10.0, static_cast<double>(d));
            if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) {
                ticks.emplace_back(v, format_fixed(v, static_cast<int>(std::max(0L, -d))));
            }
        }
    }
    if (ticks.size() < 2) {
        ticks.clear();
        for (double v : {lo, hi}) {
            const int dec = std::max(0, 2 - static_cast<int>(std::floor(std::log10(v))));
            ticks.emplace_back(v, format_fixed(v, dec));
        }
    }
    return ticks;
}

/// Builds figures with sizes in the figure's dpi.
struct Builder {
    Figure fig;
    double pt = 100.0 / 72.0;

    void rect(double x, double y, double w, double h, Rgb c = {0, 0, 0}) {
        fig.rects.push_back({{x, y, w, h}, c});
    }
    void text(std::string s,
              double x,
              double y,
              double size,
              Anchor a = Anchor::start,
              bool vertical = false,
              Rgb c = {0, 0, 0}) {
        fig.texts.push_back({std::move(s), x, y, size, c, a, vertical});
    }
    /// A frame of width lw just outside the box.
    void frame(const Box& b, double lw) {
        rect(b.x - lw, b.y - lw, b.w + 2 * lw, lw);
        rect(b.x - lw, b.y + b.h, b.w + 2 * lw, lw);
        rect(b.x - lw, b.y, lw, b.h);
        rect(b.x + b.w, b.y, lw, b.h);
    }
};

/// The extent of a text item.
Box text_box(const FigureText& t) {
    const double w = text_width(t.text, t.size);
    const FontMetrics m = font_metrics(t.size);
    const double shift = t.anchor == Anchor::start ? 0.0 : t.anchor == Anchor::middle ? w / 2 : w;
    if (t.vertical) {
        return {t.x - m.ascent, t.y + shift - w, m.ascent + m.descent, w};
    }
    return {t.x - shift, t.y - m.ascent, w, m.ascent + m.descent};
}

/// Crops the canvas to its content plus `pad`, moving everything by whole pixels.
void crop(Figure& fig, const std::vector<Box*>& boxes, double pad) {
    double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
    const auto take = [&](const Box& b) {
        x0 = std::min(x0, b.x);
        y0 = std::min(y0, b.y);
        x1 = std::max(x1, b.x + b.w);
        y1 = std::max(y1, b.y + b.h);
    };
    for (const auto& g : fig.grids) {
        take(g.box);
    }
    for (const auto& r : fig.rects) {
        take(r.box);
    }
    for (const auto& t : fig.texts) {
        take(text_box(t));
    }
    const double dx = pad - std::floor(x0), dy = pad - std::floor(y0);
    for (auto& g : fig.grids) {
        g.box.x += dx;
        g.box.y += dy;
    }
    for (auto& r : fig.rects) {
        r.box.x += dx;
        r.box.y += dy;
    }
    for (auto& t : fig.texts) {
        t.x += dx;
        t.y += dy;
    }
    for (Box* b : boxes) {
        b->x += dx;
        b->y += dy;
    }
    fig.width = static_cast<int>(std::ceil(x1 + dx + pad));
    fig.height = static_cast<int>(std::ceil(y1 + dy + pad));
}

/// Panel columns: one row up to 4 panels, then about square with few empty slots.
std::size_t grid_columns(std::size_t n) {
    if (n <= 4) {
        return n;
    }
    const auto c = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(n))));
    const std::size_t empty_c = ceil_div(n, c) * c - n;
    const std::size_t empty_c1 = ceil_div(n, c + 1) * (c + 1) - n;
    return empty_c1 < empty_c ? c + 1 : c;
}

} // namespace

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
    validate(in, o);
    PreparedHeatmap out;
    out.pool_rows = ceil_div(in.rows, std::max<std::size_t>(1, max_rows));
    out.pool_cols = ceil_div(in.cols, std::max<std::size_t>(1, max_cols));
    out.rows = ceil_div(in.rows, out.pool_rows);
    out.cols = ceil_div(in.cols, out.pool_cols);
    out.values.resize(in.panels.size());
    out.states.resize(in.panels.size());
    for (std::size_t p = 0; p < in.panels.size(); ++p) {
        pool_panel(in, in.panels[p], o.pool == PoolMode::mean, out, out.values[p], out.states[p]);
    }
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

HeatmapFigure heatmap_figure(const HeatmapInput& in, const HeatmapOptions& o) {
    validate(in, o);
    const Colormap cmap = *find_colormap(o.colormap);
    const double s = o.dpi / 100.0;
    const double pt = o.dpi / 72.0;
    const double fs_title = 12 * pt, fs_label = 10 * pt, fs_tick = 10 * pt, fs_note = 8 * pt;
    const double lw = std::max(1.0, std::round(0.8 * pt));
    const double tick_len = std::round(3.5 * pt), tick_pad = 3.5 * pt, label_pad = 4 * pt;
    const double title_pad = 6 * pt;
    const FontMetrics m_tick = font_metrics(fs_tick), m_label = font_metrics(fs_label);

    const std::size_t n = in.panels.size();
    const std::size_t ncols = grid_columns(n);
    const std::size_t nrows = ceil_div(n, ncols);
    const double target = std::floor(
        (n == 1 ? 480.0 : std::clamp(1100.0 / static_cast<double>(ncols), 200.0, 400.0)) * s);
    const double max_cell = std::floor(120.0 * s), min_side = std::floor(120.0 * s);

    HeatmapFigure hf;
    const auto lim = static_cast<std::size_t>(target);
    hf.map = prepare_heatmap(in, o, lim, lim);
    const PreparedHeatmap& m = hf.map;
    const bool pooled = m.pool_rows > 1 || m.pool_cols > 1;

    // Cell size: square, as large as fits (at most max_cell); a short axis may grow its
    // cells so that the map is at least min_side long (a 1 x 4096 map is a visible strip).
    const double square =
        std::min(max_cell, std::floor(target / static_cast<double>(std::max(m.rows, m.cols))));
    double cw = std::max(1.0, square), ch = cw;
    if (cw * static_cast<double>(m.cols) < min_side) {
        cw = std::max(cw, std::min(max_cell, std::floor(min_side / static_cast<double>(m.cols))));
    }
    if (ch * static_cast<double>(m.rows) < min_side) {
        ch = std::max(ch, std::min(max_cell, std::floor(min_side / static_cast<double>(m.rows))));
    }

    // Annotations: the widest value must fit its cell at 10 pt (or 8 pt).
    double fs_annot = 0.0;
    if (o.annotate != Annotate::off) {
        if (pooled && o.annotate == Annotate::on) {
            throw InputError("--annotate: the map is pooled (" + m.notes.front() +
                             "); annotate a smaller map or use --no-annotate");
        }
        if (!pooled) {
            std::string widest;
            double widest_w = 0.0;
            for (std::size_t p = 0; p < n; ++p) {
                for (float v : m.values[p]) {
                    if (std::isnan(v)) {
                        continue;
                    }
                    std::string t = format_fixed(static_cast<double>(v), o.decimals);
                    if (t.size() >= widest.size()) {
                        const double w = text_width(t, 10.0);
                        if (w > widest_w) {
                            widest_w = w;
                            widest = t;
                        }
                    }
                }
            }
            for (double size : {10 * pt, 8 * pt}) {
                const double need_w = text_width(widest, size) + 0.5 * size;
                if (need_w <= cw && 1.4 * size <= ch) {
                    fs_annot = size;
                    break;
                }
            }
            if (fs_annot == 0.0 && o.annotate == Annotate::on) {
                fs_annot = 10 * pt;
                const double need = std::ceil(
                    std::max(text_width(widest, fs_annot) + 0.5 * fs_annot, 1.4 * fs_annot));
                cw = std::max(cw, need);
                ch = std::max(ch, need);
                const double side =
                    std::max(cw * static_cast<double>(m.cols), ch * static_cast<double>(m.rows));
                if (side > kMaxAnnotatedSide * s) {
                    throw InputError("--annotate: a " + std::to_string(in.rows) + "x" +
                                     std::to_string(in.cols) + " map is too large to annotate (" +
                                     std::to_string(static_cast<long>(side)) +
                                     " px per side); use --no-annotate");
                }
            }
        }
    }
    hf.annotated = fs_annot > 0.0;

    const double W = cw * static_cast<double>(m.cols), H = ch * static_cast<double>(m.rows);
    const double pitch_x = W / static_cast<double>(in.cols);
    const double pitch_y = H / static_cast<double>(in.rows);

    // Tick labels: tokens or indices, thinned to nice steps, x rotated when tokens collide.
    const auto labels = [](const std::vector<std::string>& given, std::size_t count) {
        std::vector<std::string> out;
        out.reserve(count);
        for (std::size_t i = 0; i < count; ++i) {
            out.push_back(given.empty() ? std::to_string(i)
                                        : truncate_text(given[i], kMaxLabelChars));
        }
        return out;
    };
    const std::vector<std::string> xl = labels(in.col_labels, in.cols);
    const std::vector<std::string> yl = labels(in.row_labels, in.rows);
    const auto widest = [&](const std::vector<std::string>& v, std::size_t step) {
        double w = 0.0;
        for (std::size_t i = 0; i < v.size(); i += step) {
            w = std::max(w, text_width(v[i], fs_tick));
        }
        return w;
    };
    {
        const std::size_t step_h = nice_step(widest(xl, 1) + 0.5 * fs_tick, pitch_x);
        const std::size_t step_r = nice_step(1.1 * fs_tick, pitch_x);
        hf.x_label_step = step_h;
        if (!in.col_labels.empty() && step_h > 1 && step_r < step_h) {
            hf.x_label_step = step_r;
            hf.x_labels_rotated = true;
        }
        // Indices are spaced like matplotlib's locator; tokens as densely as they fit.
        hf.y_label_step = nice_step((in.row_labels.empty() ? 2.4 : 1.3) * fs_tick, pitch_y);
    }
    const double xl_band =
        hf.x_labels_rotated ? widest(xl, hf.x_label_step) : m_tick.cap_height + m_tick.descent;
    const double yl_band = widest(yl, hf.y_label_step);

    Builder b;
    b.pt = pt;
    b.fig.hatch_period = static_cast<int>(std::lround(6 * s));
    const double multi = n > 1 ? 1.0 : 0.0;
    const FontMetrics m_panel = font_metrics(fs_label);
    const double panel_title_h =
        multi * std::ceil(lw + title_pad + m_panel.descent + m_panel.ascent);
    const double x_decor_h = std::ceil(lw + tick_len + tick_pad + xl_band + label_pad +
                                       m_label.cap_height + m_label.descent);
    const double hgap = std::round(20 * s), vgap = std::round(14 * s);

    // Row tops: a row carries x labels if one of its panels is the lowest in its column.
    std::vector<double> row_y(nrows, panel_title_h);
    const auto lowest = [&](std::size_t i) { return i + ncols >= n; };
    for (std::size_t r = 1; r < nrows; ++r) {
        bool labels_here = false;
        for (std::size_t c = 0; c < ncols && (r - 1) * ncols + c < n; ++c) {
            labels_here = labels_here || lowest((r - 1) * ncols + c);
        }
        row_y[r] =
            row_y[r - 1] + H + (labels_here ? x_decor_h : lw + tick_len) + vgap + panel_title_h;
    }

    for (std::size_t i = 0; i < n; ++i) {
        const double mx = static_cast<double>(i % ncols) * (W + hgap);
        const double my = row_y[i / ncols];
        const Box box{mx, my, W, H};
        hf.panels.push_back(box);

        FigureGrid g;
        g.id = "panel-" + std::to_string(i);
        g.box = box;
        g.rows = m.rows;
        g.cols = m.cols;
        g.colors.resize(m.rows * m.cols);
        for (std::size_t k = 0; k < g.colors.size(); ++k) {
            g.colors[k] = cmap(m.norm(static_cast<double>(m.values[i][k])));
        }
        if (m.any_masked || m.any_bad) {
            g.states = m.states[i];
        }
        if (hf.annotated) {
            const double cap = font_metrics(fs_annot).cap_height;
            for (std::size_t r = 0; r < m.rows; ++r) {
                for (std::size_t c = 0; c < m.cols; ++c) {
                    const std::size_t k = r * m.cols + c;
                    if (m.states[i][k] != CellState::value) {
                        continue;
                    }
                    b.text(format_fixed(static_cast<double>(m.values[i][k]), o.decimals),
                           mx + (static_cast<double>(c) + 0.5) * cw,
                           my + (static_cast<double>(r) + 0.5) * ch + cap / 2,
                           fs_annot,
                           Anchor::middle,
                           false,
                           contrast_text_color(g.colors[k]));
                }
            }
        }
        b.fig.grids.push_back(std::move(g));
        b.frame(box, lw);

        // Ticks on every panel; labels on the left column and the lowest panels.
        for (std::size_t j = 0; j < in.cols; j += hf.x_label_step) {
            const double tx = mx + (static_cast<double>(j) + 0.5) * pitch_x;
            b.rect(std::round(tx - lw / 2), my + H + lw, lw, tick_len);
            if (!lowest(i)) {
                continue;
            }
            const double top = my + H + lw + tick_len + tick_pad;
            if (hf.x_labels_rotated) {
                b.text(xl[j], tx + m_tick.cap_height / 2, top, fs_tick, Anchor::end, true);
            } else {
                b.text(xl[j], tx, top + m_tick.cap_height, fs_tick, Anchor::middle);
            }
        }
        for (std::size_t r = 0; r < in.rows; r += hf.y_label_step) {
            const double ty = my + (static_cast<double>(r) + 0.5) * pitch_y;
            b.rect(mx - lw - tick_len, std::round(ty - lw / 2), tick_len, lw);
            if (i % ncols == 0) {
                b.text(yl[r],
                       mx - lw - tick_len - tick_pad,
                       ty + m_tick.cap_height / 2,
                       fs_tick,
                       Anchor::end);
            }
        }
        if (lowest(i) && !o.x_title.empty()) {
            const double top = my + H + lw + tick_len + tick_pad + xl_band + label_pad;
            b.text(o.x_title, mx + W / 2, top + m_label.cap_height, fs_label, Anchor::middle);
        }
        if (i % ncols == 0 && !o.y_title.empty()) {
            const double right = mx - lw - tick_len - tick_pad - yl_band - label_pad;
            b.text(o.y_title, right - m_label.descent, my + H / 2, fs_label, Anchor::middle, true);
        }
        if (n > 1) {
            b.text(in.panels[i].title,
                   mx + W / 2,
                   my - lw - title_pad - m_panel.descent,
                   fs_label,
                   Anchor::middle);
        }
    }

    // Colorbar on the right, spanning all panel rows.
    const std::size_t used_cols = std::min(n, ncols);
    const double grid_w = static_cast<double>(used_cols) * (W + hgap) - hgap;
    const double cb_x = grid_w + lw + std::round(std::clamp(0.05 * grid_w, 12 * s, 30 * s));
    const double cb_y = row_y.front();
    const double cb_h = row_y.back() + H - cb_y;
    const double cb_w = std::round(std::clamp(cb_h / 20, 10 * s, 20 * s));
    hf.colorbar = {cb_x, cb_y, cb_w, cb_h};
    {
        FigureGrid g;
        g.id = "colorbar";
        g.box = hf.colorbar;
        g.rows = 256;
        g.cols = 1;
        for (std::size_t k = 0; k < 256; ++k) {
            g.colors.push_back(cmap.entry(255 - k));
        }
        b.fig.grids.push_back(std::move(g));
        b.frame(hf.colorbar, lw);
        const int max_ticks = std::clamp(static_cast<int>(cb_h / (2.5 * fs_tick)), 2, 9);
        for (const auto& [v, label] : colorbar_ticks(m.norm, max_ticks)) {
            const double ty = cb_y + cb_h * (1.0 - std::clamp(m.norm(v), 0.0, 1.0));
            b.rect(cb_x + cb_w + lw, std::round(ty - lw / 2), tick_len, lw);
            b.text(
                label, cb_x + cb_w + lw + tick_len + tick_pad, ty + m_tick.cap_height / 2, fs_tick);
        }
    }
    if (m.any_masked || m.any_bad) {
        FigureGrid g;
        g.id = "masked-swatch";
        g.box = {cb_x, cb_y + cb_h + lw + std::round(12 * s), cb_w, cb_w};
        g.rows = g.cols = 1;
        g.colors = {kHatchBackground};
        g.states = {CellState::masked};
        const std::string what = m.any_masked && m.any_bad ? "masked / NaN"
                                 : m.any_masked            ? "masked"
                                                           : "NaN";
        b.text(
            what, cb_x + cb_w + lw + tick_pad, g.box.y + cb_w / 2 + m_tick.cap_height / 2, fs_tick);
        b.frame(g.box, lw);
        b.fig.grids.push_back(std::move(g));
    }

    // Title and notes above everything placed so far.
    double top = 1e300;
    for (const auto& t : b.fig.texts) {
        top = std::min(top, text_box(t).y);
    }
    for (const auto& r : b.fig.rects) {
        top = std::min(top, r.box.y);
    }
    if (!m.notes.empty()) {
        std::string note;
        for (const auto& s_note : m.notes) {
            note += (note.empty() ? "" : "  \u00B7  ") + s_note;
        }
        const FontMetrics mn = font_metrics(fs_note);
        const double base = top - title_pad - mn.descent;
        b.text(note, grid_w / 2, base, fs_note, Anchor::middle, false, {85, 85, 85});
        top = base - mn.ascent;
    }
    if (!o.title.empty()) {
        const double base = top - title_pad - font_metrics(fs_title).descent;
        b.text(o.title, grid_w / 2, base, fs_title, Anchor::middle);
    }

    hf.figure = std::move(b.fig);
    std::vector<Box*> boxes;
    for (auto& p : hf.panels) {
        boxes.push_back(&p);
    }
    boxes.push_back(&hf.colorbar);
    crop(hf.figure, boxes, std::round(10 * s));
    return hf;
}

Image heatmap(const HeatmapInput& input, const HeatmapOptions& options) {
    return rasterize(heatmap_figure(input, options).figure);
}

} // namespace attn::render

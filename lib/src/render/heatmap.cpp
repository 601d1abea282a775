// The heatmap figure's layout: cell size, annotations, tick labels, panels in a grid,
// axis titles, colorbar and notes, into a Figure (pooling and colour range come from
// prepare_heatmap in heatmap_prepare.cpp). Sizes are matplotlib's at 100 dpi (10 pt labels, 12 pt
// title, 0.8 pt lines, 3.5 pt ticks), scaled with the dpi; the canvas is then cropped tight with a
// 0.1 in pad.
#include "attn/render/heatmap.hpp"

#include "attn/error.hpp"
#include "heatmap_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace attn::render {

namespace {

constexpr double kMaxAnnotatedSide = 4000.0; // px: a forced --annotate may grow cells to this

} // namespace

using namespace detail;

namespace {

/// The figure's sizes in px: matplotlib's at 100 dpi (10 pt labels, 12 pt title, 0.8 pt
/// lines, 3.5 pt ticks), scaled with the dpi and the font size.
struct Sizes {
    double s, pt, fs_title, fs_label, fs_tick, fs_note, lw, tick_len, tick_pad, label_pad,
        title_pad;
    FontMetrics m_tick, m_label;

    explicit Sizes(const HeatmapOptions& o)
        : s(o.dpi / 100.0), pt(o.dpi / 72.0), fs_title(o.font_size / 10.0 * 12 * pt),
          fs_label(o.font_size / 10.0 * 10 * pt), fs_tick(o.font_size / 10.0 * 10 * pt),
          fs_note(o.font_size / 10.0 * 8 * pt), lw(std::max(1.0, std::round(0.8 * pt))),
          tick_len(std::round(3.5 * pt)), tick_pad(3.5 * pt), label_pad(4 * pt), title_pad(6 * pt),
          m_tick(font_metrics(fs_tick)), m_label(font_metrics(fs_label)) {}
};

/// The cells' width and height: square, as large as fits `target` (at most 120 px at 100
/// dpi); a short axis may grow its cells so that the map is at least 120 px long (a
/// 1 x 4096 map is a visible strip); an axis with tokens grows to its budget when its
/// labels need the pitch (cells stay square while both fit `grown`).
std::pair<double, double> cell_size(const PreparedHeatmap& m,
                                    const TokenPitch& token_need,
                                    double target,
                                    double grown,
                                    double budget_x,
                                    double budget_y,
                                    double s) {
    const double max_cell = std::floor(120.0 * s), min_side = std::floor(120.0 * s);
    const bool pooled = m.pool_rows > 1 || m.pool_cols > 1;
    // Cell size: square, as large as fits (at most max_cell); a short axis may grow its
    // cells so that the map is at least min_side long (a 1 x 4096 map is a visible strip).
    const double square =
        std::min(max_cell, std::floor(target / static_cast<double>(std::max(m.rows, m.cols))));
    double cw = std::max(1.0, square);
    double ch = cw;
    if (cw * static_cast<double>(m.cols) < min_side) {
        cw = std::max(cw, std::min(max_cell, std::floor(min_side / static_cast<double>(m.cols))));
    }
    if (ch * static_cast<double>(m.rows) < min_side) {
        ch = std::max(ch, std::min(max_cell, std::floor(min_side / static_cast<double>(m.rows))));
    }
    // Token axes take the room their labels need (cells stay square while both fit).
    const bool grow_x = token_need.x > 0.0 && cw < token_need.x * static_cast<double>(m.pool_cols);
    const bool grow_y = token_need.y > 0.0 && ch < token_need.y * static_cast<double>(m.pool_rows);
    if (grow_x) {
        cw = std::max(cw, std::floor(budget_x / static_cast<double>(m.cols)));
    }
    if (grow_y) {
        ch = std::max(ch, std::floor(budget_y / static_cast<double>(m.rows)));
    }
    if ((grow_x || grow_y) && !pooled &&
        std::max(cw, ch) * static_cast<double>(std::max(m.rows, m.cols)) <= grown) {
        cw = ch = std::max(cw, ch);
    }

    return {cw, ch};
}

/// The annotations' font size: the widest value must fit its cell at 10 pt (or 8 pt); 0
/// when annotations are off or do not fit. A forced --annotate grows the cells (cw, ch)
/// instead, and refuses a pooled map or one that would grow too large.
double annotation_size(const HeatmapInput& in,
                       const HeatmapOptions& o,
                       const PreparedHeatmap& m,
                       double pt,
                       double s,
                       double& cw,
                       double& ch) {
    const bool pooled = m.pool_rows > 1 || m.pool_cols > 1;
    double fs_annot = 0.0;
    if (o.annotate != Annotate::off) {
        if (pooled && o.annotate == Annotate::on) {
            throw InputError(option_name("annotate") + ": the map is pooled (" + m.notes.front() +
                             "); annotate a smaller map or use " + option_name("annotate=False"));
        }
        if (!pooled) {
            std::string widest;
            double widest_w = 0.0;
            for (std::size_t p = 0; p < in.panels.size(); ++p) {
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
                    throw InputError(option_name("annotate") + ": a " + std::to_string(in.rows) +
                                     "x" + std::to_string(in.cols) +
                                     " map is too large to annotate (" +
                                     std::to_string(static_cast<long>(side)) +
                                     " px per side); use " + option_name("annotate=False"));
                }
            }
        }
    }
    return fs_annot;
}

/// Panel i's cells (colours, masked and NaN states) in `box` of cw x ch cells, and their
/// values as text when annotated (`fs_annot` > 0).
FigureGrid panel_grid(Builder& b,
                      const HeatmapOptions& o,
                      const PreparedHeatmap& m,
                      const Colormap& cmap,
                      std::size_t i,
                      const Box& box,
                      double cw,
                      double ch,
                      double fs_annot) {
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
    if (fs_annot > 0.0) {
        const double cap = font_metrics(fs_annot).cap_height;
        for (std::size_t r = 0; r < m.rows; ++r) {
            for (std::size_t c = 0; c < m.cols; ++c) {
                const std::size_t k = r * m.cols + c;
                if (m.states[i][k] != CellState::value) {
                    continue;
                }
                b.text(format_fixed(static_cast<double>(m.values[i][k]), o.decimals),
                       box.x + (static_cast<double>(c) + 0.5) * cw,
                       box.y + (static_cast<double>(r) + 0.5) * ch + cap / 2,
                       fs_annot,
                       Anchor::middle,
                       false,
                       contrast_text_color(g.colors[k]));
            }
        }
    }
    return g;
}

/// The colorbar's gradient, frame and ticks in `box`, and the masked/NaN swatch below it.
void colorbar(
    Builder& b, const Sizes& z, const Colormap& cmap, const PreparedHeatmap& m, const Box& box) {
    const double s = z.s, lw = z.lw, tick_len = z.tick_len, tick_pad = z.tick_pad;
    const double fs_tick = z.fs_tick;
    const FontMetrics m_tick = z.m_tick;
    const double cb_x = box.x, cb_y = box.y, cb_w = box.w, cb_h = box.h;
    FigureGrid bar;
    bar.id = "colorbar";
    bar.box = box;
    bar.rows = 256;
    bar.cols = 1;
    for (std::size_t k = 0; k < 256; ++k) {
        bar.colors.push_back(cmap.entry(255 - k));
    }
    b.fig.grids.push_back(std::move(bar));
    b.frame(box, lw);
    const int max_ticks = std::clamp(static_cast<int>(cb_h / (2.5 * fs_tick)), 2, 9);
    for (const auto& [v, label] : colorbar_ticks(m.norm, max_ticks)) {
        const double ty = cb_y + cb_h * (1.0 - std::clamp(m.norm(v), 0.0, 1.0));
        b.rect(cb_x + cb_w + lw, std::round(ty - lw / 2), tick_len, lw);
        b.text(label, cb_x + cb_w + lw + tick_len + tick_pad, ty + m_tick.cap_height / 2, fs_tick);
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
}

/// The vertical extents between two rows of panels: a panel's height, the band under it
/// with x labels (or ticks alone), the gap.
struct RowBands {
    double panel, with_labels, ticks_only, gap;
};

/// Each row's top: a row carries x labels if one of its panels is the lowest in its column.
std::vector<double>
row_tops(std::size_t n, std::size_t ncols, double panel_title_h, const RowBands& bands) {
    const std::size_t nrows = ceil_div(n, ncols);
    std::vector<double> row_y(nrows, panel_title_h);
    for (std::size_t r = 1; r < nrows; ++r) {
        bool labels_here = false;
        for (std::size_t c = 0; c < ncols && (r - 1) * ncols + c < n; ++c) {
            labels_here = labels_here || (r - 1) * ncols + c + ncols >= n;
        }
        row_y[r] = row_y[r - 1] + bands.panel +
                   (labels_here ? bands.with_labels : bands.ticks_only) + bands.gap + panel_title_h;
    }
    return row_y;
}

/// What every panel's ticks and labels need: the labels, their bands and pitches.
struct PanelAxes {
    const std::vector<std::string>& x;
    const std::vector<std::string>& y;
    double x_band, y_band, pitch_x, pitch_y;
    std::size_t x_step, y_step;
    bool x_rotated;
};

/// One panel's ticks (on every panel), its tick labels (x on the lowest panel of a column,
/// y on the left column) and axis titles.
void panel_axes(Builder& b,
                const Sizes& z,
                const HeatmapInput& in,
                const HeatmapOptions& o,
                const PanelAxes& ax,
                const Box& box,
                bool lowest,
                bool left_column) {
    const double lw = z.lw, tick_len = z.tick_len, tick_pad = z.tick_pad, fs_tick = z.fs_tick;
    const FontMetrics& m_tick = z.m_tick;
    const double mx = box.x, my = box.y, W = box.w, H = box.h;
    for (std::size_t j = 0; j < in.cols; j += ax.x_step) {
        const double tx = mx + (static_cast<double>(j) + 0.5) * ax.pitch_x;
        b.rect(std::round(tx - lw / 2), my + H + lw, lw, tick_len);
        if (!lowest) {
            continue;
        }
        const double top = my + H + lw + tick_len + tick_pad;
        if (ax.x_rotated) {
            b.text(ax.x[j], tx + m_tick.cap_height / 2, top, fs_tick, Anchor::end, true);
        } else {
            b.text(ax.x[j], tx, top + m_tick.cap_height, fs_tick, Anchor::middle);
        }
    }
    for (std::size_t r = 0; r < in.rows; r += ax.y_step) {
        const double ty = my + (static_cast<double>(r) + 0.5) * ax.pitch_y;
        b.rect(mx - lw - tick_len, std::round(ty - lw / 2), tick_len, lw);
        if (left_column) {
            b.text(ax.y[r],
                   mx - lw - tick_len - tick_pad,
                   ty + m_tick.cap_height / 2,
                   fs_tick,
                   Anchor::end);
        }
    }
    if (lowest && !o.x_title.empty()) {
        const double top = my + H + lw + tick_len + tick_pad + ax.x_band + z.label_pad;
        b.text(o.x_title, mx + W / 2, top + z.m_label.cap_height, z.fs_label, Anchor::middle);
    }
    if (left_column && !o.y_title.empty()) {
        const double right = mx - lw - tick_len - tick_pad - ax.y_band - z.label_pad;
        b.text(o.y_title, right - z.m_label.descent, my + H / 2, z.fs_label, Anchor::middle, true);
    }
}

/// The notes (pooling, thinned labels) and the title, centred on the grid's width above
/// everything placed so far.
void title_and_notes(Builder& b,
                     const Sizes& z,
                     const HeatmapOptions& o,
                     const std::vector<std::string>& map_notes,
                     const std::vector<std::string>& label_notes,
                     double grid_w) {
    const double title_pad = z.title_pad, fs_note = z.fs_note, fs_title = z.fs_title;
    double top = 1e300;
    for (const auto& t : b.fig.texts) {
        top = std::min(top, text_extent(t).y);
    }
    for (const auto& r : b.fig.rects) {
        top = std::min(top, r.box.y);
    }
    if (!map_notes.empty() || !label_notes.empty()) {
        std::string note;
        std::vector<std::string> all = map_notes;
        all.insert(all.end(), label_notes.begin(), label_notes.end());
        for (const auto& s_note : all) {
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
}

/// The grid's columns and each panel's room: `target` px per map side, up to `grown` for
/// an axis with tokens, and each axis's budget (what its tokens need, within the two).
struct MapRoom {
    std::size_t ncols;
    double target, grown;
    TokenPitch token_need;
    double budget_x, budget_y;
};

MapRoom map_room(const HeatmapInput& in, const HeatmapOptions& o, const Sizes& z) {
    const double s = z.s;
    const std::size_t n = in.panels.size();
    // The model view fixes its columns (heads); else --cols, else about square.
    const std::size_t ncols = in.grid_cols > 0 ? std::min(in.grid_cols, n)
                              : o.columns > 0  ? std::min(o.columns, n)
                                               : grid_columns(n);
    const double smallest = in.grid_cols > 0 ? 120.0 : 200.0; // a model view has many columns
    const double target = std::floor(
        (n == 1 ? 480.0 : std::clamp(1100.0 / static_cast<double>(ncols), smallest, 400.0)) * s);

    // Every token is drawn: an axis with tokens may grow its map beyond `target` (up to
    // `grown` px per panel) until each token has the pitch it needs.
    const double grown =
        std::max(target,
                 std::floor(o.max_grown_side * 2.0 /
                            static_cast<double>(std::max<std::size_t>(2, ncols)) * s));
    const TokenPitch token_need = token_pitch(in, z.fs_tick);
    const auto budget = [&](double pitch, std::size_t count) {
        return std::clamp(pitch * static_cast<double>(count), target, grown);
    };
    return {ncols,
            target,
            grown,
            token_need,
            budget(token_need.x, in.cols),
            budget(token_need.y, in.rows)};
}

/// The colorbar's box: right of the grid (`grid_w` wide), spanning the panel rows from
/// `top` to `bottom`.
Box colorbar_box(const Sizes& z, double grid_w, double top, double bottom) {
    const double s = z.s;
    const double cb_x = grid_w + z.lw + std::round(std::clamp(0.05 * grid_w, 12 * s, 30 * s));
    const double cb_y = top;
    const double cb_h = bottom - cb_y;
    const double cb_w = std::round(std::clamp(cb_h / 20, 10 * s, 20 * s));
    return {cb_x, cb_y, cb_w, cb_h};
}

} // namespace

HeatmapFigure heatmap_figure(const HeatmapInput& in, const HeatmapOptions& o) {
    validate_heatmap(in, o);
    const Colormap cmap = *find_colormap(o.colormap);
    const Sizes z(o);
    const double s = z.s, pt = z.pt, fs_label = z.fs_label, fs_tick = z.fs_tick, lw = z.lw;
    const double tick_len = z.tick_len, tick_pad = z.tick_pad, label_pad = z.label_pad;
    const double title_pad = z.title_pad;
    const FontMetrics m_tick = z.m_tick, m_label = z.m_label;

    const std::size_t n = in.panels.size();
    const MapRoom room = map_room(in, o, z);
    const std::size_t ncols = room.ncols;
    const TokenPitch& token_need = room.token_need;
    const double target = room.target, grown = room.grown;
    const double budget_x = room.budget_x, budget_y = room.budget_y;

    HeatmapFigure hf;
    hf.map = prepare_heatmap(
        in, o, static_cast<std::size_t>(budget_y), static_cast<std::size_t>(budget_x));
    const PreparedHeatmap& m = hf.map;

    // Cell size: square, as large as fits; token axes take the room their labels need.
    auto [cw, ch] = cell_size(m, token_need, target, grown, budget_x, budget_y, s);

    // Annotations: the widest value must fit its cell at 10 pt (or 8 pt).
    const double fs_annot = annotation_size(in, o, m, pt, s, cw, ch);
    hf.annotated = fs_annot > 0.0;

    const double W = cw * static_cast<double>(m.cols), H = ch * static_cast<double>(m.rows);
    const double pitch_x = W / static_cast<double>(in.cols);
    const double pitch_y = H / static_cast<double>(in.rows);

    // Tick labels: tokens or indices, thinned to nice steps, x rotated when tokens collide.
    const TickLabels ticks = tick_labels(in, fs_tick, pitch_x, pitch_y);
    const std::vector<std::string>& xl = ticks.x;
    const std::vector<std::string>& yl = ticks.y;
    hf.x_label_step = ticks.x_step;
    hf.y_label_step = ticks.y_step;
    hf.x_labels_rotated = ticks.x_rotated;
    hf.label_notes = ticks.notes;
    const auto widest = [&](const std::vector<std::string>& v, std::size_t step) {
        return widest_label(v, step, fs_tick);
    };
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

    const auto lowest = [&](std::size_t i) { return i + ncols >= n; };
    const std::vector<double> row_y =
        row_tops(n, ncols, panel_title_h, {H, x_decor_h, lw + tick_len, vgap});

    const PanelAxes ax{xl,
                       yl,
                       xl_band,
                       yl_band,
                       pitch_x,
                       pitch_y,
                       hf.x_label_step,
                       hf.y_label_step,
                       hf.x_labels_rotated};
    for (std::size_t i = 0; i < n; ++i) {
        const double mx = static_cast<double>(i % ncols) * (W + hgap);
        const double my = row_y[i / ncols];
        const Box box{mx, my, W, H};
        hf.panels.push_back(box);

        b.fig.grids.push_back(panel_grid(b, o, m, cmap, i, box, cw, ch, fs_annot));
        b.frame(box, lw);
        panel_axes(b, z, in, o, ax, box, lowest(i), i % ncols == 0);
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
    hf.colorbar = colorbar_box(z, grid_w, row_y.front(), row_y.back() + H);
    colorbar(b, z, cmap, m, hf.colorbar);

    // Title and notes above everything placed so far.
    title_and_notes(b, z, o, m.notes, hf.label_notes, grid_w);

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

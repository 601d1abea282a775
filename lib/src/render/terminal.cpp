// The terminal renderer: a table of coloured cells with values when the map fits, else
// half-block pixels ("▀": foreground = upper row, background = lower row), pooled to the
// terminal size. Colour codes are emitted only when they change within a line.
#include "attn/render/terminal.hpp"

#include "attn/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace attn::render {

namespace {

constexpr Rgb kMaskedFg{150, 150, 150};
constexpr Rgb kMaskedBg{242, 242, 242};
constexpr const char* kUpperHalf = "\u2580";
constexpr const char* kHatch = "\u2571";
constexpr const char* kShades[] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};
constexpr std::size_t kMaxLabel = 12;
constexpr int kLegendWidth = 24;

/// Writes text with colours, emitting escape sequences only on change.
class Painter {
  public:
    explicit Painter(TermColor mode) : mode_(mode) {}

    void fg(Rgb c) { set(fg_, sgr(38, c)); }
    void bg(Rgb c) { set(bg_, sgr(48, c)); }
    void default_bg() {
        if (mode_ != TermColor::none && !bg_.empty()) {
            out_ += "\x1b[49m";
            bg_.clear();
        }
    }
    void text(std::string_view s) { out_ += s; }
    void end_line() {
        if (!fg_.empty() || !bg_.empty()) {
            out_ += "\x1b[0m";
        }
        fg_.clear();
        bg_.clear();
        out_ += '\n';
    }
    std::string take() { return std::move(out_); }

  private:
    /// Emits `code` unless it is what `current` already holds (or colour is off).
    void set(std::string& current, const std::string& code) {
        if (mode_ != TermColor::none && current != code) {
            out_ += code;
            current = code;
        }
    }
    std::string sgr(int which, Rgb c) const {
        char buf[32];
        if (mode_ == TermColor::truecolor) {
            std::snprintf(buf, sizeof buf, "\x1b[%d;2;%u;%u;%um", which, c.r, c.g, c.b);
        } else {
            std::snprintf(buf, sizeof buf, "\x1b[%d;5;%dm", which, xterm256_index(c));
        }
        return buf;
    }

    TermColor mode_;
    std::string out_;
    std::string fg_, bg_; ///< the escape sequences in effect (empty: default)
};

std::string repeat(std::string_view s, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += s;
    }
    return out;
}

std::string pad_left(const std::string& s, std::size_t w) {
    const std::size_t len = text_length(s);
    return len >= w ? s : std::string(w - len, ' ') + s;
}

std::string center(const std::string& s, std::size_t w) {
    const std::size_t len = text_length(s);
    if (len >= w) {
        return s;
    }
    const std::size_t right = (w - len) / 2;
    return std::string(w - len - right, ' ') + s + std::string(right, ' ');
}

std::string label(const std::vector<std::string>& given, std::size_t i, std::size_t max_chars) {
    return given.empty() ? std::to_string(i) : truncate_text(given[i], max_chars);
}

std::string short_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

std::string shade(double t) {
    const double c = std::clamp(t, 0.0, 1.0);
    return kShades[std::min<std::size_t>(4, static_cast<std::size_t>(c * 5.0))];
}

void trim_line_end(std::string& s) {
    while (!s.empty() && s.back() == ' ') {
        s.pop_back();
    }
}

/// Title and notes.
void header(Painter& p, const HeatmapOptions& o, const PreparedHeatmap& m) {
    if (!o.title.empty()) {
        p.text(o.title);
        p.end_line();
    }
    for (const auto& n : m.notes) {
        p.text(n);
        p.end_line();
    }
}

/// Axis names and the legend bar.
void footer(Painter& p,
            const HeatmapOptions& o,
            const PreparedHeatmap& m,
            const Colormap& cmap,
            TermColor mode) {
    if (!o.y_title.empty() || !o.x_title.empty()) {
        p.text("rows: " + o.y_title + " \u00B7 columns: " + o.x_title);
        p.end_line();
    }
    p.text(short_number(m.norm.vmin) + " ");
    for (int k = 0; k < kLegendWidth; ++k) {
        const double t = (k + 0.5) / kLegendWidth;
        if (mode == TermColor::none) {
            p.text(shade(t));
        } else {
            p.bg(cmap(t));
            p.text(" ");
        }
    }
    p.default_bg();
    std::string tail = " " + short_number(m.norm.vmax) + "  " + cmap.name;
    if (m.norm.scale == ColorScale::log) {
        tail += ", log scale";
    }
    p.text(tail);
    if (m.any_masked || m.any_bad) {
        p.text("  ");
        p.fg(kMaskedFg);
        p.bg(kMaskedBg);
        p.text(kHatch);
        p.default_bg();
        p.text(m.any_masked && m.any_bad ? " masked / NaN" : m.any_masked ? " masked" : " NaN");
    }
    p.end_line();
}

std::string table_mode(const HeatmapInput& in,
                       const HeatmapOptions& o,
                       const PreparedHeatmap& m,
                       const Colormap& cmap,
                       TermColor mode,
                       bool annotate,
                       std::size_t cw) {
    Painter p(mode);
    header(p, o, m);
    std::size_t yw = 0;
    for (std::size_t i = 0; i < in.rows; ++i) {
        yw = std::max(yw, text_length(label(in.row_labels, i, kMaxLabel)));
    }
    for (std::size_t k = 0; k < in.panels.size(); ++k) {
        if (in.panels.size() > 1) {
            p.text(in.panels[k].title);
            p.end_line();
        }
        std::string xs(yw + 1, ' ');
        for (std::size_t j = 0; j < in.cols; ++j) {
            xs += center(label(in.col_labels, j, cw - 1), cw);
        }
        trim_line_end(xs);
        p.text(xs);
        p.end_line();
        for (std::size_t i = 0; i < in.rows; ++i) {
            p.text(pad_left(label(in.row_labels, i, kMaxLabel), yw) + " ");
            for (std::size_t j = 0; j < in.cols; ++j) {
                const std::size_t c = i * in.cols + j;
                if (m.states[k][c] != CellState::value) {
                    p.fg(kMaskedFg);
                    p.bg(kMaskedBg);
                    p.text(repeat(kHatch, cw));
                    continue;
                }
                const double t = m.norm(static_cast<double>(m.values[k][c]));
                const std::string value =
                    annotate ? format_fixed(static_cast<double>(m.values[k][c]), o.decimals) : "";
                if (mode == TermColor::none) {
                    p.text(annotate ? center(value, cw) : repeat(shade(t), cw));
                    continue;
                }
                const Rgb color = cmap(t);
                p.bg(color);
                p.fg(contrast_text_color(color));
                p.text(center(value, cw));
            }
            p.end_line();
        }
    }
    footer(p, o, m, cmap, mode);
    return p.take();
}

/// The row labels' width: the longest label (at most kMaxLabel), else the row count's
/// digits.
std::size_t row_label_width(const HeatmapInput& in) {
    std::size_t yw = std::min(
        kMaxLabel, in.row_labels.empty() ? std::to_string(in.rows).size() : std::size_t{kMaxLabel});
    if (!in.row_labels.empty()) {
        yw = 0;
        for (const auto& l : in.row_labels) {
            yw = std::max(yw, std::min(kMaxLabel, text_length(l)));
        }
    }
    return yw;
}

/// x labels: the source index (or token) of every step-th displayed column; the step (1, 2,
/// 5, 10, 20, ...) leaves room for the longest.
std::size_t x_label_step(const HeatmapInput& in, const PreparedHeatmap& m, std::size_t kx) {
    std::size_t xmax = 0;
    for (std::size_t j = 0; j < m.cols; ++j) {
        xmax = std::max(xmax, text_length(label(in.col_labels, j * m.pool_cols, 8)));
    }
    std::size_t step = 1;
    while (step * kx < xmax + 1) {
        step = step == 1 ? 2 : step == 2 ? 5 : step * 2;
    }
    return step;
}

/// Tokens that do not fit are skipped, never silently: one line says how many show.
void skipped_labels_line(Painter& p,
                         const HeatmapInput& in,
                         std::size_t key_stride,
                         std::size_t query_stride) {
    std::string skipped;
    if (!in.col_labels.empty() && key_stride > 1) {
        skipped = "1 in " + std::to_string(key_stride) + " key tokens";
    }
    if (!in.row_labels.empty() && query_stride > 1) {
        skipped += (skipped.empty() ? "" : " and ") + std::string("1 in ") +
                   std::to_string(query_stride) + " query tokens";
    }
    if (!skipped.empty()) {
        p.text("labels: " + skipped +
               " shown (the terminal is too small for all; -o FILE.svg "
               "draws every one)");
        p.end_line();
    }
}

/// The cells of panel k's line whose upper pixel row is `top`: each displayed column kx
/// characters wide, a displayed row ky pixel rows tall; with colour, half blocks whose
/// background is the pixel row below.
void pixel_cells(Painter& p,
                 const PreparedHeatmap& m,
                 const Colormap& cmap,
                 std::size_t k,
                 std::size_t top,
                 std::size_t kx,
                 std::size_t ky,
                 std::size_t px_rows,
                 bool color) {
    const std::size_t r = top / ky; // displayed row of the upper pixel
    for (std::size_t j = 0; j < m.cols; ++j) {
        const std::size_t a = r * m.cols + j;
        const auto cell_color = [&](std::size_t idx) {
            return m.states[k][idx] == CellState::value
                       ? cmap(m.norm(static_cast<double>(m.values[k][idx])))
                       : kMaskedBg;
        };
        for (std::size_t x = 0; x < kx; ++x) {
            if (!color) {
                p.text(m.states[k][a] == CellState::value
                           ? shade(m.norm(static_cast<double>(m.values[k][a])))
                           : kHatch);
                continue;
            }
            const std::size_t below = ((top + 1) / ky) * m.cols + j;
            const bool has_below = top + 1 < px_rows;
            if (m.states[k][a] != CellState::value &&
                (!has_below || m.states[k][below] != CellState::value)) {
                // Blocked (or NaN) on the whole line: hatched, as in the legend, so
                // that it never reads as a small weight.
                p.fg(kMaskedFg);
                p.bg(kMaskedBg);
                p.text(kHatch);
                continue;
            }
            p.fg(cell_color(a));
            if (has_below) {
                p.bg(cell_color(below));
            } else {
                p.default_bg();
            }
            p.text(kUpperHalf);
        }
    }
}

/// The x labels under a panel: every step-th displayed column's, left-aligned, each
/// skipped when the previous one reaches it.
void x_labels_line(Painter& p,
                   const HeatmapInput& in,
                   const PreparedHeatmap& m,
                   std::size_t yw,
                   std::size_t kx,
                   std::size_t step) {
    std::string xs(yw + 1, ' ');
    std::size_t end = 0;
    for (std::size_t j = 0; j < m.cols; j += step) {
        const std::string s = label(in.col_labels, j * m.pool_cols, 8);
        if (j * kx < end) {
            continue;
        }
        xs.resize(yw + 1 + j * kx, ' ');
        xs += s;
        end = j * kx + text_length(s) + 1;
    }
    p.text(xs);
    p.end_line();
}

std::string pixel_mode(const HeatmapInput& in, const HeatmapOptions& o, const TermOptions& term) {
    const bool color = term.color != TermColor::none;
    const auto max_lines = static_cast<std::size_t>(std::max(4, term.max_lines));
    // Row labels first (their width limits the columns).
    const std::size_t yw = row_label_width(in);
    const auto width = static_cast<std::size_t>(std::max(16, term.width));
    const std::size_t max_cols = width > yw + 2 ? width - yw - 2 : 8;
    // Pixel rows: two per line with colour (half blocks), one per line without.
    const std::size_t per_line = color ? 2 : 1;
    const std::size_t max_px_rows = per_line * max_lines;
    const PreparedHeatmap m = prepare_heatmap(in, o, max_px_rows, max_cols);
    const Colormap cmap = *find_colormap(o.colormap); // valid: prepare_heatmap checked
    // Use the room: a displayed cell is kx characters wide and ky pixel rows tall, as
    // square as the height allows (a half block is about square; a line is two wide).
    const std::size_t kx = std::max<std::size_t>(1, max_cols / m.cols);
    const std::size_t ky =
        std::max<std::size_t>(1, std::min(color ? kx : kx / 2, max_px_rows / m.rows));
    const std::size_t px_rows = m.rows * ky;
    Painter p(term.color);
    const std::size_t lines = (px_rows + per_line - 1) / per_line;
    // Every line is labelled when it holds one displayed row; two rows a line (colour)
    // label every 4th line of a tall map.
    const std::size_t label_every = lines <= 12 || per_line == 1 ? 1 : 4;
    const std::size_t step = x_label_step(in, m, kx);
    header(p, o, m);
    skipped_labels_line(
        p, in, step * m.pool_cols, (ky > 1 ? 1 : label_every * per_line) * m.pool_rows);
    for (std::size_t k = 0; k < in.panels.size(); ++k) {
        if (in.panels.size() > 1) {
            p.text(in.panels[k].title);
            p.end_line();
        }
        std::size_t last_row = m.rows; // the row whose label was printed last
        for (std::size_t l = 0; l < lines; ++l) {
            const std::size_t top = l * per_line;
            const std::size_t r = top / ky; // displayed row of the upper pixel
            const bool first_line_of_row = r != last_row;
            last_row = r;
            // Labels: each row's first line when rows span lines, else every line (or
            // every 4th line of a tall map).
            const bool show = ky > 1 ? first_line_of_row : l % label_every == 0;
            const std::string y = show ? label(in.row_labels, r * m.pool_rows, kMaxLabel) : "";
            p.text(pad_left(y, yw) + " ");
            pixel_cells(p, m, cmap, k, top, kx, ky, px_rows, color);
            p.end_line();
        }
        x_labels_line(p, in, m, yw, kx, step);
    }
    footer(p, o, m, cmap, term.color);
    return p.take();
}

} // namespace

TermColor term_color_from_env(const char* no_color, const char* colorterm) {
    if (no_color != nullptr && no_color[0] != '\0') {
        return TermColor::none;
    }
    if (colorterm != nullptr &&
        (std::strcmp(colorterm, "truecolor") == 0 || std::strcmp(colorterm, "24bit") == 0)) {
        return TermColor::truecolor;
    }
    return TermColor::palette256;
}

TermColor
term_color(ColorChoice choice, bool to_terminal, const char* no_color, const char* colorterm) {
    if (choice == ColorChoice::never || (choice == ColorChoice::automatic && !to_terminal)) {
        return TermColor::none;
    }
    if (choice == ColorChoice::always) {
        return term_color_from_env(nullptr, colorterm); // the flag overrides NO_COLOR
    }
    return term_color_from_env(no_color, colorterm);
}

TermSize term_size(int tty_columns, int tty_lines, const char* columns, const char* lines) {
    const auto from_env = [](const char* v) {
        if (v == nullptr) {
            return 0;
        }
        char* end = nullptr;
        const long n = std::strtol(v, &end, 10);
        return end != v && *end == '\0' && n > 0 && n < 10000 ? static_cast<int>(n) : 0;
    };
    TermSize t;
    t.columns = tty_columns > 0 ? tty_columns : from_env(columns);
    t.lines = tty_lines > 0 ? tty_lines : from_env(lines);
    t.columns = t.columns > 0 ? t.columns : 80;
    t.lines = t.lines > 0 ? t.lines : 24;
    return t;
}

TermOptions term_options(TermColor color, TermSize size) {
    // A panel is its title, its lines and its x labels: it fits the screen with a line
    // to spare for the prompt.
    return {color, size.columns, std::max(4, size.lines - 3)};
}

int xterm256_index(Rgb c) {
    static constexpr int kLevels[] = {0, 95, 135, 175, 215, 255};
    const auto nearest_level = [](int v) {
        int best = 0;
        for (int i = 1; i < 6; ++i) {
            if (std::abs(kLevels[i] - v) < std::abs(kLevels[best] - v)) {
                best = i;
            }
        }
        return best;
    };
    const auto dist = [&](int r, int g, int b) {
        return (r - c.r) * (r - c.r) + (g - c.g) * (g - c.g) + (b - c.b) * (b - c.b);
    };
    const int ri = nearest_level(c.r), gi = nearest_level(c.g), bi = nearest_level(c.b);
    const int cube = 16 + 36 * ri + 6 * gi + bi;
    const int cube_d = dist(kLevels[ri], kLevels[gi], kLevels[bi]);
    const int mean = (c.r + c.g + c.b) / 3;
    const int gi2 = std::clamp((mean - 8 + 5) / 10, 0, 23);
    const int grey = 8 + 10 * gi2;
    return dist(grey, grey, grey) < cube_d ? 232 + gi2 : cube;
}

std::string
heatmap_terminal(const HeatmapInput& in, const HeatmapOptions& o, const TermOptions& term) {
    const auto width = static_cast<std::size_t>(std::max(16, term.width));
    const auto max_lines = static_cast<std::size_t>(std::max(4, term.max_lines));
    // Table mode needs one line per query and 2+ columns per key: decide that before
    // looking at values (a 4096 x 4096 map must not be formatted cell by cell).
    if (in.rows <= max_lines && in.cols * 2 < width) {
        const PreparedHeatmap full = prepare_heatmap(in, o, in.rows, in.cols); // validates
        std::size_t vw = 0, xmax = 0, yw = 0;
        for (const auto& panel : full.values) {
            for (float v : panel) {
                if (!std::isnan(v)) {
                    vw = std::max(vw, format_fixed(static_cast<double>(v), o.decimals).size());
                }
            }
        }
        for (std::size_t j = 0; j < in.cols; ++j) {
            xmax = std::max(xmax, text_length(label(in.col_labels, j, 8)));
        }
        for (std::size_t i = 0; i < in.rows; ++i) {
            yw = std::max(yw, text_length(label(in.row_labels, i, kMaxLabel)));
        }
        const bool annotate = o.annotate != Annotate::off;
        const std::size_t cw = std::max(annotate ? vw + 2 : 2, xmax + 1);
        if (yw + 1 + in.cols * cw <= width) {
            return table_mode(in, o, full, *find_colormap(o.colormap), term.color, annotate, cw);
        }
    }
    if (o.annotate == Annotate::on) {
        throw InputError(option_name("annotate") + ": a " + std::to_string(in.rows) + "x" +
                         std::to_string(in.cols) +
                         " map does not fit the terminal with values; use " +
                         option_name("annotate=False"));
    }
    return pixel_mode(in, o, term);
}

} // namespace attn::render

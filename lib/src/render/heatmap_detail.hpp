// Internal to attn_render: what the heatmap's source files share (validation, tick and
// layout helpers, the figure builder). Not installed; not part of the public API.
#pragma once

#include "attn/render/cell_pass.hpp"
#include "attn/render/heatmap.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attn::render::detail {

using render::ColorIndexer;

inline std::size_t ceil_div(std::size_t a, std::size_t b) {
    return (a + b - 1) / b;
}

/// Throws InputError naming the option (option_name: "vmin", "key_tokens", ...) that is out
/// of range.
void validate_heatmap(const HeatmapInput& in, const HeatmapOptions& o);

/// Cells per band of rows in a pass over a panel (about 1 MiB of float32): what is read
/// and released at a time.
inline constexpr std::size_t kBandCells = std::size_t{1} << 18;
/// Rows per band: kBandCells / cols, at least one.
std::size_t band_rows(std::size_t cols);

/// The colour range of every unmasked cell at full resolution (prepare_heatmap's rule
/// without pooling), read in one pass by bands of rows on options.threads threads (each
/// band released after it) with no copy unless options clip (then on one thread, in
/// order); `notes` gets the clipping note. `any_state` (if given): whether any cell is
/// masked or NaN.
ColorNorm full_range(const HeatmapInput& in,
                     const HeatmapOptions& o,
                     std::vector<std::string>& notes,
                     bool* any_state = nullptr);

/// The smallest of 1, 2, 5, 10, 20, 50, ... whose spacing is at least `need` px.
std::size_t nice_step(double need, double pitch);

/// Colorbar ticks: "nice" steps (1, 2, 2.5, 5 × 10^k) for linear, decades for log.
std::vector<std::pair<double, std::string>> colorbar_ticks(const ColorNorm& norm, int max_ticks);

/// Crops the canvas to its content plus `pad`, moving everything by whole pixels.
void crop(Figure& fig, const std::vector<Box*>& boxes, double pad);

/// Panel columns: one row up to 4 panels, then about square with few empty slots.
std::size_t grid_columns(std::size_t n);

/// Widest of every step-th label, in pixels at size_px.
double widest_label(const std::vector<std::string>& v, std::size_t step, double size_px);

/// Pixels per source cell that the tokens of each axis need to be drawn all (0: the axis
/// has indices, spaced like matplotlib's ticks).
struct TokenPitch {
    double x = 0.0, y = 0.0;
};
TokenPitch token_pitch(const HeatmapInput& in, double fs_tick);

/// The tick labels of both axes (tokens cut to 24 characters, or indices) and the step
/// of those drawn: every label that fits its pitch (x rotated when tokens collide).
/// `notes` states each token axis that had to skip labels.
struct TickLabels {
    std::vector<std::string> x, y;
    std::size_t x_step = 1, y_step = 1;
    bool x_rotated = false;
    std::vector<std::string> notes;
};
TickLabels tick_labels(const HeatmapInput& in, double fs_tick, double pitch_x, double pitch_y);

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

} // namespace attn::render::detail

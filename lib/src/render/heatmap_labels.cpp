// The heatmap's tick labels: tokens (or indices) per axis, how much room the tokens need,
// and how densely they are drawn. Tokens are never thinned silently: when the figure has
// reached its size limit and a token axis still has to skip labels, a note says so.
#include "heatmap_detail.hpp"

#include <algorithm>
#include <cmath>

namespace attn::render::detail {

namespace {

constexpr std::size_t kMaxLabelChars = 24;

std::vector<std::string> labels(const std::vector<std::string>& given, std::size_t count) {
    std::vector<std::string> out;
    out.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        out.push_back(given.empty() ? std::to_string(i) : truncate_text(given[i], kMaxLabelChars));
    }
    return out;
}

std::string ordinal(std::size_t k) {
    const std::size_t tens = k % 100;
    const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                         : k % 10 == 1              ? "st"
                         : k % 10 == 2              ? "nd"
                         : k % 10 == 3              ? "rd"
                                                    : "th";
    return std::to_string(k) + suffix;
}

std::string thinned_note(const char* axis, std::size_t step, std::size_t count) {
    return std::string(axis) + " labels thinned: every " + ordinal(step) + " of " +
           std::to_string(count) + " drawn (too many for the figure; try a smaller --font-size)";
}

} // namespace

double widest_label(const std::vector<std::string>& v, std::size_t step, double size_px) {
    double w = 0.0;
    for (std::size_t i = 0; i < v.size(); i += step) {
        w = std::max(w, text_width(v[i], size_px));
    }
    return w;
}

TokenPitch token_pitch(const HeatmapInput& in, double fs_tick) {
    // Rotated key tokens need a line of text each (1.1 em); query tokens 1.3 em (they are
    // read across, so a little air between them).
    return {in.col_labels.empty() ? 0.0 : std::ceil(1.1 * fs_tick),
            in.row_labels.empty() ? 0.0 : std::ceil(1.3 * fs_tick)};
}

TickLabels tick_labels(const HeatmapInput& in, double fs_tick, double pitch_x, double pitch_y) {
    TickLabels t;
    t.x = labels(in.col_labels, in.cols);
    t.y = labels(in.row_labels, in.rows);
    const std::size_t step_h = nice_step(widest_label(t.x, 1, fs_tick) + 0.5 * fs_tick, pitch_x);
    const std::size_t step_r = nice_step(1.1 * fs_tick, pitch_x);
    t.x_step = step_h;
    if (!in.col_labels.empty() && step_h > 1 && step_r < step_h) {
        t.x_step = step_r;
        t.x_rotated = true;
    }
    // Indices are spaced like matplotlib's locator; tokens as densely as they fit.
    t.y_step = nice_step((in.row_labels.empty() ? 2.4 : 1.3) * fs_tick, pitch_y);
    if (!in.col_labels.empty() && t.x_step > 1) {
        t.notes.push_back(thinned_note("key", t.x_step, in.cols));
    }
    if (!in.row_labels.empty() && t.y_step > 1) {
        t.notes.push_back(thinned_note("query", t.y_step, in.rows));
    }
    return t;
}

} // namespace attn::render::detail

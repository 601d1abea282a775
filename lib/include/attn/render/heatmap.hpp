// The attention heatmap: panels (one per head), tick labels from tokens, axis titles,
// a colorbar, annotations, masked cells, pooling of long sequences, and the colour
// normalisation (linear/log, vmin/vmax, quantile clipping) shared by every back-end
// (PNG, SVG, terminal). Builds a Figure of pixels and text; writes no files.
#pragma once

#include "attn/render/colormap.hpp"
#include "attn/render/figure.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace attn::render {

enum class ColorScale { linear, log };
enum class PoolMode { max, mean };
enum class Annotate { automatic, on, off };

/// The colour scale named "linear" or "log" (every front end's one reading of the option
/// `scale`); InputError naming the option for anything else.
ColorScale color_scale_named(const std::string& name);

/// The pooling named "max" or "mean" (the option `pool`); InputError for anything else.
PoolMode pool_mode_named(const std::string& name);

/// One map of rows x cols weights (row-major), e.g. one head.
/// A panel's own colour scale: its colormap and linear range, for a panel that shows another
/// quantity than the others (attn compare's signed A - B beside A and B). The HTML view of
/// maps up to 4096 x 4096 only; the PNG and the long view refuse it.
struct PanelScale {
    std::string colormap; ///< see colormap_names(); "_r" reverses
    double vmin = 0.0, vmax = 1.0;
};

struct HeatmapPanel {
    std::string title;                    ///< e.g. "head 3"; shown when there are 2+ panels
    std::span<const float> values;        ///< rows·cols
    std::span<const std::uint8_t> masked; ///< empty, or rows·cols with 1 = masked
    std::optional<PanelScale> scale{};    ///< empty: the figure's colormap and range
};

/// What to draw: panels of equal shape [rows = Lq, cols = Lk] and their labels.
struct HeatmapInput {
    std::size_t rows = 0, cols = 0;
    std::vector<HeatmapPanel> panels;
    std::vector<std::string> row_labels; ///< empty: indices 0..rows-1
    std::vector<std::string> col_labels; ///< empty: indices 0..cols-1
    /// Panels per row of the grid; 0: automatic (one row up to 4, then about square). The
    /// model view sets it to the heads, so rows are layers and columns heads.
    std::size_t grid_cols = 0;
    /// Called with a panel's index and a range of its cells [first, first + count) each time
    /// a pass is done with them (prepare_heatmap pools each panel once; the HTML view reads
    /// the cells twice, band of rows by band of rows: the colour range, then the cells; the
    /// long view once, by blocks of rows; any thread may call it): a caller reading them
    /// from a mapped file (io::NpyView) drops their pages (read again if touched later), so
    /// memory stays bounded by the picture and the bands in flight. May be empty.
    std::function<void(std::size_t panel, std::size_t first, std::size_t count)> release{};
};

struct HeatmapOptions {
    std::string title;                ///< empty: no title
    std::string colormap = "viridis"; ///< see colormap_names(); "_r" reverses
    std::optional<double> vmin, vmax; ///< default: from the data shown (all panels)
    ColorScale scale = ColorScale::linear;
    std::optional<double> clip;    ///< quantile q in [0.5, 1]: range = [q(1-q), q(q)]
    PoolMode pool = PoolMode::max; ///< when there are more cells than pixels
    Annotate annotate = Annotate::automatic;
    int decimals = 2;        ///< annotation digits after the point
    double dpi = 100.0;      ///< 100: matplotlib's default pixel size
    double font_size = 10.0; ///< points: tick labels and axis titles (title 1.2x, notes 0.8x)
    std::size_t columns = 0; ///< panels per grid row; 0: automatic (one row up to 4)
    /// A panel's map may grow to this many pixels per side (at 100 dpi, 1 panel; half of
    /// it times 2/columns in a grid) so that every token label is drawn; 0: never grow.
    double max_grown_side = 2400.0;
    /// The HTML view's panels coloured, pooled and compressed this many at a time (0: all
    /// cores); the bytes are the same for any count.
    unsigned threads = 0;
    /// The HTML view of panels longer than 4096 (render/long_view.hpp): each query row's
    /// this many strongest keys are kept exactly ("view_top_k").
    std::size_t view_top_k = 32;
    std::string x_title = "Keys";
    std::string y_title = "Queries";
};

/// Maps a value to [0, 1] (values outside give t outside; the colormap clamps).
struct ColorNorm {
    double vmin = 0.0, vmax = 1.0;
    ColorScale scale = ColorScale::linear;
    double operator()(double v) const;
};

/// Panels reduced to what is displayed: pooled cells, their states, and the colour range.
struct PreparedHeatmap {
    std::size_t rows = 0, cols = 0;           ///< displayed cells per panel
    std::size_t pool_rows = 1, pool_cols = 1; ///< source cells per displayed cell
    std::vector<std::vector<float>> values;   ///< per panel, rows·cols (NaN unless state value)
    std::vector<std::vector<CellState>> states;
    ColorNorm norm;
    bool any_masked = false, any_bad = false;
    std::vector<std::string> notes; ///< "max-pooled 9×9: ...", "clipped ..."
};

/// Validates input and options, pools each panel to at most max_rows x max_cols cells
/// (an integer factor per axis; max keeps each block's maximum, mean its average, both
/// over unmasked cells; a block is masked only when all its cells are), and fixes the
/// colour range from the displayed values of all panels (or vmin/vmax, or the clip
/// quantiles; log: smallest positive value, at most 6 decades below vmax).
/// Throws InputError naming the option (option_name: "vmin", "clip", ...) or the labels.
PreparedHeatmap prepare_heatmap(const HeatmapInput& input,
                                const HeatmapOptions& options,
                                std::size_t max_rows,
                                std::size_t max_cols);

/// A laid-out heatmap and where its parts landed (for tests and callers).
struct HeatmapFigure {
    Figure figure;
    std::vector<Box> panels; ///< the cell area of each panel
    Box colorbar;
    PreparedHeatmap map;
    bool annotated = false;
    bool x_labels_rotated = false;
    std::size_t x_label_step = 1, y_label_step = 1;
    /// "key labels thinned: every 2nd of 300 drawn ..." per token axis that skips labels
    /// (also drawn in the figure's notes); the caller may warn with them.
    std::vector<std::string> label_notes;
};

/// Lays out the figure: panels in a grid (one row up to 4 panels, then about square, or
/// input.grid_cols per row (the model view: each map then at least 120 px), else `columns`
/// per row), cells of up to 120 px (at 100 dpi) in a map of at most 480 px per side for one
/// panel, pooling beyond that, so the image size is bounded whatever Lq and Lk are. An axis
/// with tokens grows its map (up to max_grown_side) until every token is drawn; past that
/// the labels are thinned and label_notes says so.
/// Throws InputError as prepare_heatmap() does, and for annotate on a pooled map.
HeatmapFigure heatmap_figure(const HeatmapInput& input, const HeatmapOptions& options);

/// heatmap_figure() rasterised.
Image heatmap(const HeatmapInput& input, const HeatmapOptions& options);

/// A tick value as text with `decimals` digits ("0.25"), never "-0.00".
std::string format_fixed(double v, int decimals);

} // namespace attn::render

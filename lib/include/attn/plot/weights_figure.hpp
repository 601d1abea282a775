// A heatmap of attention weights ready to encode or print, built from what the front ends
// have: a solved problem's weights (compute's --heatmap) or weights read from a file with
// the choices a user made (`attn heatmap`: panels, labels, hatching, title). The panels,
// labels and titles are decided here once; a front end parses its flags, calls one of
// these, encodes (encode.hpp) and writes the bytes. Reads no files (a mask comes through a
// callback) and prints nothing.
#pragma once

#include "attn/io/array.hpp"
#include "attn/plot/panels.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/weights_read.hpp"
#include "attn/render/heatmap.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attn::plot {

/// The renderer's input and options, and what the input's spans borrow besides the
/// weights (which must outlive it). Movable (the spans stay valid), not copyable.
struct WeightsFigure {
    render::HeatmapInput input;
    render::HeatmapOptions options;
    Dims dims;
    std::vector<PanelRef> refs;
    PanelData data;

    WeightsFigure() = default;
    WeightsFigure(WeightsFigure&&) = default;
    WeightsFigure& operator=(WeightsFigure&&) = default;
    WeightsFigure(const WeightsFigure&) = delete;
    WeightsFigure& operator=(const WeightsFigure&) = delete;
    ~WeightsFigure() = default;
};

/// compute's --heatmap: every panel of a solved problem's `weights` (axes by
/// problem::weights_axes; `layers`: a stacked result's layer numbers, the model view),
/// hatched where the problem blocks, labelled by its tokens, titled by its id, else
/// `name`, else "attention weights". `problem` may be nullptr (weights as a bare array).
/// Throws InputError as dims_of and pick_panels do (option "heatmap" names the weights).
WeightsFigure result_figure(const io::Array& weights,
                            const problem::Problem* problem,
                            const std::vector<std::size_t>& layers,
                            const std::string& name,
                            double font_size,
                            std::size_t columns);

/// result_figure() without the weights: the panels of weights of `shape` (titles, labels,
/// title and options) with no values, for a page built while the kernel makes them
/// (plot/streamed_view.hpp).
WeightsFigure result_shape_figure(const std::vector<std::size_t>& shape,
                                  const problem::Problem* problem,
                                  const std::vector<std::size_t>& layers,
                                  const std::string& name,
                                  double font_size,
                                  std::size_t columns);

/// What a user chose about a heatmap of weights read from a file (`attn heatmap`'s flags).
struct FileFigureOptions {
    std::int64_t batch = kAll, head = kAll; ///< kAll: every one
    /// What the leading axes are, when the user says (option axes): `[layers, H, Lq, Lk]`
    /// as the model view, which a rank-4 file would otherwise read as [B, H, Lq, Lk].
    std::optional<problem::NamedAxes> axes;
    /// Labels of both axes / of keys / of queries, when given (checked against the map);
    /// else the document's tokens, else indices.
    std::optional<std::vector<std::string>> tokens, xlabels, ylabels;
    std::optional<std::string> title; ///< else `title_base` and the panel picked
    std::string title_base = "attention weights";
    /// A keep-mask's reader (empty: no mask), called once the panels are picked; `mask_flag`
    /// names it in messages (the CLI: its flag and the file).
    std::function<io::Array()> read_mask;
    std::string mask_flag;
    bool hatch_zeros = false;       ///< also hatch weights that are exactly 0
    render::HeatmapOptions options; ///< colours, pooling, sizes (title is set here)
};

/// `attn heatmap`'s figure of `w`: its leading axes (`axes`, else the file's: a stacked
/// result's layers, else by rank; on a rank-3 array --batch says its first axis is the
/// batch), the panels `batch`/`head` pick, hatching, labels and title (a model view's
/// counts its layers and heads). The input
/// borrows `w`'s values; for a mapped file, each panel's pages are released as the
/// renderer finishes a pass over them (HeatmapInput::release). Throws InputError.
WeightsFigure file_figure(const problem::LoadedWeights& w, const FileFigureOptions& o);

} // namespace attn::plot

// Heatmaps of solved or read weights, ready to encode (see attn/plot/weights_figure.hpp).
#include "attn/plot/weights_figure.hpp"

#include "attn/error.hpp"
#include "attn/plot/hatch.hpp"
#include "attn/problem/solve.hpp"

#include <span>

namespace attn::plot {

namespace {

/// Labels of one axis: the flag's, else --tokens, else the document's (whose count must be
/// the map's: `field` and `n` name it).
std::vector<std::string> axis_labels(const std::optional<std::vector<std::string>>& flag,
                                     const std::optional<std::vector<std::string>>& tokens,
                                     const std::vector<std::string>& from_document,
                                     const std::string& name,
                                     const char* field,
                                     std::size_t n) {
    if (flag) {
        return *flag;
    }
    if (tokens) {
        return *tokens;
    }
    if (!from_document.empty() && from_document.size() != n) {
        throw InputError::label_count(name + ": " + field, n, from_document.size());
    }
    return from_document;
}

} // namespace

WeightsFigure result_shape_figure(const std::vector<std::size_t>& shape,
                                  const problem::Problem* problem,
                                  const std::vector<std::size_t>& layers,
                                  const std::string& name,
                                  double font_size,
                                  std::size_t columns) {
    WeightsFigure f;
    const std::size_t rank = shape.size() - (layers.empty() ? 0 : 1);
    const problem::WeightsAxes axes =
        problem != nullptr ? problem::weights_axes(*problem) : problem::axes_of_rank(rank);
    f.dims = dims_of(shape, axes, option_name("heatmap"), layers);
    if (problem != nullptr && problem->select_heads.size() == f.dims.heads) {
        f.dims.head_ids = problem->select_heads; // panels titled by the heads' own numbers
    }
    const Dims& d = f.dims;
    f.refs = pick_panels(d, kAll, kAll, option_name("heatmap"));
    f.input.rows = d.lq;
    f.input.cols = d.lk;
    for (const PanelRef& r : f.refs) {
        f.input.panels.push_back({r.title, {}, {}});
    }
    f.input.grid_cols = grid_columns(d, f.refs);
    // Titled by the problem's name (its id, else its file's name), else what it shows.
    std::string title = name;
    if (problem != nullptr && problem->id && problem->id->is_string()) {
        title = problem->id->get<std::string>();
    }
    render::HeatmapOptions& o = f.options;
    o.title = title.empty() ? "attention weights" : title;
    if (d.has_layers) {
        o.title = (title.empty() ? "" : title + ": ") + model_view_title(d, kAll, kAll);
    }
    o.font_size = font_size;
    o.columns = columns;
    if (problem != nullptr) {
        // "query_rows": the labels of the rows kept.
        const std::size_t first = problem->query_rows ? (*problem->query_rows)[0] : 0;
        const auto& q = problem->query_tokens;
        if (q && q->size() == problem->lq && first + d.lq <= q->size()) {
            f.input.row_labels.assign(q->begin() + static_cast<std::ptrdiff_t>(first),
                                      q->begin() + static_cast<std::ptrdiff_t>(first + d.lq));
        }
        if (problem->key_tokens && problem->key_tokens->size() == d.lk) {
            f.input.col_labels = *problem->key_tokens;
        }
    }
    return f;
}

WeightsFigure result_figure(const io::Array& weights,
                            const problem::Problem* problem,
                            const std::vector<std::size_t>& layers,
                            const std::string& name,
                            double font_size,
                            std::size_t columns) {
    WeightsFigure f = result_shape_figure(weights.shape, problem, layers, name, font_size, columns);
    const Dims& d = f.dims;
    if (problem != nullptr) {
        for (const auto& r : f.refs) {
            f.data.masked.push_back(blocked_cells(*problem, r.b, r.h, d.lq, d.lk));
        }
    }
    render::HeatmapInput in = make_input(weights, d, f.refs, f.data);
    in.row_labels = std::move(f.input.row_labels);
    in.col_labels = std::move(f.input.col_labels);
    f.input = std::move(in);
    return f;
}

namespace {

/// The dims of `w` read by the axes the user names (option axes), the file says (a stacked
/// result's layers) or its rank gives.
Dims file_dims(const problem::LoadedWeights& w, const FileFigureOptions& o) {
    const std::vector<std::size_t>& shape = w.array.shape;
    if (o.axes) {
        if (!w.layers.empty() && !o.axes->layers) {
            throw InputError(option_name("axes") + ": " + w.name +
                             " says its first axis holds layers; name it (layers,...)");
        }
        if (shape.size() != o.axes->rank()) {
            throw InputError(option_name("axes") + ": " + w.name + " has shape " +
                             shape_string(shape) + " (rank " + std::to_string(shape.size()) +
                             "), the axes named give rank " + std::to_string(o.axes->rank()) +
                             " (each named axis, then Lq, Lk)");
        }
        std::vector<std::size_t> layers = w.layers;
        if (o.axes->layers && layers.empty()) {
            for (std::size_t l = 0; l < shape[0]; ++l) {
                layers.push_back(l); // numbered 0, 1, ...
            }
        }
        return dims_of(shape, o.axes->axes, w.name, layers);
    }
    problem::WeightsAxes axes = w.axes;
    if (axes.rank() == 3 && o.batch != kAll) {
        // --batch on [X, Lq, Lk]: the user says X is the batch.
        if (o.head != kAll) {
            throw InputError(option_name("batch") + ", " + option_name("head") + ": " + w.name +
                             " has rank 3 [H or B, Lq, Lk]: give one of them");
        }
        axes = {.batch = true, .heads = false};
    }
    Dims d = dims_of(shape, axes, w.name, w.layers);
    if (!d.has_layers && d.has_batch && d.batches * d.heads > kMaxPanels && o.batch == kAll &&
        o.head == kAll) {
        // [layers, H, L, L] (torch.stack of a model's attentions) reads as [B, H, L, L].
        throw InputError(w.name + ": " + std::to_string(d.batches * d.heads) + " panels (" +
                         std::to_string(d.batches) + " batches x " + std::to_string(d.heads) +
                         " heads) are too many for one figure (at most " +
                         std::to_string(kMaxPanels) + "); when the first axis is layers, say so (" +
                         option_name("axes") + " layers,heads: the model view, up to " +
                         std::to_string(kMaxModelPanels) + " panels), or pick with " +
                         option_name("batch") + " N and/or " + option_name("head") + " N");
    }
    return d;
}

} // namespace

WeightsFigure file_figure(const problem::LoadedWeights& w, const FileFigureOptions& o) {
    WeightsFigure f;
    f.dims = file_dims(w, o);
    const Dims& d = f.dims;
    f.refs = pick_panels(d, o.batch, o.head, w.name);
    std::optional<io::Array> mask;
    if (o.read_mask) {
        mask = o.read_mask();
    }
    f.data.masked = hatched_cells(w.array.shape,
                                  w.values(),
                                  d,
                                  f.refs,
                                  mask ? &*mask : nullptr,
                                  o.hatch_zeros,
                                  o.mask_flag + ": a keep-mask for " + w.name);
    f.input = make_input(w.values(), d, f.refs, f.data);
    if (w.view) {
        // Each band's pages leave the process once a pass is done with them: memory
        // bounded by the picture and the bands in flight, not by the weights.
        f.input.release =
            [&w, refs = f.refs, d](std::size_t k, std::size_t first, std::size_t count) {
                w.release(refs[k].offset(d) + first, count);
            };
    }
    if (o.tokens) {
        check_tokens(*o.tokens, d, option_name("tokens"));
    }
    f.input.col_labels = axis_labels(o.xlabels, o.tokens, w.key_tokens, w.name, "key_tokens", d.lk);
    f.input.row_labels =
        axis_labels(o.ylabels, o.tokens, w.query_tokens, w.name, "query_tokens", d.lq);
    f.options = o.options;
    f.options.title = o.title        ? *o.title
                      : d.has_layers ? o.title_base + ": " + model_view_title(d, o.batch, o.head)
                                     : o.title_base + picked_suffix(d, o.batch, o.head);
    return f;
}

} // namespace attn::plot

// attn.heatmap, attn.view and attn.model_view: weights (numpy, torch, an attn.Result, or
// Hugging Face's outputs.attentions) drawn by the library (plot::file_figure, as `attn
// heatmap` draws a file; plot::encode_figure; attn_render: pixels) into an attn.Figure
// that Jupyter shows inline.
#include "attn/error.hpp"
#include "attn/io/atomic_file.hpp"
#include "attn/io/token_list.hpp"
#include "attn/plot/encode.hpp"
#include "attn/plot/panels.hpp"
#include "attn/plot/weights_figure.hpp"
#include "attn/problem/result_read.hpp"
#include "attn/problem/weights_read.hpp"
#include "module.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attn::python {

namespace {

/// attn.Figure: the bytes of a PNG, an SVG or a self-contained HTML view.
struct Figure {
    std::string format;
    std::string bytes;
    std::vector<std::string> warnings;

    py::object repr_png() const {
        return format == "png" ? py::object(py::bytes(bytes)) : py::object(py::none());
    }
    py::object repr_svg() const {
        return format == "svg" ? py::object(py::str(bytes)) : py::object(py::none());
    }
    /// The HTML view in an iframe: its page keeps its own scripts and style apart from
    /// the notebook's.
    py::object repr_html() const {
        if (format != "html") {
            return py::none();
        }
        std::string escaped;
        escaped.reserve(bytes.size() + bytes.size() / 8);
        for (const char c : bytes) {
            switch (c) {
            case '&':
                escaped += "&amp;";
                break;
            case '"':
                escaped += "&quot;";
                break;
            case '<':
                escaped += "&lt;";
                break;
            case '>':
                escaped += "&gt;";
                break;
            default:
                escaped += c;
            }
        }
        return py::str("<iframe srcdoc=\"" + escaped +
                       "\" style=\"width: 100%; height: 640px; border: 0\"></iframe>");
    }
    void save(const std::string& path) const { io::write_file_atomic(path, bytes); }
    std::string repr() const {
        return "attn.Figure(" + format + ", " + std::to_string(bytes.size()) + " bytes)";
    }
};

std::vector<std::string> strings_of(const py::object& v, const char* what) {
    if (v.is_none()) {
        return {};
    }
    if (py::isinstance<py::str>(v)) {
        return io::parse_token_list(v.cast<std::string>(), what);
    }
    try {
        return v.cast<std::vector<std::string>>();
    } catch (const py::cast_error&) {
    }
    // Not a sequence of str: name the value's type, or the first element's that is not one.
    const auto type_of = [](const py::handle& h) {
        return std::string(py::str(py::type::of(h).attr("__name__")));
    };
    if (py::isinstance<py::sequence>(v) && !py::isinstance<py::bytes>(v)) {
        std::size_t i = 0;
        for (const py::handle item : v) {
            if (!py::isinstance<py::str>(item)) {
                throw InputError::string_list_item(what, i, type_of(item));
            }
            ++i;
        }
    }
    throw InputError::string_list(what, type_of(v));
}

template <class T> std::optional<T> optional_of(const py::object& v) {
    if (v.is_none()) {
        return std::nullopt;
    }
    return v.cast<T>();
}

render::HeatmapOptions options_of(const py::dict& o) {
    render::HeatmapOptions out;
    out.colormap = o["colormap"].cast<std::string>();
    out.vmin = optional_of<double>(o["vmin"]);
    out.vmax = optional_of<double>(o["vmax"]);
    out.clip = optional_of<double>(o["clip"]);
    out.scale = render::color_scale_named(o["scale"].cast<std::string>());
    out.pool = render::pool_mode_named(o["pool"].cast<std::string>());
    const std::optional<bool> annotate = optional_of<bool>(o["annotate"]);
    out.annotate = !annotate   ? render::Annotate::automatic
                   : *annotate ? render::Annotate::on
                               : render::Annotate::off;
    out.decimals = o["decimals"].cast<int>();
    out.dpi = o["dpi"].cast<double>();
    out.font_size = o["font_size"].cast<double>();
    out.columns = o["cols"].cast<std::size_t>();
    return out;
}

/// The weights an argument stands for: an attn.Result's (with its labels and layers), or
/// an array; `rank3_is_batch`: a result's rank-3 weights are [B, Lq, Lk] (its problem was
/// batched, one head).
problem::LoadedWeights weights_of(const py::object& w, bool& rank3_is_batch) {
    problem::LoadedWeights out;
    out.name = "weights";
    if (py::hasattr(w, "rows_fully_masked") && py::hasattr(w, "weights")) { // attn.Result
        if (w.attr("weights").is_none()) {
            throw InputError("weights: the result has no weights (computed with "
                             "no_weights=True)");
        }
        out.array = array_in(w.attr("weights"), "weights", io::Precision::f32);
        out.query_tokens = strings_of(w.attr("query_tokens"), "query_tokens");
        out.key_tokens = strings_of(w.attr("key_tokens"), "key_tokens");
        if (!w.attr("layers").is_none()) {
            out.layers = w.attr("layers").cast<std::vector<std::size_t>>();
        }
        rank3_is_batch = w.attr("_rank3_is_batch").cast<bool>();
        return out;
    }
    out.array = array_in(w, "weights", io::Precision::f32);
    return out;
}

Figure heatmap(const py::object& weights,
               const py::object& tokens,
               const std::string& format,
               const py::object& query_tokens,
               const py::object& key_tokens,
               const py::object& head,
               const py::object& batch,
               const py::object& layers,
               const py::object& axes,
               const py::object& title,
               const py::kwargs& rest) {
    bool rank3_is_batch = false;
    problem::LoadedWeights w = weights_of(weights, rank3_is_batch);
    const plot::FileFormat f = plot::format_named(format);
    if (!layers.is_none()) {
        w.layers = layers.cast<std::vector<std::size_t>>();
    }
    // The figure as `attn heatmap` makes it (plot::file_figure): a bare array's first axis
    // of three is the heads unless batch= says it is the batch; a result's says itself.
    plot::FileFigureOptions o;
    o.head = head.is_none() ? plot::kAll : head.cast<std::int64_t>();
    o.batch = batch.is_none() ? plot::kAll : batch.cast<std::int64_t>();
    w.axes = problem::axes_of_rank(w.array.shape.size() - (w.layers.empty() ? 0 : 1));
    if (w.axes.rank() == 3 && rank3_is_batch) {
        w.axes = {.batch = true, .heads = false};
    }
    if (!axes.is_none()) {
        o.axes = problem::parse_named_axes(axes.cast<std::string>()); // the CLI's --axes
    }
    if (std::vector<std::string> both = strings_of(tokens, "tokens"); !both.empty()) {
        o.tokens = std::move(both);
    }
    if (!query_tokens.is_none()) {
        o.ylabels = strings_of(query_tokens, "query_tokens");
    }
    if (!key_tokens.is_none()) {
        o.xlabels = strings_of(key_tokens, "key_tokens");
    }
    if (!title.is_none()) {
        o.title = title.cast<std::string>();
    }
    o.options = options_of(rest);
    plot::WeightsFigure fig = plot::file_figure(w, o); // a model view titled as the CLI's
    plot::Encoded e = released([&] { return plot::encode_figure(fig.input, fig.options, f); });
    const py::module_ warnings = py::module_::import("warnings");
    for (const std::string& message : e.warnings) {
        warnings.attr("warn")(message, py::module_::import("builtins").attr("UserWarning"), 1);
    }
    return Figure{format, std::string(e.bytes.begin(), e.bytes.end()), std::move(e.warnings)};
}

/// Hugging Face's outputs.attentions (a tuple of [B, H, L, L], one per layer) stacked as
/// [layers, B, H, L, L]; an attn.Result or one array as they are.
py::object stacked_attentions(const py::object& attentions, std::vector<std::size_t>& layers) {
    if (!py::isinstance<py::tuple>(attentions) && !py::isinstance<py::list>(attentions)) {
        return attentions;
    }
    io::Array all;
    std::size_t n = 0;
    for (const py::handle item : attentions) {
        const std::string name = "attentions[" + std::to_string(n) + "]";
        io::Array a = array_in(item, name, io::Precision::f32);
        if (n == 0) {
            if (a.shape.size() != 4) {
                throw InputError::shape(name, {kAnyDim, kAnyDim, kAnyDim, kAnyDim}, a.shape);
            }
            all.shape = a.shape;
        } else if (std::vector<std::size_t>(all.shape.begin() + 1, all.shape.end()) != a.shape) {
            throw InputError::shape(
                name, std::vector<std::size_t>(all.shape.begin() + 1, all.shape.end()), a.shape);
        }
        if (n == 0) {
            all.shape.insert(all.shape.begin(), 0);
        }
        all.values.insert(all.values.end(), a.values.begin(), a.values.end());
        layers.push_back(n);
        ++n;
    }
    if (n == 0) {
        throw InputError("attentions: expected one [B, H, L, L] array per layer, got none");
    }
    all.shape[0] = n;
    all.dtype = "float32";
    return array_out(std::move(all));
}

constexpr const char* kOptionsDoc = R"doc(
Heatmap options (as `attn heatmap`'s flags): colormap="viridis" (matplotlib's names,
"_r" reverses), vmin=None, vmax=None, scale="linear"|"log", clip=None (a quantile in
[0.5, 1]), pool="max"|"mean" (cells per pixel when the map is large), annotate=None
(True/False: write the values in the cells), decimals=2, dpi=100, font_size=10, cols=0
(panels per row; 0: automatic).)doc";

} // namespace

namespace {

/// attn.Figure: a drawn heatmap's bytes and how Jupyter shows them.
void register_figure_class(py::module_& m) {
    py::class_<Figure>(m,
                       "Figure",
                       "A heatmap's bytes: shown inline by Jupyter (_repr_png_, _repr_svg_, "
                       "_repr_html_), written by save(path), read as .data.")
        .def_property_readonly(
            "data", [](const Figure& f) { return py::bytes(f.bytes); }, "the file's bytes")
        .def_readonly("format", &Figure::format, "\"png\", \"svg\" or \"html\"")
        .def_readonly("warnings", &Figure::warnings, "the warnings given while drawing")
        .def("save", &Figure::save, py::arg("path"), "Writes the bytes to `path` atomically.")
        .def("_repr_png_", &Figure::repr_png)
        .def("_repr_svg_", &Figure::repr_svg)
        .def("_repr_html_", &Figure::repr_html)
        .def("__repr__", &Figure::repr);
}

/// attn.heatmap and attn.view.
void register_heatmap(py::module_& m) {
    const py::dict defaults;
    m.def(
        "heatmap",
        [](const py::object& weights,
           const py::object& tokens,
           const std::string& format,
           const py::object& query_tokens,
           const py::object& key_tokens,
           const py::object& head,
           const py::object& batch,
           const py::object& layers,
           const py::object& axes,
           const py::object& title,
           const py::object& colormap,
           const py::object& vmin,
           const py::object& vmax,
           const py::object& scale,
           const py::object& clip,
           const py::object& pool,
           const py::object& annotate,
           const py::object& decimals,
           const py::object& dpi,
           const py::object& font_size,
           const py::object& cols) {
            py::kwargs o;
            o["colormap"] = colormap;
            o["vmin"] = vmin;
            o["vmax"] = vmax;
            o["scale"] = scale;
            o["clip"] = clip;
            o["pool"] = pool;
            o["annotate"] = annotate;
            o["decimals"] = decimals;
            o["dpi"] = dpi;
            o["font_size"] = font_size;
            o["cols"] = cols;
            return heatmap(weights,
                           tokens,
                           format,
                           query_tokens,
                           key_tokens,
                           head,
                           batch,
                           layers,
                           axes,
                           title,
                           o);
        },
        py::arg("weights"),
        py::arg("tokens") = py::none(),
        py::kw_only(),
        py::arg("format") = "png",
        py::arg("query_tokens") = py::none(),
        py::arg("key_tokens") = py::none(),
        py::arg("head") = py::none(),
        py::arg("batch") = py::none(),
        py::arg("layers") = py::none(),
        py::arg("axes") = py::none(),
        py::arg("title") = py::none(),
        py::arg("colormap") = "viridis",
        py::arg("vmin") = py::none(),
        py::arg("vmax") = py::none(),
        py::arg("scale") = "linear",
        py::arg("clip") = py::none(),
        py::arg("pool") = "max",
        py::arg("annotate") = py::none(),
        py::arg("decimals") = 2,
        py::arg("dpi") = 100.0,
        py::arg("font_size") = 10.0,
        py::arg("cols") = 0,
        (std::string(R"doc(Draws attention weights as a heatmap, as `attn heatmap` does.

weights: [Lq, Lk], [H, Lq, Lk], [B, H, Lq, Lk] or [layers, B, H, Lq, Lk] (anything numpy
  accepts: a torch tensor too), or an attn.Result (its weights, tokens and layers).
tokens: labels of both axes (self-attention), a list of strings or "a,b,c";
  query_tokens/key_tokens label one axis each.
format: "png", "svg" or "html" (the interactive view).
head, batch: draw one head / one batch entry (default: every panel, up to 64).
layers: the layer numbers of a stacked array's leading axis.
axes: what the dims before Lq, Lk are, as `attn heatmap --axes`: "layers", "batch",
  "heads" in that order, joined by commas ("none": [Lq, Lk]); "layers,heads" draws
  [layers, H, Lq, Lk] (torch.stack of a model's attentions) as the model view.
Returns an attn.Figure (shown inline by Jupyter; .save(path), .data).
)doc") + kOptionsDoc)
            .c_str());

    m.def(
        "view",
        [](const py::object& weights, const py::object& tokens, const py::kwargs& options) {
            // A copy: the caller's keyword dict stays as it was.
            py::dict o = options.attr("copy")().cast<py::dict>();
            o["format"] = "html";
            return py::module_::import("attn").attr("heatmap")(weights, tokens, **o);
        },
        py::arg("weights"),
        py::arg("tokens") = py::none(),
        (std::string(R"doc(The interactive HTML view of attention weights (an attn.Result or an
array), inline in Jupyter: attn.heatmap(weights, tokens, format="html", **options).
)doc") + kOptionsDoc)
            .c_str());
    (void)defaults;
}

/// attn.model_view.
void register_model_view(py::module_& m) {
    m.def(
        "model_view",
        [](const py::object& attentions, const py::object& tokens, const py::kwargs& options) {
            std::vector<std::size_t> layers;
            const py::object w = stacked_attentions(attentions, layers);
            // A copy: the caller's keyword dict stays as it was.
            py::dict o = options.attr("copy")().cast<py::dict>();
            if (!o.contains("format")) {
                o["format"] = "html";
            }
            if (!o.contains("batch")) {
                o["batch"] = 0;
            }
            if (!layers.empty() && !o.contains("layers")) {
                o["layers"] = layers;
            }
            return py::module_::import("attn").attr("heatmap")(w, tokens, **o);
        },
        py::arg("attentions"),
        py::arg("tokens") = py::none(),
        (std::string(R"doc(Every layer and head at once, as BertViz's model_view: rows are layers,
columns heads.

attentions: Hugging Face's outputs.attentions (output_attentions=True), a tuple of one
  [B, H, L, L] tensor per layer; or a stacked [layers, B, H, L, L] array; or an
  attn.Result of every layer.
tokens: the labels (tokenizer.convert_ids_to_tokens(ids)).
batch: which batch entry (default 0); format: "html" (default), "png" or "svg"; other
  options as attn.heatmap.
)doc") + kOptionsDoc)
            .c_str());
}

} // namespace

void register_figures(py::module_& m) {
    register_figure_class(m);
    register_heatmap(m);
    register_model_view(m);
}

} // namespace attn::python

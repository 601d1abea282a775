// `attn heatmap WEIGHTS -o OUT.png|OUT.svg|OUT.html [--term]`: the flags, their checks and
// the order of the work (render everything, then write). Weights are read by
// problem::read_weights, made a figure by plot::file_figure and encoded by attn_plot;
// bytes go out through heatmap_render.cpp (shared with compute's --heatmap).
#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/token_list.hpp"
#include "attn/plot/weights_figure.hpp"
#include "attn/problem/weights_read.hpp"
#include "attn/render/heatmap.hpp"
#include "attn/render/terminal.hpp"
#include "cli.hpp"
#include "compute_options.hpp"
#include "heatmap_render.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <sys/ioctl.h>
#include <unistd.h>
#include <vector>

namespace attn::app {

namespace fs = std::filesystem;
using plot::kAll;

namespace {

struct HeatmapArgs {
    std::string weights;
    std::string output;
    std::string format;
    bool term = false;
    std::int64_t head = kAll, batch = kAll;
    std::string axes;
    std::string title;
    std::string xlabels, ylabels, tokens;
    double font_size = 10.0;
    std::size_t cols = 0;
    std::size_t view_top_k = 32;
    unsigned threads = 0; // 0: all cores
    std::string color = "auto";
    bool quiet = false;
    std::string cmap = "viridis";
    double vmin = 0.0, vmax = 0.0, clip = 1.0;
    std::string scale = "linear";
    std::string pool = "max";
    bool annotate = false, no_annotate = false;
    int decimals = 2;
    double dpi = 100.0;
    std::string mask;
    bool masked_zero = false;
    // Which optional flags were given.
    CLI::Option *title_opt = nullptr, *vmin_opt = nullptr, *vmax_opt = nullptr, *clip_opt = nullptr;
};

/// --term's options: colour by --color and the environment, size of the terminal on stdout.
render::TermOptions term_options_for(const std::string& color) {
    const bool tty = isatty(STDOUT_FILENO) == 1;
    winsize ws{};
    if (!tty || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0) {
        ws = {};
    }
    const render::ColorChoice choice = color == "always"  ? render::ColorChoice::always
                                       : color == "never" ? render::ColorChoice::never
                                                          : render::ColorChoice::automatic;
    return render::term_options(
        render::term_color(choice, tty, std::getenv("NO_COLOR"), std::getenv("COLORTERM")),
        render::term_size(ws.ws_col, ws.ws_row, std::getenv("COLUMNS"), std::getenv("LINES")));
}

/// A label flag's list (a,b,c or FILE), when given.
std::optional<std::vector<std::string>> label_list(const std::string& value, const char* flag) {
    if (value.empty()) {
        return std::nullopt;
    }
    return io::parse_token_list(value, flag);
}

render::HeatmapOptions options_from(const HeatmapArgs& a) {
    render::HeatmapOptions o;
    o.colormap = a.cmap;
    if (a.vmin_opt != nullptr && a.vmin_opt->count() > 0) {
        o.vmin = a.vmin;
    }
    if (a.vmax_opt != nullptr && a.vmax_opt->count() > 0) {
        o.vmax = a.vmax;
    }
    if (a.clip_opt != nullptr && a.clip_opt->count() > 0) {
        o.clip = a.clip;
    }
    o.scale = render::color_scale_named(a.scale);
    o.pool = render::pool_mode_named(a.pool);
    o.annotate = a.no_annotate ? render::Annotate::off
                 : a.annotate  ? render::Annotate::on
                               : render::Annotate::automatic;
    o.decimals = a.decimals;
    o.dpi = a.dpi;
    o.font_size = a.font_size;
    o.columns = a.cols;
    o.view_top_k = a.view_top_k;
    o.threads = a.threads;
    return o;
}

void run_heatmap(const HeatmapArgs& a) {
    if (a.output.empty() && !a.term) {
        throw InputError(
            "heatmap: nothing to do: give -o OUT.png, -o OUT.svg, -o OUT.html or --term");
    }
    if (a.annotate && a.no_annotate) {
        throw InputError("--annotate, --no-annotate: give at most one");
    }
    const bool to_file = !a.output.empty();
    const FileFormat format = to_file ? file_format(a.output, a.format, "-o") : FileFormat::png;
    std::vector<io::NamedPath> inputs;
    for (const auto& [name, path] :
         {std::pair{"WEIGHTS", a.weights}, std::pair{"--mask", a.mask}}) {
        if (!path.empty() && path != "-") {
            inputs.push_back({name, path});
        }
    }
    io::check_output_paths(inputs, {{"-o", a.output}});
    const problem::LoadedWeights w =
        problem::read_weights(a.weights, [] { return read_stdin("WEIGHTS"); });
    plot::FileFigureOptions f;
    f.batch = a.batch;
    f.head = a.head;
    if (!a.axes.empty()) {
        f.axes = problem::parse_named_axes(a.axes);
    }
    f.tokens = label_list(a.tokens, "--tokens");
    f.xlabels = label_list(a.xlabels, "--xlabels");
    f.ylabels = label_list(a.ylabels, "--ylabels");
    if (a.title_opt != nullptr && a.title_opt->count() > 0) {
        f.title = a.title;
    }
    if (a.weights != "-") {
        f.title_base = fs::path(a.weights).filename().string();
    }
    if (!a.mask.empty()) {
        f.read_mask = [&a] { return read_array_arg(a.mask, io::ArrayKind::mask); };
        f.mask_flag = "--mask " + a.mask;
    }
    // In the terminal a blocked cell would print as a small weight ("0.00", a dark shade):
    // exact zeros, what masking leaves, are hatched there unless a mask says which are.
    f.hatch_zeros = a.masked_zero || (a.term && a.mask.empty());
    f.options = options_from(a);
    const plot::WeightsFigure fig = plot::file_figure(w, f);
    const render::HeatmapInput& in = fig.input;
    const render::HeatmapOptions& o = fig.options;

    // Render everything before writing anything.
    std::vector<std::uint8_t> bytes;
    if (to_file) {
        bytes = encode_figure(in, o, format, a.quiet);
    }
    std::string term;
    if (a.term) {
        const render::TermOptions t = term_options_for(a.color);
        term = render::heatmap_terminal(in, o, t);
    }
    w.check_unchanged(); // a file cut while it was drawn: nothing written
    if (to_file) {
        write_output(a.output, bytes, format);
    }
    if (a.term) {
        std::cout << term;
        flush_stdout();
    }
}

void heatmap_options(CLI::App& cmd, HeatmapArgs& a) {
    cmd.add_option("WEIGHTS",
                   a.weights,
                   "weights [Lq, Lk], [H, Lq, Lk], [B, H, Lq, Lk] or [layers, B, H, Lq, Lk] "
                   "(else say --axes): .npy, .npz (a stacked run's says its layers), .json "
                   "array, an attn compute result document (weights and tokens), or - for stdin")
        ->required();
    const char* out = "Output";
    cmd.add_option(
           "-o,--output",
           a.output,
           "write the figure to OUT.png, OUT.svg or OUT.html (one self-contained interactive "
           "page: hover, zoom, heads, query rows; - : PNG on stdout)")
        ->group(out);
    cmd.add_option("--format", a.format, "png, svg or html (default: from the -o extension)")
        ->check(CLI::IsMember({"png", "svg", "html"}))
        ->group(out);
    cmd.add_flag("--term",
                 a.term,
                 "print the heatmap in the terminal, fitted to its size (24-bit colour with "
                 "COLORTERM=truecolor, else 256; see --color)")
        ->group(out);
    cmd.add_option("--color",
                   a.color,
                   "colour in --term output: auto (default: only when stdout is a terminal and "
                   "NO_COLOR is unset), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->group(out);
    cmd.add_option("--dpi", a.dpi, "pixel density (default 100, matplotlib's; 200 for print)")
        ->group(out);
    cmd.add_flag("--quiet", a.quiet, "no warnings on stderr")->group(out);
    cmd.add_option("--threads",
                   a.threads,
                   "worker threads (default: all cores); the output is the same for any count")
        ->check(positive_count())
        ->group(out);
    const char* sel = "Panels";
    cmd.add_option("--head", a.head, "draw only head N (default: one panel per head)")
        ->check(CLI::NonNegativeNumber)
        ->group(sel);
    cmd.add_option(
           "--batch", a.batch, "draw only batch entry N (for rank 3: the first dim is the batch)")
        ->check(CLI::NonNegativeNumber)
        ->group(sel);
    cmd.add_option("--axes",
                   a.axes,
                   "what the dims before Lq, Lk are: layers, batch, heads in that order, e.g. "
                   "layers,heads for [layers, H, Lq, Lk] (torch.stack of a model's attentions: "
                   "the model view); default by rank: [H, ..], [B, H, ..]")
        ->type_name("LIST")
        ->group(sel);
    const char* lab = "Labels";
    a.title_opt =
        cmd.add_option("--title", a.title, "figure title (default: the file name; '' for none)")
            ->group(lab);
    cmd.add_option("--tokens",
                   a.tokens,
                   "labels of both axes: a,b,c or FILE (one token per line, or a JSON list); "
                   "default: the document's tokens, or indices")
        ->group(lab);
    cmd.add_option("--xlabels",
                   a.xlabels,
                   "key labels: a,b,c or FILE, as --tokens (default: --tokens, key_tokens, or "
                   "indices)")
        ->group(lab);
    cmd.add_option("--ylabels",
                   a.ylabels,
                   "query labels: a,b,c or FILE, as --tokens (default: --tokens, query_tokens, "
                   "or indices)")
        ->group(lab);
    add_figure_options(cmd, a.font_size, a.cols, a.view_top_k, lab);
    cmd.add_flag("--annotate",
                 a.annotate,
                 "write each cell's value (default: when the cells are large enough)")
        ->group(lab);
    cmd.add_flag("--no-annotate", a.no_annotate, "never write cell values")->group(lab);
    cmd.add_option("--decimals", a.decimals, "digits after the point in annotations (default 2)")
        ->group(lab);
    const char* col = "Colours";
    cmd.add_option(
           "--cmap",
           a.cmap,
           "viridis (default), magma, inferno, plasma, cividis, blues, greys, rdbu (diverging); _r "
           "reverses")
        ->group(col);
    a.vmin_opt = cmd.add_option("--vmin",
                                a.vmin,
                                "value at the bottom of the colour scale (default: data min)")
                     ->group(col);
    a.vmax_opt =
        cmd.add_option("--vmax", a.vmax, "value at the top of the colour scale (default: data max)")
            ->group(col);
    cmd.add_option("--scale", a.scale, "linear (default) or log")
        ->check(CLI::IsMember({"linear", "log"}))
        ->group(col);
    a.clip_opt =
        cmd.add_option("--clip",
                       a.clip,
                       "clip the colour range to quantiles 1-Q..Q, e.g. 0.99 (attention sinks)")
            ->group(col);
    cmd.add_option(
           "--pool",
           a.pool,
           "max (default) or mean: how cells are merged when the map is larger than the figure")
        ->check(CLI::IsMember({"max", "mean"}))
        ->group(col);
    cmd.add_option("--mask",
                   a.mask,
                   "keep-mask FILE ([Lq, Lk] or the weights' shape; 0 = blocked): blocked cells "
                   "are hatched")
        ->group(col);
    cmd.add_flag("--masked-zero",
                 a.masked_zero,
                 "hatch cells whose weight is exactly 0 (what masking leaves; always on with "
                 "--term unless --mask is given)")
        ->group(col);
}

} // namespace

void add_heatmap(CLI::App& app) {
    add_command<HeatmapArgs>(
        app,
        {"heatmap",
         "Draw attention weights as a heatmap (PNG, SVG, an interactive HTML page, or the "
         "terminal)"},
        heatmap_options,
        run_heatmap);
}

} // namespace attn::app

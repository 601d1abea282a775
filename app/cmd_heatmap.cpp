// `attn heatmap WEIGHTS -o OUT.png|OUT.svg|OUT.html [--term]`, and the --heatmap output of
// `attn compute`: reads weights (NPY, a JSON array, or a compute result document with its
// tokens), picks panels (heads, batches), and renders with attn_render. All writes go
// through io::write_file_atomic; this file decides nothing about pixels.
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/png.hpp"
#include "attn/problem/problem.hpp"
#include "attn/render/heatmap.hpp"
#include "attn/render/html.hpp"
#include "attn/render/terminal.hpp"
#include "attn/visibility.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <sys/ioctl.h>
#include <unistd.h>
#include <vector>

namespace attn::app {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxPanels = 64;
constexpr std::int64_t kAll = -1;

struct HeatmapArgs {
    std::string weights;
    std::string output;
    std::string format;
    bool term = false;
    std::int64_t head = kAll, batch = kAll;
    std::string title;
    std::string xlabels, ylabels;
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

/// Weights as read, with the tokens a result document carried.
struct Loaded {
    io::Array weights;
    std::vector<std::string> query_tokens, key_tokens;
    std::string name; ///< for messages and the default title
};

std::string lower_extension(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
    return ext;
}

std::vector<std::string>
token_list(const nlohmann::json& doc, const char* field, const std::string& name) {
    std::vector<std::string> out;
    if (!doc.contains(field) || doc[field].is_null()) {
        return out;
    }
    const auto& v = doc[field];
    if (!v.is_array()) {
        throw InputError(name + ": " + field + ": expected a list of strings");
    }
    for (const auto& t : v) {
        if (!t.is_string()) {
            throw InputError(name + ": " + field + ": expected a list of strings, got " +
                             std::string(t.type_name()));
        }
        out.push_back(t.get<std::string>());
    }
    return out;
}

Loaded load_weights(const std::string& path) {
    Loaded l;
    l.name = path == "-" ? "<stdin>" : path;
    if (const auto ref = io::parse_npz_ref(path)) {
        // A bare archive: its "weights" array, or its only array.
        std::string member = ref->member;
        if (member.empty()) {
            const std::vector<std::string> all = io::npz_members(io::read_file(ref->file), l.name);
            const bool has_weights = std::find(all.begin(), all.end(), "weights") != all.end();
            member = has_weights ? "weights" : "";
        }
        l.weights = io::read_npz_array(ref->file, member);
        return l;
    }
    const std::string ext = lower_extension(path);
    const std::vector<std::uint8_t> bytes =
        path == "-" ? read_stdin("WEIGHTS") : io::read_file(path);
    if (ext == ".npy" || (ext != ".json" && looks_like_npy(bytes))) {
        l.weights = io::parse_npy(bytes, l.name);
        return l;
    }
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const nlohmann::json doc = io::parse_json_text(text, l.name);
    if (doc.is_object()) {
        if (!doc.contains("weights")) {
            throw InputError(l.name + ": a JSON object without \"weights\" (expected an array, or "
                                      "a result of attn compute without --no-weights)");
        }
        l.weights =
            io::parse_json_array(doc["weights"], l.name + ": weights", io::ArrayKind::numeric);
        l.query_tokens = token_list(doc, "query_tokens", l.name);
        l.key_tokens = token_list(doc, "key_tokens", l.name);
        if (doc.contains("tokens")) {
            const auto both = token_list(doc, "tokens", l.name);
            if (l.query_tokens.empty()) {
                l.query_tokens = both;
            }
            if (l.key_tokens.empty()) {
                l.key_tokens = both;
            }
        }
        return l;
    }
    l.weights = io::parse_json_array(doc, l.name, io::ArrayKind::numeric);
    return l;
}

std::vector<std::string> split_labels(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = s.find(',', start);
        out.push_back(
            s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) {
            return out;
        }
        start = comma + 1;
    }
}

/// How the leading dims of a weights array read: [B?, H?, Lq, Lk].
struct Dims {
    std::size_t batches = 1, heads = 1, lq = 0, lk = 0;
    bool has_batch = false, has_heads = false;
};

/// One panel to draw: which (b, h) and its title.
struct PanelRef {
    std::size_t b = 0, h = 0;
    std::string title;
};

std::vector<PanelRef>
pick_panels(const Dims& d, std::int64_t batch, std::int64_t head, const std::string& name) {
    if (batch != kAll && static_cast<std::size_t>(batch) >= d.batches) {
        throw InputError("--batch " + std::to_string(batch) + ": " + name + " has " +
                         std::to_string(d.batches) + " batch entr" +
                         (d.batches == 1 ? "y" : "ies") +
                         (d.has_batch ? "" : " (no batch dimension)"));
    }
    if (head != kAll && static_cast<std::size_t>(head) >= d.heads) {
        throw InputError("--head " + std::to_string(head) + ": " + name + " has " +
                         std::to_string(d.heads) + " head" + (d.heads == 1 ? "" : "s") +
                         (d.has_heads ? "" : " (no head dimension)"));
    }
    std::vector<PanelRef> out;
    for (std::size_t b = 0; b < d.batches; ++b) {
        if (batch != kAll && b != static_cast<std::size_t>(batch)) {
            continue;
        }
        for (std::size_t h = 0; h < d.heads; ++h) {
            if (head != kAll && h != static_cast<std::size_t>(head)) {
                continue;
            }
            std::string t;
            if (d.has_batch && batch == kAll && d.batches > 1) {
                t = "batch " + std::to_string(b);
            }
            if (d.has_heads && d.heads > 1) {
                t += (t.empty() ? "" : " \u00B7 ") + std::string("head ") + std::to_string(h);
            }
            out.push_back({b, h, t});
        }
    }
    if (out.size() > kMaxPanels) {
        throw InputError(name + ": " + std::to_string(out.size()) + " panels (" +
                         std::to_string(d.batches) + " batches x " + std::to_string(d.heads) +
                         " heads) are too many for one figure (at most " +
                         std::to_string(kMaxPanels) + "); pick with --batch N and/or --head N");
    }
    return out;
}

/// A suffix naming the single panel picked ("head 3"), for the default title.
std::string picked_suffix(const Dims& d, std::int64_t batch, std::int64_t head) {
    std::string s;
    if (batch != kAll && d.batches > 1) {
        s = "batch " + std::to_string(batch);
    }
    if (head != kAll && d.heads > 1) {
        s += (s.empty() ? "" : ", ") + std::string("head ") + std::to_string(head);
    }
    return s.empty() ? s : " \u00B7 " + s;
}

/// The rendered outputs, encoded before anything is written.
struct Outputs {
    std::string path;
    std::vector<std::uint8_t> bytes;
    std::string term;
};

enum class FileFormat { png, svg, html };

FileFormat file_format(const std::string& path, const std::string& format, const char* flag) {
    if (format == "png" || format == "svg" || format == "html") {
        return format == "png"   ? FileFormat::png
               : format == "svg" ? FileFormat::svg
                                 : FileFormat::html;
    }
    const std::string ext = lower_extension(path);
    if (path == "-" || (ext.empty() && io::written_in_place(path))) {
        return FileFormat::png; // stdout, /dev/null, a FIFO
    }
    if (ext == ".png") {
        return FileFormat::png;
    }
    if (ext == ".svg") {
        return FileFormat::svg;
    }
    if (ext == ".html" || ext == ".htm") {
        return FileFormat::html;
    }
    throw InputError(std::string(flag) + " " + path +
                     ": expected a .html, .png or .svg file name (or - for PNG on stdout)");
}

std::vector<std::uint8_t>
encode_figure(const render::HeatmapInput& in, const render::HeatmapOptions& o, FileFormat format) {
    if (format == FileFormat::html) {
        const std::string page = render::heatmap_html(in, o);
        return {page.begin(), page.end()};
    }
    const render::HeatmapFigure hf = render::heatmap_figure(in, o);
    if (format == FileFormat::png) {
        return io::encode_png(render::rasterize(hf.figure));
    }
    const std::string svg = render::figure_svg(hf.figure, io::encode_png);
    return {svg.begin(), svg.end()};
}

void write_output(const std::string& path,
                  const std::vector<std::uint8_t>& bytes,
                  FileFormat format) {
    if (path == "-" && format == FileFormat::png && isatty(STDOUT_FILENO) == 1) {
        throw InputError("-o -: stdout is a terminal; redirect it to a file, or use --term");
    }
    io::write_file_atomic(path, bytes);
}

int terminal_width() {
    if (const char* c = std::getenv("COLUMNS")) {
        char* end = nullptr;
        const long v = std::strtol(c, &end, 10);
        if (end != c && *end == '\0' && v > 0 && v < 10000) {
            return static_cast<int>(v);
        }
    }
    winsize ws{};
    if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        return ws.ws_col;
    }
    return 80;
}

/// Panels' values gathered for the renderer (it borrows spans into these).
struct PanelData {
    std::vector<std::vector<float>> values;
    std::vector<std::vector<std::uint8_t>> masked;
};

render::HeatmapInput
make_input(const io::Array& w, const Dims& d, const std::vector<PanelRef>& refs, PanelData& data) {
    render::HeatmapInput in;
    in.rows = d.lq;
    in.cols = d.lk;
    const std::size_t n = d.lq * d.lk;
    for (std::size_t k = 0; k < refs.size(); ++k) {
        const std::size_t offset = (refs[k].b * d.heads + refs[k].h) * n;
        render::HeatmapPanel p;
        p.title = refs[k].title;
        p.values = std::span<const float>(w.values).subspan(offset, n);
        if (!data.masked.empty() && !data.masked[k].empty()) {
            p.masked = data.masked[k];
        }
        in.panels.push_back(p);
    }
    return in;
}

Dims dims_of(const io::Array& w, const std::string& name, bool rank3_is_batch) {
    const auto& s = w.shape;
    if (s.size() < 2 || s.size() > 4) {
        throw InputError::shape(
            name + ": weights [Lq, Lk], [H, Lq, Lk] or [B, H, Lq, Lk]", {kAnyDim, kAnyDim}, s);
    }
    Dims d;
    d.lq = s[s.size() - 2];
    d.lk = s[s.size() - 1];
    if (s.size() == 4) {
        d.batches = s[0];
        d.heads = s[1];
        d.has_batch = d.has_heads = true;
    } else if (s.size() == 3 && rank3_is_batch) {
        d.batches = s[0];
        d.has_batch = true;
    } else if (s.size() == 3) {
        d.heads = s[0];
        d.has_heads = true;
    }
    if (d.lq == 0 || d.lk == 0 || d.batches == 0 || d.heads == 0) {
        throw InputError(name + ": nothing to draw: weights of shape " + shape_string(s));
    }
    return d;
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
    o.scale = a.scale == "log" ? render::ColorScale::log : render::ColorScale::linear;
    o.pool = a.pool == "mean" ? render::PoolMode::mean : render::PoolMode::max;
    o.annotate = a.no_annotate ? render::Annotate::off
                 : a.annotate  ? render::Annotate::on
                               : render::Annotate::automatic;
    o.decimals = a.decimals;
    o.dpi = a.dpi;
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
    Loaded l = load_weights(a.weights);
    const bool rank3_is_batch = l.weights.shape.size() == 3 && a.batch != kAll;
    if (rank3_is_batch && a.head != kAll) {
        throw InputError("--batch, --head: " + l.name +
                         " has rank 3 [H or B, Lq, Lk]: give one of them");
    }
    const Dims d = dims_of(l.weights, l.name, rank3_is_batch);
    const std::vector<PanelRef> refs = pick_panels(d, a.batch, a.head, l.name);

    PanelData data;
    std::optional<io::Array> mask;
    if (!a.mask.empty()) {
        mask = read_array_arg(a.mask, io::ArrayKind::mask);
        const std::vector<std::size_t> plane{d.lq, d.lk};
        if (mask->shape != plane && mask->shape != l.weights.shape) {
            throw InputError::shape(
                "--mask " + a.mask + ": a keep-mask for " + l.name, l.weights.shape, mask->shape);
        }
    }
    if (mask || a.masked_zero) {
        const std::size_t n = d.lq * d.lk;
        for (const auto& r : refs) {
            const std::size_t offset = (r.b * d.heads + r.h) * n;
            std::vector<std::uint8_t> m(n, 0);
            for (std::size_t i = 0; i < n; ++i) {
                const bool by_mask =
                    mask && mask->values[mask->shape.size() == 2 ? i : offset + i] == 0.0f;
                const bool by_zero = a.masked_zero && l.weights.values[offset + i] == 0.0f;
                m[i] = static_cast<std::uint8_t>(by_mask || by_zero);
            }
            data.masked.push_back(std::move(m));
        }
    }
    render::HeatmapInput in = make_input(l.weights, d, refs, data);
    in.col_labels = a.xlabels.empty() ? l.key_tokens : split_labels(a.xlabels);
    in.row_labels = a.ylabels.empty() ? l.query_tokens : split_labels(a.ylabels);
    if (a.xlabels.empty() && !in.col_labels.empty() && in.col_labels.size() != d.lk) {
        throw InputError(l.name + ": key_tokens: expected " + std::to_string(d.lk) +
                         " tokens, got " + std::to_string(in.col_labels.size()));
    }
    if (a.ylabels.empty() && !in.row_labels.empty() && in.row_labels.size() != d.lq) {
        throw InputError(l.name + ": query_tokens: expected " + std::to_string(d.lq) +
                         " tokens, got " + std::to_string(in.row_labels.size()));
    }
    render::HeatmapOptions o = options_from(a);
    if (a.title_opt != nullptr && a.title_opt->count() > 0) {
        o.title = a.title;
    } else {
        o.title = (a.weights == "-" ? std::string("attention weights")
                                    : fs::path(a.weights).filename().string()) +
                  picked_suffix(d, a.batch, a.head);
    }

    // Render everything before writing anything.
    std::vector<std::uint8_t> bytes;
    if (to_file) {
        bytes = encode_figure(in, o, format);
    }
    std::string term;
    if (a.term) {
        render::TermOptions t;
        t.color = render::term_color_from_env(std::getenv("NO_COLOR"), std::getenv("COLORTERM"));
        t.width = terminal_width();
        term = render::heatmap_terminal(in, o, t);
    }
    if (to_file) {
        write_output(a.output, bytes, format);
    }
    if (a.term) {
        std::cout << term;
        std::cout.flush();
        if (!std::cout) {
            throw SystemError("<stdout>: cannot write");
        }
    }
}

/// Cells the problem blocks for (b, h) of [Lq, Lk] weights, by the core's one rule
/// (attn::Visibility: causal, window, mask, key padding, -inf bias). Empty when nothing
/// blocks, or when the weights are not the problem's [Lq, Lk].
std::vector<std::uint8_t> blocked_cells(
    const problem::Problem& p, std::size_t b, std::size_t h, std::size_t lq, std::size_t lk) {
    if (lq != p.lq || lk != p.lk) {
        return {};
    }
    const Visibility vis(problem::attention_spec(p), lq, lk);
    std::vector<std::uint8_t> out(lq * lk, 0);
    bool any = false;
    for (std::size_t i = 0; i < lq; ++i) {
        for (std::size_t j = 0; j < lk; ++j) {
            const bool blocked = !vis.sees(b, h, i, j);
            out[i * lk + j] = static_cast<std::uint8_t>(blocked);
            any = any || blocked;
        }
    }
    return any ? out : std::vector<std::uint8_t>{};
}

} // namespace

void write_heatmap_file(const std::string& path,
                        const io::Array& weights,
                        const problem::Problem* problem) {
    const FileFormat format = file_format(path, "", "--heatmap");
    const std::size_t rank = weights.shape.size();
    const bool has_batch = problem != nullptr && problem->batched;
    const bool has_heads = problem != nullptr && problem->num_heads > 1;
    const Dims d = dims_of(weights, "--heatmap", rank == 3 && has_batch && !has_heads);
    const std::vector<PanelRef> refs = pick_panels(d, kAll, kAll, "--heatmap");
    PanelData data;
    if (problem != nullptr) {
        for (const auto& r : refs) {
            data.masked.push_back(blocked_cells(*problem, r.b, r.h, d.lq, d.lk));
        }
    }
    render::HeatmapInput in = make_input(weights, d, refs, data);
    render::HeatmapOptions o;
    o.title = "attention weights";
    if (problem != nullptr) {
        if (problem->query_tokens && problem->query_tokens->size() == d.lq) {
            in.row_labels = *problem->query_tokens;
        }
        if (problem->key_tokens && problem->key_tokens->size() == d.lk) {
            in.col_labels = *problem->key_tokens;
        }
        if (problem->id && problem->id->is_string()) {
            o.title = problem->id->get<std::string>();
        }
    }
    write_output(path, encode_figure(in, o, format), format);
}

void add_heatmap(CLI::App& app) {
    auto a = std::make_shared<HeatmapArgs>();
    CLI::App* cmd = add_command(
        app,
        "heatmap",
        "Draw attention weights as a heatmap (PNG, SVG, an interactive HTML page, or the "
        "terminal)");
    cmd->add_option("WEIGHTS",
                    a->weights,
                    "weights [Lq, Lk], [H, Lq, Lk] or [B, H, Lq, Lk]: .npy, .json array, an attn "
                    "compute result document (weights and tokens), or - for stdin")
        ->required();
    const char* out = "Output";
    cmd->add_option(
           "-o,--output",
           a->output,
           "write the figure to OUT.png, OUT.svg or OUT.html (one self-contained interactive "
           "page: hover, zoom, heads, query rows; - : PNG on stdout)")
        ->group(out);
    cmd->add_option("--format", a->format, "png, svg or html (default: from the -o extension)")
        ->check(CLI::IsMember({"png", "svg", "html"}))
        ->group(out);
    cmd->add_flag("--term",
                  a->term,
                  "print the heatmap in the terminal (24-bit colour, or 256 "
                  "unless COLORTERM=truecolor; none with NO_COLOR)")
        ->group(out);
    cmd->add_option("--dpi", a->dpi, "pixel density (default 100, matplotlib's; 200 for print)")
        ->group(out);
    const char* sel = "Panels";
    cmd->add_option("--head", a->head, "draw only head N (default: one panel per head)")
        ->check(CLI::NonNegativeNumber)
        ->group(sel);
    cmd->add_option(
           "--batch", a->batch, "draw only batch entry N (for rank 3: the first dim is the batch)")
        ->check(CLI::NonNegativeNumber)
        ->group(sel);
    const char* lab = "Labels";
    a->title_opt =
        cmd->add_option("--title", a->title, "figure title (default: the file name; '' for none)")
            ->group(lab);
    cmd->add_option(
           "--xlabels", a->xlabels, "key labels, comma-separated (default: key_tokens, or indices)")
        ->group(lab);
    cmd->add_option("--ylabels",
                    a->ylabels,
                    "query labels, comma-separated (default: query_tokens, or indices)")
        ->group(lab);
    cmd->add_flag("--annotate",
                  a->annotate,
                  "write each cell's value (default: when the cells are large enough)")
        ->group(lab);
    cmd->add_flag("--no-annotate", a->no_annotate, "never write cell values")->group(lab);
    cmd->add_option("--decimals", a->decimals, "digits after the point in annotations (default 2)")
        ->group(lab);
    const char* col = "Colours";
    cmd->add_option("--cmap",
                    a->cmap,
                    "viridis (default), magma, inferno, plasma, cividis, blues, greys; _r reverses")
        ->group(col);
    a->vmin_opt = cmd->add_option("--vmin",
                                  a->vmin,
                                  "value at the bottom of the colour scale (default: data min)")
                      ->group(col);
    a->vmax_opt = cmd->add_option("--vmax",
                                  a->vmax,
                                  "value at the top of the colour scale (default: data max)")
                      ->group(col);
    cmd->add_option("--scale", a->scale, "linear (default) or log")
        ->check(CLI::IsMember({"linear", "log"}))
        ->group(col);
    a->clip_opt =
        cmd->add_option("--clip",
                        a->clip,
                        "clip the colour range to quantiles 1-Q..Q, e.g. 0.99 (attention sinks)")
            ->group(col);
    cmd->add_option(
           "--pool",
           a->pool,
           "max (default) or mean: how cells are merged when the map is larger than the figure")
        ->check(CLI::IsMember({"max", "mean"}))
        ->group(col);
    cmd->add_option("--mask",
                    a->mask,
                    "keep-mask FILE ([Lq, Lk] or the weights' shape; 0 = blocked): blocked cells "
                    "are hatched")
        ->group(col);
    cmd->add_flag("--masked-zero",
                  a->masked_zero,
                  "hatch cells whose weight is exactly 0 (what masking leaves)")
        ->group(col);
    cmd->callback([a] { run_heatmap(*a); });
}

} // namespace attn::app

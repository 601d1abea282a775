// Reading weights into panels and encoding the figure: the work behind `attn heatmap` and
// compute's --heatmap (see heatmap_render.hpp). Flags are cmd_heatmap.cpp's business.
#include "heatmap_render.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/fallback_font.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/png.hpp"
#include "attn/render/html.hpp"
#include "attn/visibility.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace attn::app {

namespace fs = std::filesystem;

namespace {

/// One warning for every code point no font could draw (they show as boxes).
void warn_missing_glyphs() {
    const std::vector<char32_t> missing = render::missing_glyphs();
    if (missing.empty()) {
        return;
    }
    char first[16];
    std::snprintf(first, sizeof first, "U+%04X", static_cast<unsigned>(missing.front()));
    warn(std::string("labels: no font has a glyph for ") + first +
         (missing.size() > 1 ? " (and " + std::to_string(missing.size() - 1) + " more)" : "") +
         ": drawn as boxes (fonts: the built-in DejaVu Sans, then the first of " +
         io::fallback_font_paths().front() + " (fonts-wqy-microhei), ... that is installed)");
}

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

/// A stacked result's "layers" (the layer numbers of its leading axis), or empty.
std::vector<std::size_t> layer_list(const nlohmann::json& doc, const std::string& name) {
    std::vector<std::size_t> out;
    if (!doc.contains("layers") || doc["layers"].is_null()) {
        return out;
    }
    if (!doc["layers"].is_array() || doc["layers"].empty()) {
        throw InputError(name + ": layers: expected a list of layer numbers");
    }
    for (const auto& v : doc["layers"]) {
        if (!v.is_number_unsigned()) {
            throw InputError(name + ": layers: expected a list of layer numbers, got " +
                             std::string(v.type_name()));
        }
        out.push_back(v.get<std::size_t>());
    }
    return out;
}

} // namespace

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
        l.weights = io::parse_json_array(
            doc["weights"], l.name + ": weights", io::ArrayKind::numeric, io::Precision::f32, 5);
        l.query_tokens = token_list(doc, "query_tokens", l.name);
        l.layers = layer_list(doc, l.name);
        l.key_tokens = token_list(doc, "key_tokens", l.name);
        // A result of "text" holds its vocabulary strings in "tokens" (a list per text for
        // a batch) beside the readable labels: the labels win.
        if (doc.contains("tokens") && (l.query_tokens.empty() || l.key_tokens.empty())) {
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
    for (std::size_t l = 0; l < d.layers; ++l) {
        for (std::size_t b = 0; b < d.batches; ++b) {
            if (batch != kAll && b != static_cast<std::size_t>(batch)) {
                continue;
            }
            for (std::size_t h = 0; h < d.heads; ++h) {
                if (head != kAll && h != static_cast<std::size_t>(head)) {
                    continue;
                }
                std::string t;
                if (d.has_layers) {
                    t = "layer " + std::to_string(d.layer_ids[l]);
                }
                if (d.has_batch && batch == kAll && d.batches > 1) {
                    t += (t.empty() ? "" : " \u00B7 ") + std::string("batch ") + std::to_string(b);
                }
                if (d.has_heads && d.heads > 1) {
                    t += (t.empty() ? "" : " \u00B7 ") + std::string("head ") + std::to_string(h);
                }
                out.push_back({l, b, h, t});
            }
        }
    }
    if (d.has_layers && out.size() > kMaxModelPanels) {
        throw InputError(
            name + ": " + std::to_string(out.size()) + " panels (" + std::to_string(d.layers) +
            " layers x " + std::to_string(d.batches) + " batches x " + std::to_string(d.heads) +
            " heads) are too many for one model view (at most " + std::to_string(kMaxModelPanels) +
            "); pick with --head N and/or --batch N, or compute fewer --layers");
    }
    if (!d.has_layers && out.size() > kMaxPanels) {
        throw InputError(name + ": " + std::to_string(out.size()) + " panels (" +
                         std::to_string(d.batches) + " batches x " + std::to_string(d.heads) +
                         " heads) are too many for one figure (at most " +
                         std::to_string(kMaxPanels) + "); pick with --batch N and/or --head N");
    }
    return out;
}

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

std::vector<std::uint8_t> encode_figure(const render::HeatmapInput& in,
                                        const render::HeatmapOptions& o,
                                        FileFormat format,
                                        bool quiet) {
    // Glyphs DejaVu lacks come from a Debian font package, read when first needed.
    static const bool fallback_set =
        (render::set_fallback_font_source(&io::read_fallback_font), true);
    (void)fallback_set;
    std::vector<std::uint8_t> bytes;
    std::vector<std::string> notes;
    if (format == FileFormat::html) {
        const std::string page = render::heatmap_html(in, o);
        bytes.assign(page.begin(), page.end());
    } else {
        const render::HeatmapFigure hf = render::heatmap_figure(in, o);
        notes = hf.label_notes;
        if (format == FileFormat::png) {
            bytes = io::encode_png(render::rasterize(hf.figure));
        } else {
            const std::string svg = render::figure_svg(hf.figure, io::encode_png);
            bytes.assign(svg.begin(), svg.end());
        }
    }
    if (!quiet) {
        for (const std::string& n : notes) {
            warn(n);
        }
        warn_missing_glyphs();
    }
    return bytes;
}

void add_figure_options(CLI::App& cmd, double& font_size, std::size_t& cols, const char* group) {
    cmd.add_option("--font-size",
                   font_size,
                   "heatmap label size in points (default 10; title 1.2x); the figure grows so "
                   "that every token label is drawn")
        ->type_name("PT")
        ->group(group);
    cmd.add_option("--cols",
                   cols,
                   "heatmap panels per row of the grid (default: one row up to 4, then square)")
        ->check(positive_count())
        ->group(group);
}

void write_output(const std::string& path,
                  const std::vector<std::uint8_t>& bytes,
                  FileFormat format) {
    if (path == "-" && format == FileFormat::png && isatty(STDOUT_FILENO) == 1) {
        throw InputError("-o -: stdout is a terminal; redirect it to a file, or use --term");
    }
    io::write_file_atomic(path, bytes);
}

render::HeatmapInput
make_input(const io::Array& w, const Dims& d, const std::vector<PanelRef>& refs, PanelData& data) {
    render::HeatmapInput in;
    in.rows = d.lq;
    in.cols = d.lk;
    const std::size_t n = d.lq * d.lk;
    for (std::size_t k = 0; k < refs.size(); ++k) {
        const std::size_t offset = refs[k].offset(d);
        render::HeatmapPanel p;
        p.title = refs[k].title;
        p.values = std::span<const float>(w.values).subspan(offset, n);
        if (!data.masked.empty() && !data.masked[k].empty()) {
            p.masked = data.masked[k];
        }
        in.panels.push_back(p);
    }
    // The model view: rows are layers (and batches), columns the heads shown.
    if (d.has_layers && refs.size() > 1) {
        std::size_t heads_shown = 0;
        while (heads_shown < refs.size() && refs[heads_shown].l == refs.front().l &&
               refs[heads_shown].b == refs.front().b) {
            ++heads_shown;
        }
        in.grid_cols = heads_shown;
    }
    return in;
}

Dims dims_of(const io::Array& w,
             const std::string& name,
             bool rank3_is_batch,
             std::vector<std::size_t> layer_ids) {
    std::vector<std::size_t> s = w.shape;
    const bool has_layers = !layer_ids.empty() || s.size() == 5;
    if (s.size() < (has_layers ? 3 : 2) || s.size() > (has_layers ? 5 : 4)) {
        throw InputError::shape(name + (has_layers ? ": weights [layers, Lq, Lk] .. [layers, B, "
                                                     "H, Lq, Lk]"
                                                   : ": weights [Lq, Lk], [H, Lq, Lk], [B, H, Lq, "
                                                     "Lk] or [layers, B, H, Lq, Lk]"),
                                {kAnyDim, kAnyDim},
                                s);
    }
    Dims d;
    if (has_layers) {
        d.has_layers = true;
        d.layers = s.front();
        s.erase(s.begin());
        if (layer_ids.empty()) {
            for (std::size_t l = 0; l < d.layers; ++l) {
                layer_ids.push_back(l);
            }
        }
        if (layer_ids.size() != d.layers) {
            throw InputError(name + ": layers: " + std::to_string(layer_ids.size()) +
                             " layer numbers for " + std::to_string(d.layers) +
                             " layers of weights");
        }
        d.layer_ids = std::move(layer_ids);
    }
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
    if (d.lq == 0 || d.lk == 0 || d.batches == 0 || d.heads == 0 || d.layers == 0) {
        throw InputError(name + ": nothing to draw: weights of shape " + shape_string(s));
    }
    return d;
}

namespace {

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
                        const problem::Problem* problem,
                        const OutputOptions& options,
                        const std::vector<std::size_t>& layers) {
    const FileFormat format = file_format(path, "", "--heatmap");
    const std::size_t rank = weights.shape.size() - (layers.empty() ? 0 : 1);
    const bool has_batch = problem != nullptr && problem->batched;
    const bool has_heads = problem != nullptr && problem->num_heads > 1;
    const Dims d = dims_of(weights, "--heatmap", rank == 3 && has_batch && !has_heads, layers);
    const std::vector<PanelRef> refs = pick_panels(d, kAll, kAll, "--heatmap");
    PanelData data;
    if (problem != nullptr) {
        for (const auto& r : refs) {
            data.masked.push_back(blocked_cells(*problem, r.b, r.h, d.lq, d.lk));
        }
    }
    render::HeatmapInput in = make_input(weights, d, refs, data);
    render::HeatmapOptions o;
    // Titled by the problem's name (its id, else its file's name), else what it shows.
    std::string name = options.name;
    if (problem != nullptr && problem->id && problem->id->is_string()) {
        name = problem->id->get<std::string>();
    }
    o.title = name.empty() ? "attention weights" : name;
    if (d.has_layers) {
        const auto count = [](std::size_t n, const char* one, const char* many) {
            return std::to_string(n) + " " + (n == 1 ? one : many);
        };
        o.title = (name.empty() ? "" : name + ": ") +
                  "model view: " + count(d.layers, "layer", "layers") +
                  (d.has_batch ? " \u00D7 " + count(d.batches, "batch", "batches") : "") +
                  " \u00D7 " + count(d.heads, "head", "heads");
    }
    o.font_size = options.font_size;
    o.columns = options.cols;
    if (problem != nullptr) {
        if (problem->query_tokens && problem->query_tokens->size() == d.lq) {
            in.row_labels = *problem->query_tokens;
        }
        if (problem->key_tokens && problem->key_tokens->size() == d.lk) {
            in.col_labels = *problem->key_tokens;
        }
    }
    write_output(path, encode_figure(in, o, format, options.quiet), format);
}

} // namespace attn::app

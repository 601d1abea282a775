// Reading weights into panels and encoding the figure: the work behind `attn heatmap` and
// compute's --heatmap (see heatmap_render.hpp). Flags are cmd_heatmap.cpp's business.
#include "heatmap_render.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/fallback_font.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npz.hpp"
#include "attn/problem/result_read.hpp"
#include "attn/render/html.hpp"
#include "attn/render/png.hpp"
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

std::string lower_extension(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
    return ext;
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
    if (ext == ".npy" && path != "-" && io::is_regular_file(path)) {
        // Mapped, not read: a large file costs the process no copy of its values.
        auto view = std::make_shared<const io::NpyView>(path, l.name);
        l.weights.shape = view->shape();
        l.weights.dtype = view->dtype();
        l.view = std::move(view);
        return l;
    }
    const std::vector<std::uint8_t> bytes =
        path == "-" ? read_stdin("WEIGHTS") : io::read_file(path);
    // The extension decides when it names a format; else the bytes do (NPY's magic).
    const std::optional<io::ArrayFormat> by_name =
        ext == ".npy"    ? std::optional(io::ArrayFormat::npy)
        : ext == ".json" ? std::optional(io::ArrayFormat::json)
                         : std::nullopt;
    problem::ResultFile r = problem::read_result_bytes(bytes, l.name, {}, by_name);
    if (r.array) {
        l.weights = std::move(*r.array);
        return l;
    }
    if (!r.weights) {
        throw InputError(l.name + ": a JSON object without \"weights\" (expected an array, or "
                                  "a result of attn compute without --no-weights)");
    }
    l.weights = std::move(*r.weights);
    l.query_tokens = std::move(r.query_tokens);
    l.key_tokens = std::move(r.key_tokens);
    l.layers = std::move(r.layers);
    return l;
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
    plot::Encoded e = plot::encode_figure(in, o, format);
    if (!quiet) {
        for (const std::string& w : e.warnings) {
            warn(w);
        }
    }
    return std::move(e.bytes);
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

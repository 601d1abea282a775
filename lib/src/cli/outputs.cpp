// Where a solved problem goes: formats by extension or --format, the checks before any
// work, and the files written, each atomically ("-" is stdout).
#include "attn/cli/outputs.hpp"

#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/number_text.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/plan.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

namespace attn::cli {

namespace fs = std::filesystem;

bool is_npz(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
    });
    return ext == ".npz";
}

SolveOptions OutputOptions::solve_options() const {
    SolveOptions s;
    s.want_weights =
        !no_weights && (output.empty() || is_npz(output) || !weights.empty() || !heatmap.empty());
    s.threads = threads;
    s.simd = simd;
    // JSON text: the document on stdout or in a .json file, weights in a .json file (an
    // .npz holds binary arrays; an .npy weights file takes them as they are computed).
    const auto text = [&](const std::string& path) {
        return !path.empty() && !is_npz(path) &&
               output_format(path, format) == io::ArrayFormat::json;
    };
    s.results_text = output.empty() || text(output) || (s.want_weights && text(weights));
    return s;
}

std::vector<std::string> extra_results(const Problem& p, bool hidden_states) {
    std::vector<std::string> out;
    for (const auto& [wanted, name] : {std::pair{p.return_lse, "lse"},
                                       std::pair{p.return_entropy, "entropy"},
                                       std::pair{p.return_argmax, "argmax"},
                                       std::pair{p.top_k > 0, "top_k"},
                                       std::pair{p.return_head_stats, "head_stats"},
                                       std::pair{p.return_rollout, "rollout"},
                                       std::pair{hidden_states, "hidden_states"}}) {
        if (wanted) {
            out.emplace_back(name);
        }
    }
    return out;
}

namespace {
void check_requested(const OutputOptions& o);                             // below
void check_weights_dtype(const Problem& problem, const OutputOptions& o); // below
} // namespace

void check_outputs(const Problem& problem,
                   const std::string& problem_file,
                   const OutputOptions& o,
                   bool hidden_states) {
    check_requested(o);
    check_weights_dtype(problem, o);
    const std::vector<std::string> extras = extra_results(problem, hidden_states);
    if (!o.output.empty() && o.output != "-" && !extras.empty() && !is_npz(o.output) &&
        o.format != "json" && io::array_format_for(o.output) == io::ArrayFormat::npy) {
        std::string names;
        for (const std::string& e : extras) {
            names += (names.empty() ? "" : ", ") + e;
        }
        throw InputError("--output " + io::message_text(o.output, 80) +
                         ": an .npy file holds the output alone, and --return asked for " + names +
                         " too: use --output FILE.npz (every array), FILE.json (the "
                         "result document) or no --output (stdout)");
    }
    std::vector<io::NamedPath> inputs = input_paths(problem);
    if (!problem_file.empty() && problem_file != "-") {
        inputs.push_back({"PROBLEM", problem_file});
    }
    io::check_output_paths(
        inputs, {{"--output", o.output}, {"--weights", o.weights}, {"--heatmap", o.heatmap}});
}

io::ArrayFormat output_format(const std::string& path, const std::string& format) {
    if (format == "npy") {
        return io::ArrayFormat::npy;
    }
    if (format == "json" || path == "-") {
        return io::ArrayFormat::json;
    }
    const std::string ext = fs::path(path).extension().string();
    if (ext.empty() && io::written_in_place(path)) {
        return io::ArrayFormat::json; // /dev/null, /dev/stderr, a FIFO: as stdout
    }
    return io::array_format_for(path);
}

std::vector<std::uint8_t>
encode_array(const std::string& path, const io::Array& a, const OutputOptions& o) {
    if (output_format(path, o.format) == io::ArrayFormat::npy) {
        return io::encode_npy(a, o.dtype == "f64"); // exact float64 for a precision f64 result
    }
    const std::string text = io::encode_json_array(a) + "\n";
    return {text.begin(), text.end()};
}

WeightsFile::WeightsFile(const std::string& path,
                         const std::vector<std::size_t>& shape,
                         io::NpyFloat type)
    : file(path, shape, type), to(file.destination()) {}

namespace {

/// The weights' element type in .npy and .npz files: "weights_dtype" f16, else --dtype's.
io::NpyFloat weights_npy_type(const Problem& problem, const OutputOptions& o) {
    return problem.weights_f16 ? io::NpyFloat::f16 : io::npy_float(o.dtype == "f64");
}

/// f16 weights exist only in NPY files: asked for anywhere else, say so instead of writing
/// float32 text silently.
void check_weights_dtype(const Problem& problem, const OutputOptions& o) {
    const bool weights_npy =
        (!o.weights.empty() && output_format(o.weights, o.format) == io::ArrayFormat::npy) ||
        (o.weights.empty() && !o.output.empty() && is_npz(o.output));
    if (problem.weights_f16 && (o.no_weights || !weights_npy)) {
        throw InputError(option_name("weights_dtype") +
                         " f16: the weights are written as float16 to --weights FILE.npy or in "
                         "--output FILE.npz only; this run writes them " +
                         std::string(o.no_weights ? "nowhere (--no-weights)" : "as JSON text"));
    }
}

} // namespace

std::vector<std::size_t> weights_shape(const Problem& problem, std::size_t layers) {
    // Copied behind a leading slot, not inserted at begin(): GCC 12 -O3 reports a null
    // dereference inside vector::insert here (a false positive; CI's g++ step).
    const std::vector<std::size_t> one = plan_problem(problem).weights;
    std::vector<std::size_t> shape(one.size() + (layers > 0 ? 1 : 0));
    std::copy(one.begin(), one.end(), shape.end() - static_cast<std::ptrdiff_t>(one.size()));
    if (layers > 0) {
        shape.front() = layers; // a stack: [layers, ...one layer's shape]
    }
    return shape;
}

std::unique_ptr<WeightsFile> map_weights_file(const Problem& problem,
                                              const OutputOptions& o,
                                              std::size_t layers,
                                              bool heatmap_streamed) {
    if (o.weights.empty() || o.no_weights || (!o.heatmap.empty() && !heatmap_streamed) ||
        weights_npy_type(problem, o) == io::NpyFloat::f64 ||
        output_format(o.weights, o.format) != io::ArrayFormat::npy || !weights_direct(problem) ||
        !io::npy_mappable(o.weights)) {
        return nullptr;
    }
    return std::make_unique<WeightsFile>(
        o.weights, weights_shape(problem, layers), weights_npy_type(problem, o));
}

namespace {

/// Refuses conflicting outputs, and an unknown format, before anything is written.
void check_requested(const OutputOptions& o) {
    if (o.no_weights && (!o.weights.empty() || !o.heatmap.empty())) {
        throw InputError("--no-weights: cannot be combined with --weights or --heatmap");
    }
    const int to_stdout = static_cast<int>(o.output == "-") + static_cast<int>(o.weights == "-") +
                          static_cast<int>(o.heatmap == "-");
    if (to_stdout > 1) {
        throw InputError("--output, --weights, --heatmap: only one of them can be - (stdout)");
    }
    for (const std::string* path : {&o.output, &o.weights}) {
        if (!path->empty() && !(path == &o.output && is_npz(o.output))) {
            output_format(*path, o.format);
        }
    }
}

/// np.savez's layout: every array of the result (the weights unless --weights has them),
/// and a stack's `layers` (int64: the layer number of each entry of the leading axis, as
/// the result document's "layers"), so a reader knows that axis for what it is. Written
/// as encoded (io::write_npz_file): no second copy of a large result.
void write_npz(const std::string& path,
               const Solution& s,
               const OutputOptions& o,
               io::NpyFloat weights_type,
               const std::vector<std::size_t>& layers) {
    std::vector<io::NpzArray> members; // pointers into `s`: nothing is copied
    const auto add_as = [&](const std::string& name, const io::Array* a, io::NpyFloat type) {
        if (a != nullptr) {
            members.push_back({name, a, type});
        }
    };
    // Every array in --dtype but the weights, which have their own (--weights-dtype).
    const auto add = [&](const std::string& name, const io::Array* a) {
        add_as(name, a, io::npy_float(o.dtype == "f64"));
    };
    const auto held = [](const std::optional<io::Array>& a) { return a ? &*a : nullptr; };
    add("output", &s.output);
    if (o.weights.empty()) {
        add_as("weights", held(s.weights), weights_type);
    }
    add("lse", held(s.lse));
    add("entropy", held(s.entropy));
    add("argmax", held(s.argmax));
    add("top_k_values", held(s.top_k_weights));
    add("top_k_indices", held(s.top_k_indices));
    add("hidden_states", held(s.hidden_states));
    if (s.head_stats) {
        for (const auto& [name, a] : *s.head_stats) {
            add("head_stats_" + name, &a);
        }
    }
    add("rollout", held(s.rollout));
    add("token_ids", held(s.token_ids));
    io::Array numbers;
    if (!layers.empty()) {
        numbers.shape = {layers.size()};
        numbers.dtype = "int64";
        for (const std::size_t l : layers) {
            numbers.values.push_back(static_cast<float>(l));
        }
        add("layers", &numbers);
    }
    io::write_npz_file(path, members);
}

} // namespace

WrittenOutputs write_outputs(const Problem& problem,
                             const Solution& s,
                             const OutputOptions& o,
                             const LayerStack* stack,
                             WeightsFile* weights_file,
                             const HeatmapWriter& heatmap) {
    check_requested(o); // a bad extension writes nothing
    check_weights_dtype(problem, o);
    // NPY files are written straight from the result, without an encoded copy in memory.
    // `type`: the element type of an NPY file (the output's --dtype, the weights' own).
    const auto write_array = [&o](const std::string& path, const io::Array& a, io::NpyFloat type) {
        if (output_format(path, o.format) == io::ArrayFormat::npy) {
            io::write_npy_file(path, a, type);
        } else {
            io::write_file_atomic(path, encode_array(path, a, o));
        }
    };
    const bool extras = s.lse || s.entropy || s.argmax || s.top_k_indices || s.hidden_states ||
                        s.head_stats || s.rollout;
    // What went to a file is not printed again: --weights FILE leaves them out.
    const auto document = [&] {
        return stack != nullptr ? stack_result_document(*stack, s, o.weights.empty())
                                : result_document(problem, s, o.weights.empty());
    };
    if (!o.output.empty() && is_npz(o.output)) {
        write_npz(o.output,
                  s,
                  o,
                  weights_npy_type(problem, o),
                  stack != nullptr ? stack->layers : std::vector<std::size_t>{});
    } else if (!o.output.empty() && extras &&
               output_format(o.output, o.format) == io::ArrayFormat::json) {
        io::write_file_atomic(o.output, document() + "\n");
    } else if (!o.output.empty()) {
        write_array(o.output, s.output, io::npy_float(o.dtype == "f64"));
    }
    if (weights_file != nullptr) {
        weights_file->file.commit(); // the kernel wrote them there
    } else if (!o.weights.empty()) {
        write_array(o.weights, *s.weights, weights_npy_type(problem, o));
    }
    if (!o.heatmap.empty()) {
        heatmap(o.heatmap,
                s.weights ? &*s.weights : nullptr,
                stack != nullptr ? stack->layers : std::vector<std::size_t>{});
    }
    WrittenOutputs out;
    if (o.output.empty() && o.weights != "-" && o.heatmap != "-") {
        out.document = document();
    }
    out.warning = fully_masked_warning(s, stack != nullptr);
    return out;
}

} // namespace attn::cli

// The output side of `compute`: the output and limit flags, files by extension or
// --format, atomic writes, "-" as stdout, and the warnings.
#include "attn/error.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/number_text.hpp"
#include "attn/kernels.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/plan.hpp"
#include "attn/problem/solve.hpp"
#include "cli.hpp"
#include "compute_options.hpp"
#include "heatmap_render.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <utility>

namespace attn::app {

namespace fs = std::filesystem;
using nlohmann::json;

// --- outputs ----------------------------------------------------------------------------------

namespace {

/// --output FILE.npz: every array of the result.
bool is_npz(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
    });
    return ext == ".npz";
}

} // namespace

problem::SolveOptions OutputOptions::solve_options() const {
    problem::SolveOptions s;
    s.want_weights =
        !no_weights && (output.empty() || is_npz(output) || !weights.empty() || !heatmap.empty());
    s.threads = threads;
    s.simd = simd;
    return s;
}

void add_output_options(CLI::App& cmd, OutputOptions& out) {
    const char* g = "Outputs";
    cmd.add_option("-o,--output",
                   out.output,
                   "write the output array to FILE (.npy or .json; - for stdout)")
        ->group(g);
    cmd.add_option("--weights",
                   out.weights,
                   "write the attention weights to FILE (.npy or .json; - for stdout)")
        ->group(g);
    cmd.add_option(
           "--heatmap",
           out.heatmap,
           "draw the weights as a heatmap: FILE.png, FILE.svg or FILE.html (interactive page)")
        ->group(g);
    cmd.add_option("--format",
                   out.format,
                   "format of --output/--weights: npy or json (default: by extension; json "
                   "for -)")
        ->check(CLI::IsMember({"npy", "json"}))
        ->group(g);
    add_figure_options(cmd, out.font_size, out.cols, g);
    cmd.add_flag("--no-weights",
                 out.no_weights,
                 "neither return nor keep the weights (linear memory in sequence length)")
        ->group(g);
    cmd.add_option("--dtype", out.dtype, "precision of .npy outputs: f32 (default) or f64")
        ->check(precision_name())
        ->group(g);
    cmd.add_option("--threads", out.threads, "worker threads (default: all cores)")
        ->check(positive_count())
        ->group(g);
    add_simd_option(cmd, out.simd)->group(g);
    cmd.add_flag("--quiet", out.quiet, "no warnings and no progress on stderr")->group(g);
    add_limit_options(cmd, out.max_memory, out.check_finite);
}

void add_limit_options(CLI::App& cmd, std::string& max_memory, bool& check_finite) {
    const char* g = "Limits";
    cmd.add_option("--max-memory",
                   max_memory,
                   "refuse problems that need more: SIZE like 4G, 512M, 50% (of RAM) or none "
                   "(default: " +
                       io::format_size(io::default_memory_limit()) + ", half of RAM)")
        ->type_name("SIZE")
        ->group(g);
    cmd.add_flag("--check-finite",
                 check_finite,
                 "refuse NaN/inf in the inputs (exit 2, naming the first); default: they "
                 "propagate as in PyTorch")
        ->group(g);
}

CLI::Option* add_simd_option(CLI::App& cmd, Simd& simd) {
    return cmd
        .add_option_function<std::string>(
            "--simd",
            [&simd](const std::string& name) {
                try {
                    simd = simd_target(name);
                } catch (const InputError&) {
                    std::string runs;
                    for (const Simd t : simd_supported()) {
                        runs += std::string(", ") + simd_name(t);
                    }
                    throw InputError("--simd: '" + io::message_text(name) +
                                     "' is not a target this CPU runs (it runs: best" + runs + ")");
                }
            },
            "SIMD target of the kernels: best (default) or one that 'attn --version' lists, "
            "e.g. AVX2 or SCALAR; targets agree within float32 tolerance")
        ->type_name("TARGET");
}

void apply_memory_limit(const std::string& max_memory) {
    if (!max_memory.empty()) {
        io::set_memory_limit(io::parse_size(max_memory, "--max-memory"));
    }
}

namespace {

/// The requested results beyond output and weights.
std::vector<std::string> extra_results(const problem::Problem& p, bool hidden_states) {
    std::vector<std::string> out;
    for (const auto& [wanted, name] : {std::pair{p.return_lse, "lse"},
                                       std::pair{p.return_entropy, "entropy"},
                                       std::pair{p.return_argmax, "argmax"},
                                       std::pair{p.top_k > 0, "top_k"},
                                       std::pair{hidden_states, "hidden_states"}}) {
        if (wanted) {
            out.emplace_back(name);
        }
    }
    return out;
}

} // namespace

void check_outputs(const problem::Problem& problem,
                   const ProblemArgs& args,
                   const OutputOptions& o,
                   bool hidden_states) {
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
    std::vector<io::NamedPath> inputs = problem::input_paths(problem);
    if (!args.problem.empty() && args.problem != "-") {
        inputs.push_back({"PROBLEM", args.problem});
    }
    io::check_output_paths(
        inputs, {{"--output", o.output}, {"--weights", o.weights}, {"--heatmap", o.heatmap}});
}

namespace {

io::ArrayFormat format_for(const std::string& path, const std::string& format) {
    if (format == "npy") {
        return io::ArrayFormat::npy;
    }
    if (format == "json" || path == "-") {
        return io::ArrayFormat::json;
    }
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext.empty() && io::written_in_place(path)) {
        return io::ArrayFormat::json; // /dev/null, /dev/stderr, a FIFO: as stdout
    }
    return io::array_format_for(path);
}

std::vector<std::uint8_t>
encode_array(const std::string& path, const io::Array& a, const OutputOptions& o) {
    if (format_for(path, o.format) == io::ArrayFormat::npy) {
        return io::encode_npy(a, o.dtype == "f64"); // exact float64 for a precision f64 result
    }
    const std::string text = io::encode_json_array(a) + "\n";
    return {text.begin(), text.end()};
}

} // namespace

WeightsFile::WeightsFile(const std::string& path, const std::vector<std::size_t>& shape)
    : file(path, shape), to(file.destination()) {}

std::unique_ptr<WeightsFile>
map_weights_file(const problem::Problem& problem, const OutputOptions& o, std::size_t layers) {
    if (o.weights.empty() || o.no_weights || !o.heatmap.empty() || o.dtype != "f32" ||
        format_for(o.weights, o.format) != io::ArrayFormat::npy ||
        !problem::weights_direct(problem) || !io::npy_mappable(o.weights)) {
        return nullptr;
    }
    const std::vector<std::size_t> one = problem::plan_problem(problem).weights;
    std::vector<std::size_t> shape(one.size() + (layers > 0 ? 1 : 0));
    std::copy(one.begin(), one.end(), shape.end() - static_cast<std::ptrdiff_t>(one.size()));
    if (layers > 0) {
        shape.front() = layers; // a stack: [layers, ...one layer's shape]
    }
    return std::make_unique<WeightsFile>(o.weights, shape);
}

void emit_solution(const problem::Problem& problem,
                   const problem::Solution& s,
                   const OutputOptions& o,
                   const problem::LayerStack* stack,
                   WeightsFile* weights_file) {
    if (o.no_weights && (!o.weights.empty() || !o.heatmap.empty())) {
        throw InputError("--no-weights: cannot be combined with --weights or --heatmap");
    }
    const int to_stdout = static_cast<int>(o.output == "-") + static_cast<int>(o.weights == "-") +
                          static_cast<int>(o.heatmap == "-");
    if (to_stdout > 1) {
        throw InputError("--output, --weights, --heatmap: only one of them can be - (stdout)");
    }
    // Every format is known before any file is written (a bad extension writes nothing).
    // NPY files are written straight from the result, without an encoded copy in memory.
    const auto write_array = [&o](const std::string& path, const io::Array& a) {
        if (format_for(path, o.format) == io::ArrayFormat::npy) {
            io::write_npy_file(path, a, o.dtype == "f64");
        } else {
            io::write_file_atomic(path, encode_array(path, a, o));
        }
    };
    const bool npz = !o.output.empty() && is_npz(o.output);
    for (const std::string* path : {&o.output, &o.weights}) {
        if (!path->empty() && !(path == &o.output && npz)) {
            format_for(*path, o.format);
        }
    }
    const bool extras = s.lse || s.entropy || s.argmax || s.top_k_indices || s.hidden_states;
    const auto document = [&](bool with_weights) {
        return stack != nullptr ? problem::stack_result_document(*stack, s, with_weights)
                                : problem::result_document(problem, s, with_weights);
    };
    if (npz) {
        // np.savez's layout: every array of the result.
        std::vector<io::NpzMember> members;
        const auto add = [&](const char* name, const std::optional<io::Array>& a) {
            if (a) {
                members.push_back({name,
                                   a->dtype == "int64" ? io::encode_npy_int64(*a)
                                                       : io::encode_npy(*a, o.dtype == "f64")});
            }
        };
        add("output", s.output);
        add("weights", o.weights.empty() ? s.weights : std::nullopt);
        add("lse", s.lse);
        add("entropy", s.entropy);
        add("argmax", s.argmax);
        add("top_k_values", s.top_k_weights);
        add("top_k_indices", s.top_k_indices);
        add("hidden_states", s.hidden_states);
        add("token_ids", s.token_ids);
        io::write_file_atomic(o.output, io::encode_npz(members));
    } else if (!o.output.empty() && extras &&
               format_for(o.output, o.format) == io::ArrayFormat::json) {
        const std::string text = document(o.weights.empty()) + "\n";
        io::write_file_atomic(o.output, {text.begin(), text.end()});
    } else if (!o.output.empty()) {
        write_array(o.output, s.output);
    }
    if (weights_file != nullptr) {
        weights_file->file.commit(); // the kernel wrote them there
    } else if (!o.weights.empty()) {
        write_array(o.weights, *s.weights);
    }
    if (!o.heatmap.empty()) {
        write_heatmap_file(o.heatmap,
                           *s.weights,
                           &problem,
                           o,
                           stack != nullptr ? stack->layers : std::vector<std::size_t>{});
    }
    if (o.output.empty() && to_stdout == 0) {
        // What went to a file is not printed again: --weights FILE leaves them out here.
        std::cout << document(o.weights.empty()) << '\n';
        flush_stdout();
    }
    if (const std::string w = problem::fully_masked_warning(s, stack != nullptr);
        !w.empty() && !o.quiet) {
        warn(w);
    }
}

} // namespace attn::app

// The output half of `compute`: files by extension, atomic writes, warnings.
#include "compute_options.hpp"

#include "cli.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"

#include <cmath>
#include <iostream>

namespace attn::app {

io::SolveOptions OutputOptions::solve_options() const {
    io::SolveOptions s;
    s.want_weights = !no_weights && (output.empty() || !weights.empty() || !heatmap.empty());
    s.threads = threads;
    return s;
}

void add_output_options(CLI::App& cmd, OutputOptions& out) {
    const char* g = "Outputs";
    cmd.add_option("-o,--output", out.output, "write the output array to FILE (.npy or .json)")
        ->group(g);
    cmd.add_option("--weights", out.weights, "write the attention weights to FILE (.npy or .json)")
        ->group(g);
    cmd.add_option("--heatmap", out.heatmap, "draw the weights as a PNG heatmap")->group(g);
    cmd.add_flag("--no-weights",
                 out.no_weights,
                 "neither return nor keep the weights (linear memory in sequence length)")
        ->group(g);
    cmd.add_option("--dtype", out.dtype, "precision of .npy outputs: f32 (default) or f64")
        ->check(CLI::IsMember({"f32", "f64"}))
        ->group(g);
    cmd.add_option("--threads", out.threads, "worker threads (default: all cores)")
        ->check(CLI::PositiveNumber)
        ->group(g);
    cmd.add_flag("--quiet", out.quiet, "no warnings on stderr")->group(g);
}

nlohmann::json parse_scale_flag(const std::string& s) {
    if (s == "default" || s == "none" || s == "null") {
        return nullptr;
    }
    std::size_t used = 0;
    double x = 0.0;
    try {
        x = std::stod(s, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != s.size() || !std::isfinite(x)) {
        throw InputError("--scale: expected a finite number or 'default', got '" + s + "'");
    }
    return x;
}

namespace {

std::vector<std::uint8_t> encode_array(const std::string& path, const io::Array& a, bool f64) {
    if (io::array_format_for(path) == io::ArrayFormat::npy) {
        return io::encode_npy(a.shape, a.values.data(), f64);
    }
    const std::string text = io::encode_json_array(a.shape, a.values.data()) + "\n";
    return {text.begin(), text.end()};
}

}  // namespace

void emit_solution(const io::Problem& problem, const io::Solution& s, const OutputOptions& o) {
    if (o.no_weights && (!o.weights.empty() || !o.heatmap.empty())) {
        throw InputError("--no-weights: cannot be combined with --weights or --heatmap");
    }
    const bool f64 = o.dtype == "f64";
    // Encode everything first, so a bad extension fails before any file is written.
    std::vector<std::uint8_t> out_bytes, weight_bytes;
    if (!o.output.empty()) {
        out_bytes = encode_array(o.output, s.output, f64);
    }
    if (!o.weights.empty()) {
        weight_bytes = encode_array(o.weights, *s.weights, f64);
    }
    if (!o.output.empty()) {
        io::write_file_atomic(o.output, out_bytes);
    }
    if (!o.weights.empty()) {
        io::write_file_atomic(o.weights, weight_bytes);
    }
    if (!o.heatmap.empty()) {
        write_heatmap_file(o.heatmap, *s.weights, &problem);
    }
    if (o.output.empty()) {
        std::cout << io::result_document(problem, s) << '\n';
        std::cout.flush();
        if (!std::cout) {
            throw SystemError("<stdout>: cannot write");
        }
    }
    if (s.rows_fully_masked > 0 && !o.quiet) {
        warn(std::to_string(s.rows_fully_masked) +
             " query row(s) can see no key (fully masked): their weights are zeros and their "
             "attention output is zeros (before any output projection)");
    }
}

}  // namespace attn::app

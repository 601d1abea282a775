// Output options shared by `compute` and `batch`: which files to write, in which
// precision, how many threads, and the writing of one solved problem.
#pragma once

#include "attn/io/problem.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace attn::app {

struct OutputOptions {
    std::string output;   ///< --output FILE (.npy/.json); empty: result document on stdout
    std::string weights;  ///< --weights FILE (.npy/.json)
    std::string heatmap;  ///< --heatmap FILE.png
    std::string dtype = "f32";
    bool no_weights = false;
    bool quiet = false;
    unsigned threads = 0;

    io::SolveOptions solve_options() const;
};

/// Registers --output, --weights, --heatmap, --no-weights, --dtype, --threads, --quiet.
void add_output_options(CLI::App& cmd, OutputOptions& out);

/// "0.125", "1", "default"/"none" (-> null). Throws InputError for anything else.
nlohmann::json parse_scale_flag(const std::string& s);

/// Writes the requested files (atomically) or the result document on stdout, and warns
/// about fully masked rows on stderr.
void emit_solution(const io::Problem& problem, const io::Solution& solution, const OutputOptions& o);

/// Renders weights [.., Lq, Lk] as a PNG heatmap at `path` (cmd_heatmap.cpp).
void write_heatmap_file(const std::string& path,
                        const io::Array& weights,
                        const io::Problem* problem);

}  // namespace attn::app

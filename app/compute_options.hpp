// What `compute`, `explain`, `batch`, `diff` and `info` share: the declarations of the
// problem, output and limit flags (CLI11), filling attn_cli's plain structs
// (attn/cli/problem_flags.hpp, attn/cli/outputs.hpp), and the writing of one solved
// problem. No subcommand is registered here.
#pragma once

#include "attn/cli/outputs.hpp"
#include "attn/cli/problem_flags.hpp"
#include "attn/io/array.hpp"
#include "attn/io/stdin_read.hpp"
#include "attn/plot/streamed_view.hpp"
#include "attn/problem/document.hpp"
#include "attn/problem/layers.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"

#include <CLI/CLI.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace attn::app {

// The library's names, as the subcommands use them.
using cli::CommonProblemFlags;
using ProblemArgs = cli::ProblemFlags;
using cli::OutputOptions;
using cli::problem_input;
using cli::ProblemInput;
using cli::WeightsFile;
using io::read_array_arg;
using io::read_stdin;

/// Registers the positional PROBLEM and the field flags (--query/-q, ..., --variant).
void add_problem_options(CLI::App& cmd, ProblemArgs& args);

/// Registers --output, --weights, --heatmap, --format, --no-weights, --dtype, --threads,
/// --simd, --quiet, --max-memory, --check-finite.
void add_output_options(CLI::App& cmd, OutputOptions& out);

/// Registers --max-memory SIZE and --check-finite (compute registers them through
/// add_output_options; batch on its own).
void add_limit_options(CLI::App& cmd, std::string& max_memory, bool& check_finite);

/// Registers --simd TARGET (compute registers it through add_output_options; batch on its
/// own): "best" or a target `attn --version` names, case-insensitive, read into `simd` while
/// the command line is parsed. A target this CPU does not run is an InputError listing
/// the ones it does.
CLI::Option* add_simd_option(CLI::App& cmd, Simd& simd);

/// Sets the process-wide memory limit from --max-memory (nothing when it is empty).
/// Call it before anything is read. Throws InputError for a bad SIZE.
void apply_memory_limit(const std::string& max_memory);

/// Writes the requested files (cli::write_outputs, --heatmap through
/// write_heatmap_file) or the result document on stdout, and warns about fully masked rows
/// on stderr unless --quiet. `stack`: a stacked every-layer result (problem is its first
/// layer's).
void emit_solution(const problem::Problem& problem,
                   const problem::Solution& solution,
                   const OutputOptions& o,
                   const problem::LayerStack* stack = nullptr,
                   WeightsFile* weights_file = nullptr,
                   plot::StreamedView* streamed = nullptr);

/// compute's --heatmap FILE.html of weights longer than 4096 on either axis, built as the
/// kernel makes them (plot::StreamedView), or null where the page is drawn from the
/// weights in memory: another format, --no-weights, weights that are not the kernel's as
/// they are (problem::weights_direct). `name`: the title when the problem has no id.
std::unique_ptr<plot::StreamedView> streamed_heatmap(const problem::DecodedDocument& d,
                                                     const OutputOptions& o,
                                                     const std::string& name);

/// Renders weights [.., Lq, Lk] as a PNG, SVG or HTML heatmap at `path` with the
/// problem's tokens and `options`' --font-size, --cols, --quiet (heatmap_render.cpp).
/// `layers`: the layer numbers of a stacked result's leading axis (the model view: rows
/// are layers, columns heads); empty for one layer.
void write_heatmap_file(const std::string& path,
                        const io::Array& weights,
                        const problem::Problem* problem,
                        const OutputOptions& options,
                        const std::vector<std::size_t>& layers = {});

} // namespace attn::app

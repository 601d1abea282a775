// The output and limit flags of `compute` (and `batch`'s limits), filling
// cli::OutputOptions, and the final writes of one solved problem: the files through
// cli::write_outputs, the result document on stdout, the warning on stderr.
#include "attn/cli/outputs.hpp"
#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/number_text.hpp"
#include "attn/kernels.hpp"
#include "cli.hpp"
#include "compute_options.hpp"
#include "heatmap_render.hpp"

#include <iostream>
#include <string>

namespace attn::app {

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
    add_figure_options(cmd, out.font_size, out.cols, out.view_top_k, g);
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
    cmd.add_flag("--progress",
                 out.progress,
                 "a model run's progress on stderr even when it is not a terminal: one line "
                 "per layer (on a terminal it is shown anyway)")
        ->group(g);
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

std::unique_ptr<plot::StreamedView> streamed_heatmap(const problem::DecodedDocument& d,
                                                     const OutputOptions& o,
                                                     const std::string& name) {
    if (o.heatmap.empty() || o.no_weights ||
        file_format(o.heatmap, "", "--heatmap") != FileFormat::html ||
        !problem::weights_direct(d.first())) {
        return nullptr;
    }
    const std::vector<std::size_t> shape = cli::weights_shape(d.first(), d.layers());
    if (!plot::streamed_view_wanted(shape)) {
        return nullptr;
    }
    const std::vector<std::size_t> layers =
        d.stack() != nullptr ? d.stack()->layers : std::vector<std::size_t>{};
    return std::make_unique<plot::StreamedView>(
        d.first(), shape, layers, name, o.font_size, o.cols, o.view_top_k, o.threads);
}

void emit_solution(const problem::Problem& problem,
                   const problem::Solution& s,
                   const OutputOptions& o,
                   const problem::LayerStack* stack,
                   WeightsFile* weights_file,
                   plot::StreamedView* streamed) {
    const cli::WrittenOutputs written =
        cli::write_outputs(problem,
                           s,
                           o,
                           stack,
                           weights_file,
                           [&](const std::string& path,
                               const io::Array* weights,
                               const std::vector<std::size_t>& layers) {
                               if (weights == nullptr) {
                                   ATTN_ASSERT(streamed != nullptr); // the kernel fed it
                                   write_output(path, streamed->finish(), FileFormat::html);
                               } else {
                                   write_heatmap_file(path, *weights, &problem, o, layers);
                               }
                           });
    if (written.document) {
        std::cout << *written.document << '\n';
        flush_stdout();
    }
    if (!written.warning.empty() && !o.quiet) {
        warn(written.warning);
    }
}

} // namespace attn::app

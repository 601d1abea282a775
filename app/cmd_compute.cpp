// `attn compute [PROBLEM]`: reads a problem (file, stdin, or flags alone), overlays the
// flags, solves it, and writes the result document or the requested files ("-" is
// stdin/stdout). Each flag sets the problem field of the same meaning; paths given as
// flags are relative to the working folder, paths inside the problem to its folder.
#include "attn/cli/outputs.hpp"
#include "attn/problem/document.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace attn::app {

namespace {

struct ComputeArgs {
    ProblemArgs problem;
    OutputOptions out;
};

void compute_options(CLI::App& cmd, ComputeArgs& a) {
    add_problem_options(cmd, a.problem);
    add_output_options(cmd, a.out);
}

void run_compute(const ComputeArgs& a) {
    apply_memory_limit(a.out.max_memory); // before anything is read
    ProblemInput in = problem_input(a.problem, "compute");
    OutputOptions out = a.out;
    if (in.name != "flags" && in.name != "<stdin>") {
        out.name = std::filesystem::path(in.name).filename().string();
    }
    // Long computations show a spinner on a terminal's stderr; quick ones never start it.
    std::optional<DelayedSpinner> spinner(std::in_place, progress_wanted(a.out.quiet), "computing");
    const problem::DecodedDocument d =
        problem::decode_document(std::move(in.doc), in.base, std::move(in.arrays));
    if (!a.out.quiet && !d.first().warnings.empty()) {
        // The decoder's warnings: the spinner is erased before them and started again after.
        spinner.reset();
        for (const std::string& w : d.first().warnings) {
            warn(w);
        }
        spinner.emplace(progress_wanted(a.out.quiet), "computing");
    }
    // Before the work, so nothing is lost.
    cli::check_outputs(d.first(), a.problem.problem, a.out, d.wants_hidden_states());
    // A model run's heatmap is titled without the PROBLEM file's name (as before the move).
    const OutputOptions& shown = d.is_model_run() ? a.out : out;
    std::unique_ptr<plot::StreamedView> view = streamed_heatmap(d, a.out, shown.name);
    const std::unique_ptr<WeightsFile> weights =
        cli::map_weights_file(d.first(), a.out, d.layers(), view != nullptr);
    if (view != nullptr && !a.out.weights.empty() && weights == nullptr) {
        view.reset(); // --weights needs them in memory (JSON, stdout): so does the page
    }
    problem::SolveOptions options = a.out.solve_options();
    // The kernel writes them to the file, to the page's builder, or to both.
    WeightsDestination<float> both;
    if (view != nullptr && weights != nullptr) {
        both.size = weights->to.size;
        both.store = [&](std::size_t first, const float* values, std::size_t count) {
            weights->to.store(first, values, count);
            view->destination().store(first, values, count);
        };
        options.weights_to = &both;
    } else if (view != nullptr && view->pooled() != nullptr && !d.is_model_run() &&
               d.stack() == nullptr) {
        // The page alone, of one attention call: the streaming kernel pools the weights
        // from its score tiles, none are made.
        options.want_weights = false;
        options.pooled_to = view->pooled();
    } else if (view != nullptr) {
        options.weights_to = &view->destination();
    } else if (weights != nullptr) {
        options.weights_to = &weights->to;
    }
    // A model run says which layer it is on: in the spinner's line on a terminal, one line
    // per layer with --progress elsewhere.
    const bool lines = a.out.progress && !a.out.quiet && !progress_wanted(a.out.quiet);
    if (d.is_model_run() && !a.out.quiet) {
        options.on_layer =
            LayerProgress(&*spinner, lines, d.first().batch * d.first().lq, cli::stderr_sink());
    }
    const problem::Solution solution = problem::solve_document(d, options, a.out.check_finite);
    spinner->stop();
    emit_solution(d.first(), solution, shown, d.stack(), weights.get(), view.get());
}

} // namespace

void add_compute(CLI::App& app) {
    add_command<ComputeArgs>(
        app,
        {"compute",
         "Compute attention for one problem: a JSON problem file (- for stdin) and/or flags.\n"
         "Prints {\"output\": .., \"weights\": ..} unless --output is given."},
        compute_options,
        run_compute);
}

} // namespace attn::app

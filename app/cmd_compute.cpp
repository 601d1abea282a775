// `attn compute [PROBLEM]`: reads a problem (file, stdin, or flags alone), overlays the
// flags, solves it, and writes the result document or the requested files ("-" is
// stdin/stdout). Each flag sets the problem field of the same meaning; paths given as
// flags are relative to the working folder, paths inside the problem to its folder.
#include "attn/io/limits.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/layers.hpp"
#include "attn/problem/model_run.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <algorithm>
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

/// The flags' solve options, with the kernel writing the weights into `weights` if any.
problem::SolveOptions solve_options(const OutputOptions& o, const WeightsFile* weights) {
    problem::SolveOptions s = o.solve_options();
    s.weights_to = weights != nullptr ? &weights->to : nullptr;
    return s;
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
    // The decoder's warnings: the spinner is erased before them and started again after.
    const auto print_warnings = [&](const problem::Problem& p) {
        if (a.out.quiet || p.warnings.empty()) {
            return;
        }
        spinner.reset();
        for (const std::string& w : p.warnings) {
            warn(w);
        }
        spinner.emplace(progress_wanted(a.out.quiet), "computing");
    };
    if (problem::is_model_run(in.doc, in.base)) {
        // A whole model from token ids: the forward pass, one layer's weights at a time.
        const problem::ModelRun run =
            problem::decode_model_run(in.doc, in.base, std::move(in.arrays));
        print_warnings(run.stack.first);
        check_outputs(run.stack.first, a.problem, a.out, run.want_hidden_states);
        const std::unique_ptr<WeightsFile> weights =
            map_weights_file(run.stack.first, a.out, run.stack.layers.size());
        const problem::Solution solution =
            problem::solve_model_run(run, solve_options(a.out, weights.get()));
        spinner->stop();
        emit_solution(run.stack.first, solution, a.out, &run.stack, weights.get());
        return;
    }
    if (problem::is_layer_stack(in.doc)) {
        // Every layer of a checkpoint: one layer decoded and solved at a time.
        const problem::LayerStack stack =
            problem::decode_layer_stack(in.doc, in.base, std::move(in.arrays));
        print_warnings(stack.first);
        if (a.out.check_finite) {
            problem::check_finite(stack.first);
        }
        check_outputs(stack.first, a.problem, a.out);
        const std::unique_ptr<WeightsFile> weights =
            map_weights_file(stack.first, a.out, stack.layers.size());
        const problem::Solution solution = problem::solve_layer_stack(
            stack, solve_options(a.out, weights.get()), a.out.check_finite);
        spinner->stop();
        emit_solution(stack.first, solution, out, &stack, weights.get());
        return;
    }
    const problem::Problem problem = problem::decode_problem(in.doc, in.base, std::move(in.arrays));
    print_warnings(problem);
    if (a.out.check_finite) {
        problem::check_finite(problem);
    }
    check_outputs(problem, a.problem, a.out); // before the work, so nothing is lost
    const std::unique_ptr<WeightsFile> weights = map_weights_file(problem, a.out);
    const problem::Solution solution = problem::solve(problem, solve_options(a.out, weights.get()));
    spinner->stop();
    emit_solution(problem, solution, out, nullptr, weights.get());
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

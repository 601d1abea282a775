// `attn explain [PROBLEM]`: what a problem resolves to, without computing it
// (problem::explain: shapes, heads, scale, the visibility grid, memory; its options
// printed as flags). It loads the
// arrays (to know their shapes and masks) but never multiplies anything.
#include "attn/cli/flags.hpp"
#include "attn/problem/explain.hpp"
#include "attn/problem/layers.hpp"
#include "attn/problem/model_run.hpp"
#include "attn/problem/problem.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <iostream>
#include <utility>

namespace attn::app {

namespace {

struct ExplainArgs {
    ProblemArgs problem;
};

void explain_options(CLI::App& cmd, ExplainArgs& a) {
    add_problem_options(cmd, a.problem);
}

void run_explain(const ExplainArgs& a) {
    ProblemInput in = problem_input(a.problem, "explain");
    if (problem::is_model_run(in.doc, in.base)) {
        std::cout << cli::with_flags(
            problem::explain(problem::decode_model_run(in.doc, in.base, std::move(in.arrays)))
                .str());
    } else if (problem::is_layer_stack(in.doc)) {
        const problem::LayerStack stack =
            problem::decode_layer_stack(in.doc, in.base, std::move(in.arrays));
        std::cout << cli::with_flags(problem::explain(in.doc, in.name, stack).str());
    } else {
        const problem::Problem problem =
            problem::decode_problem(in.doc, in.base, std::move(in.arrays));
        std::cout << cli::with_flags(problem::explain(in.doc, in.name, problem).str());
    }
    flush_stdout();
}

} // namespace

void add_explain(CLI::App& app) {
    add_command<ExplainArgs>(
        app,
        {"explain",
         "Show what a problem resolves to (shapes, heads, masks, memory) without computing",
         "Takes compute's inputs: a PROBLEM file (- for stdin) and/or the same flags."},
        explain_options,
        run_explain);
}

} // namespace attn::app

// `attn explain [PROBLEM]`: what a problem resolves to, without computing it
// (problem::explain of decode_document: shapes, heads, scale, the visibility grid, memory,
// its options printed as flags). It loads the
// arrays (to know their shapes and masks) but never multiplies anything.
#include "attn/cli/flags.hpp"
#include "attn/problem/document.hpp"
#include "attn/problem/explain.hpp"
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
    const problem::DecodedDocument d =
        problem::decode_document(in.doc, in.base, std::move(in.arrays));
    std::cout << cli::with_flags(problem::explain(in.doc, in.name, d).str());
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

// `attn diff A B`: compares two arrays or result documents (.npy, .json, or - for stdin)
// within tolerance (problem::compare_results: numpy.allclose's rule, in float64 on the
// values exactly as read). Exit 0 within tolerance, 1 when not, 2 on bad input.
// It reads files only; it never computes attention.
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_text.hpp"
#include "attn/problem/compare.hpp"
#include "attn/problem/result_read.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace attn::app {

namespace {

struct DiffArgs {
    std::string a, b;
    double rtol = 1e-5;
    double atol = 1e-6;
    bool quiet = false;
};

/// One side: a result file (problem::read_result_bytes), its values exactly as written.
problem::ResultFile load_operand(const std::string& path, const char* which) {
    const std::string name = path == "-" ? "<stdin>" : path;
    const problem::ResultReadOptions exact{io::ArrayKind::mask, io::Precision::f64};
    if (path != "-" && io::array_format_for(path) == io::ArrayFormat::npy) {
        problem::ResultFile r;
        r.name = name;
        r.array = io::read_array_file(path, exact.kind, exact.precision);
        return r;
    }
    const std::vector<std::uint8_t> bytes = path == "-" ? read_stdin(which) : io::read_file(path);
    return problem::read_result_bytes(bytes, name, exact);
}

/// The exit code: 0 when A equals B within tolerance, 1 when not.
int run_diff(const DiffArgs& args) {
    if (args.a == "-" && args.b == "-") {
        throw InputError("diff: only one of A and B can be - (stdin)");
    }
    const problem::ResultFile a = load_operand(args.a, "A");
    const problem::ResultFile b = load_operand(args.b, "B");
    const problem::ResultDiff d = problem::compare_results(a, b, {args.rtol, args.atol});
    if (!args.quiet) {
        std::cout << d.report;
        flush_stdout();
    }
    return d.equal ? 0 : 1;
}

/// --rtol/--atol: a finite number >= 0. NaN would make every comparison pass, and CLI11's
/// NonNegativeNumber lets it through.
CLI::Validator tolerance_check() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            char* end = nullptr;
            const double x = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(x) || x < 0.0) {
                return "expected a finite number >= 0, got '" + io::message_text(text, 40) + "'";
            }
            return {};
        },
        "NONNEGATIVE");
}

void diff_options(CLI::App& cmd, DiffArgs& a) {
    cmd.add_option("a", a.a, "A: .npy/.json array or result document, or -")->required();
    cmd.add_option("b", a.b, "B (the reference): .npy/.json array or result document, or -")
        ->required();
    cmd.add_option("--rtol", a.rtol, "relative tolerance (default 1e-5)")->check(tolerance_check());
    cmd.add_option("--atol", a.atol, "absolute tolerance (default 1e-6)")->check(tolerance_check());
    cmd.add_flag("--quiet", a.quiet, "print nothing; the exit code tells");
}

} // namespace

void add_diff(CLI::App& app) {
    add_command<DiffArgs>(
        app,
        {"diff",
         "Compare two arrays or result documents (.npy/.json, - for stdin) within tolerance",
         "Reports the max abs/rel error, the worst index, shape and NaN mismatches.\n"
         "Exit 0 when |A - B| <= atol + rtol*|B| everywhere (numpy.allclose's rule, B is "
         "the\nreference; NaN matches NaN), 1 when not, 2 on bad input."},
        diff_options,
        run_diff);
}

} // namespace attn::app

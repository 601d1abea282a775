// `attn diff A B`: compares two arrays or result documents (.npy, .json, or - for stdin)
// with numpy.allclose's rule |a - b| <= atol + rtol·|b| (B is the reference), NaN equal
// to NaN in the same position, in float64 on the values exactly as read (an f8 array is
// never rounded to float32 first). Exit 0 within tolerance, 1 when not, 2 on bad input.
// It reads files only; it never computes attention.
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_text.hpp"
#include "attn/problem/problem.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attn::app {

namespace {

using nlohmann::json;

struct DiffArgs {
    std::string a, b;
    double rtol = 1e-5;
    double atol = 1e-6;
    bool quiet = false;
};

/// One side of the comparison: a bare array, or the arrays of a result document.
struct Operand {
    std::string name;
    bool document = false;
    std::optional<io::Array> output;  ///< the array itself, or the document's "output"
    std::optional<io::Array> weights; ///< the document's "weights"
};

std::string_view as_text(const std::vector<std::uint8_t>& bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

Operand load_operand(const std::string& path, const char* which) {
    Operand op;
    op.name = path == "-" ? "<stdin>" : path;
    const bool from_stdin = path == "-";
    constexpr io::Precision exact = io::Precision::f64;
    if (!from_stdin && io::array_format_for(path) == io::ArrayFormat::npy) {
        op.output = io::read_array_file(path, io::ArrayKind::mask, exact);
        return op;
    }
    const std::vector<std::uint8_t> bytes = from_stdin ? read_stdin(which) : io::read_file(path);
    if (looks_like_npy(bytes)) {
        op.output = io::parse_npy(bytes, op.name, exact);
        return op;
    }
    const json j = io::parse_json_text(as_text(bytes), op.name);
    if (j.is_array()) {
        op.output = io::parse_json_array(j, op.name, io::ArrayKind::mask, exact);
        return op;
    }
    if (!j.is_object()) {
        throw InputError(op.name + ": expected an array or a result document, got " +
                         std::string(j.type_name()));
    }
    if (const auto it = j.find("error"); it != j.end()) {
        throw InputError(op.name + ": a result document with an error: " +
                         (it->is_string() ? it->get<std::string>() : it->dump()));
    }
    op.document = true;
    if (const auto it = j.find("output"); it != j.end()) {
        op.output = io::parse_json_array(*it, op.name + ": output", io::ArrayKind::mask, exact);
    }
    if (const auto it = j.find("weights"); it != j.end()) {
        op.weights = io::parse_json_array(*it, op.name + ": weights", io::ArrayKind::mask, exact);
    }
    if (!op.output && !op.weights) {
        throw InputError(op.name + ": expected an array or a result document with \"output\" or "
                                   "\"weights\"");
    }
    return op;
}

/// "[1, 0, 2]": the multi-index of flat position `flat` in a C-order array of `shape`.
std::string index_string(const std::vector<std::size_t>& shape, std::size_t flat) {
    std::vector<std::size_t> idx(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        const std::size_t n = shape[d] == 0 ? 1 : shape[d];
        idx[d] = flat % n;
        flat /= n;
    }
    return shape_string(idx);
}

std::string g3(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
}

/// The shortest text that reads back as x: as a float32 when x is one (a float32 array's
/// values print as "0.40508685", not as their 17-digit double expansion), else as a double.
std::string format_value(double x) {
    const auto f = static_cast<float>(x);
    return static_cast<double>(f) == x ? io::format_float(f) : io::format_double(x);
}

/// The values as read, in float64 (the readers keep them with Precision::f64).
const std::vector<double>& exact_values(const io::Array& a) {
    ATTN_ASSERT(a.values64.size() == a.values.size());
    return a.values64;
}

/// Compares one pair; prints one line (unless quiet) and returns whether it is within
/// tolerance.
bool compare(const std::string& label,
             const io::Array& a,
             const io::Array& b,
             const DiffArgs& args,
             std::string& report) {
    const std::string prefix = label.empty() ? "" : label + ": ";
    if (a.shape != b.shape) {
        report += prefix + "shape mismatch: A " + shape_string(a.shape) + ", B " +
                  shape_string(b.shape) + "\n";
        return false;
    }
    const std::size_t n = a.values.size();
    double max_abs = 0.0, max_rel = 0.0, worst_excess = 0.0;
    std::size_t at_abs = 0, at_rel = 0, at_worst = 0, outside = 0;
    std::size_t nan_mismatch = 0, first_nan = 0;
    constexpr double inf = std::numeric_limits<double>::infinity();
    const std::vector<double>& av = exact_values(a);
    const std::vector<double>& bv = exact_values(b);
    for (std::size_t i = 0; i < n; ++i) {
        const double x = av[i];
        const double y = bv[i];
        if (std::isnan(x) || std::isnan(y)) {
            if (!(std::isnan(x) && std::isnan(y))) {
                if (nan_mismatch++ == 0) {
                    first_nan = i;
                }
            }
            continue;
        }
        double err = 0.0;
        if (std::isinf(x) || std::isinf(y)) {
            err = x == y ? 0.0 : inf; // inf equals inf of the same sign only
        } else {
            err = std::fabs(x - y);
        }
        const double rel = err == 0.0 ? 0.0 : (y == 0.0 ? inf : err / std::fabs(y));
        if (err > max_abs) {
            max_abs = err;
            at_abs = i;
        }
        if (rel > max_rel) {
            max_rel = rel;
            at_rel = i;
        }
        // An infinite error (inf against a finite value or -inf) is never within
        // tolerance, even where rtol·|B| is itself infinite.
        const double tol = args.atol + args.rtol * std::fabs(y);
        if (std::isinf(err) || err > tol) {
            ++outside;
            const double excess = std::isinf(err) || tol <= 0.0 ? inf : err / tol;
            if (outside == 1 || excess > worst_excess) {
                worst_excess = excess;
                at_worst = i;
            }
        }
    }
    auto values_at = [&](std::size_t i) {
        return "A " + format_value(av[i]) + ", B " + format_value(bv[i]);
    };
    std::string line = prefix + "shape " + shape_string(a.shape) + ", " + std::to_string(n) +
                       (n == 1 ? " value" : " values");
    if (max_abs == 0.0 && nan_mismatch == 0) {
        report += line + ": identical\n";
        return true;
    }
    line += "; max abs err " + g3(max_abs) + " at " + index_string(a.shape, at_abs) +
            "; max rel err " + g3(max_rel) + " at " + index_string(a.shape, at_rel);
    if (outside == 0 && nan_mismatch == 0) {
        line += "; within tolerance";
    }
    if (outside > 0) {
        line += "; " + std::to_string(outside) + " outside tolerance, worst at " +
                index_string(a.shape, at_worst) + " (" + values_at(at_worst) + ")";
    }
    if (nan_mismatch > 0) {
        line += "; NaN in only one of them at " + std::to_string(nan_mismatch) +
                " position(s), first at " + index_string(a.shape, first_nan) + " (" +
                values_at(first_nan) + ")";
    }
    report += line + "\n";
    return outside == 0 && nan_mismatch == 0;
}

/// The exit code: 0 when A equals B within tolerance, 1 when not.
int run_diff(const DiffArgs& args) {
    if (args.a == "-" && args.b == "-") {
        throw InputError("diff: only one of A and B can be - (stdin)");
    }
    const Operand a = load_operand(args.a, "A");
    const Operand b = load_operand(args.b, "B");
    std::string report;
    bool ok = true;
    std::size_t compared = 0;
    if (!a.document && !b.document) {
        ok = compare("", *a.output, *b.output, args, report);
    } else if (!a.document || !b.document) {
        // An array against a document: its "weights" when only they have the array's
        // shape (or the document has nothing else), else its "output".
        const io::Array& arr = a.document ? *b.output : *a.output;
        const Operand& d = a.document ? a : b;
        const bool weights = !d.output || (d.weights && d.weights->shape == arr.shape &&
                                           d.output->shape != arr.shape);
        const std::optional<io::Array>& part = weights ? d.weights : d.output;
        const io::Array& x = a.document ? *part : arr;
        const io::Array& y = a.document ? arr : *part;
        ok = compare(weights ? "weights" : "output", x, y, args, report);
    } else {
        const std::pair<const char*,
                        std::pair<const std::optional<io::Array>*, const std::optional<io::Array>*>>
            parts[] = {{"output", {&a.output, &b.output}}, {"weights", {&a.weights, &b.weights}}};
        for (const auto& [label, pair] : parts) {
            const auto& [x, y] = pair;
            if (x->has_value() && y->has_value()) {
                ok = compare(label, **x, **y, args, report) && ok;
                ++compared;
            } else if (x->has_value() || y->has_value()) {
                report += std::string(label) + ": only in " + (x->has_value() ? "A" : "B") +
                          " (not compared)\n";
            }
        }
        if (compared == 0) {
            throw InputError("diff: " + a.name + " and " + b.name +
                             " have no array in common (output or weights)");
        }
    }
    report += (ok ? "equal" : "different") + std::string(" (rtol ") + g3(args.rtol) + ", atol " +
              g3(args.atol) + ")\n";
    if (!args.quiet) {
        std::cout << report;
        flush_stdout();
    }
    return ok ? 0 : 1;
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

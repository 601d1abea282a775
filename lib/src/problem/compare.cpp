// Two results within tolerance: see attn/problem/compare.hpp.
#include "attn/problem/compare.hpp"

#include "attn/error.hpp"
#include "attn/io/number_text.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <utility>

namespace attn::problem {

namespace {

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

/// The array of a bare file, or a document's output.
const std::optional<io::Array>& output_of(const ResultFile& r) {
    return r.document ? r.output : r.array;
}

} // namespace

ArrayDiff compare_arrays(const io::Array& a, const io::Array& b, const Tolerance& tolerance) {
    ArrayDiff d;
    if (a.shape != b.shape) {
        d.same_shape = false;
        return d;
    }
    constexpr double inf = std::numeric_limits<double>::infinity();
    const std::vector<double>& av = exact_values(a);
    const std::vector<double>& bv = exact_values(b);
    d.count = av.size();
    double worst_excess = 0.0;
    for (std::size_t i = 0; i < d.count; ++i) {
        const double x = av[i];
        const double y = bv[i];
        if (std::isnan(x) || std::isnan(y)) {
            if (!(std::isnan(x) && std::isnan(y)) && d.nan_mismatch++ == 0) {
                d.first_nan = i;
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
        if (err > d.max_abs) {
            d.max_abs = err;
            d.at_abs = i;
        }
        if (rel > d.max_rel) {
            d.max_rel = rel;
            d.at_rel = i;
        }
        const double tol = tolerance.atol + tolerance.rtol * std::fabs(y);
        if (std::isinf(err) || err > tol) {
            ++d.outside;
            const double excess = std::isinf(err) || tol <= 0.0 ? inf : err / tol;
            if (d.outside == 1 || excess > worst_excess) {
                worst_excess = excess;
                d.at_worst = i;
            }
        }
    }
    return d;
}

std::string
describe(const ArrayDiff& d, const io::Array& a, const io::Array& b, std::string_view label) {
    const std::string prefix = label.empty() ? "" : std::string(label) + ": ";
    if (!d.same_shape) {
        return prefix + "shape mismatch: A " + shape_string(a.shape) + ", B " +
               shape_string(b.shape) + "\n";
    }
    const std::vector<double>& av = exact_values(a);
    const std::vector<double>& bv = exact_values(b);
    auto values_at = [&](std::size_t i) {
        return "A " + format_value(av[i]) + ", B " + format_value(bv[i]);
    };
    std::string line = prefix + "shape " + shape_string(a.shape) + ", " + std::to_string(d.count) +
                       (d.count == 1 ? " value" : " values");
    if (d.identical()) {
        return line + ": identical\n";
    }
    line += "; max abs err " + g3(d.max_abs) + " at " + index_string(a.shape, d.at_abs) +
            "; max rel err " + g3(d.max_rel) + " at " + index_string(a.shape, d.at_rel);
    if (d.outside == 0 && d.nan_mismatch == 0) {
        line += "; within tolerance";
    }
    if (d.outside > 0) {
        line += "; " + std::to_string(d.outside) + " outside tolerance, worst at " +
                index_string(a.shape, d.at_worst) + " (" + values_at(d.at_worst) + ")";
    }
    if (d.nan_mismatch > 0) {
        line += "; NaN in only one of them at " + std::to_string(d.nan_mismatch) +
                " position(s), first at " + index_string(a.shape, d.first_nan) + " (" +
                values_at(d.first_nan) + ")";
    }
    return line + "\n";
}

ResultDiff compare_results(const ResultFile& a, const ResultFile& b, const Tolerance& tolerance) {
    ResultDiff out;
    const auto one = [&](std::string_view label, const io::Array& x, const io::Array& y) {
        const ArrayDiff d = compare_arrays(x, y, tolerance);
        out.report += describe(d, x, y, label);
        out.equal = d.within() && out.equal;
    };
    if (!a.document && !b.document) {
        one("", *a.array, *b.array);
    } else if (!a.document || !b.document) {
        // An array against a document: its "weights" when only they have the array's
        // shape (or the document has nothing else), else its "output".
        const io::Array& arr = a.document ? *b.array : *a.array;
        const ResultFile& d = a.document ? a : b;
        const bool weights = !d.output || (d.weights && d.weights->shape == arr.shape &&
                                           d.output->shape != arr.shape);
        const io::Array& part = weights ? *d.weights : *d.output;
        one(weights ? "weights" : "output", a.document ? part : arr, a.document ? arr : part);
    } else {
        std::size_t compared = 0;
        for (const char* label : {"output", "weights"}) {
            const bool is_output = std::string_view(label) == "output";
            const std::optional<io::Array>& x = is_output ? output_of(a) : a.weights;
            const std::optional<io::Array>& y = is_output ? output_of(b) : b.weights;
            if (x && y) {
                one(label, *x, *y);
                ++compared;
            } else if (x || y) {
                out.report +=
                    std::string(label) + ": only in " + (x ? "A" : "B") + " (not compared)\n";
            }
        }
        if (compared == 0) {
            throw InputError("diff: " + a.name + " and " + b.name +
                             " have no array in common (output or weights)");
        }
    }
    out.report += (out.equal ? "equal" : "different") + std::string(" (rtol ") +
                  g3(tolerance.rtol) + ", atol " + g3(tolerance.atol) + ")\n";
    return out;
}

} // namespace attn::problem

// Comparing two results within tolerance: numpy.allclose's rule |a - b| <= atol + rtol·|b|
// (B is the reference), NaN equal to NaN in the same position, in float64 on the values
// exactly as read (an f8 array is never rounded to float32 first). `attn diff` prints
// what these return.
#pragma once

#include "attn/io/array.hpp"
#include "attn/problem/result_read.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attn::problem {

/// allclose's tolerances (numpy's defaults are looser: rtol 1e-5, atol 1e-8).
struct Tolerance {
    double rtol = 1e-5;
    double atol = 1e-6;
};

/// Two arrays compared element by element (positions are flat C-order indices).
struct ArrayDiff {
    bool same_shape = true;
    std::size_t count = 0; ///< elements compared
    double max_abs = 0.0, max_rel = 0.0;
    std::size_t at_abs = 0, at_rel = 0;
    std::size_t outside = 0;      ///< elements outside tolerance (NaN positions aside)
    std::size_t at_worst = 0;     ///< the one furthest outside, relative to its tolerance
    std::size_t nan_mismatch = 0; ///< positions where only one of them is NaN
    std::size_t first_nan = 0;

    /// Equal within tolerance: the same shape, nothing outside, NaN where NaN.
    bool within() const { return same_shape && outside == 0 && nan_mismatch == 0; }
    /// No difference at all.
    bool identical() const { return same_shape && max_abs == 0.0 && nan_mismatch == 0; }
};

/// Compares A against the reference B. Both must hold float64 values (read with
/// io::Precision::f64). An infinite error (inf against a finite value or -inf) is never
/// within tolerance, even where rtol·|B| is itself infinite.
ArrayDiff compare_arrays(const io::Array& a, const io::Array& b, const Tolerance& tolerance);

/// The one-line report of a comparison (with a newline): "LABEL: shape [2, 3], 6 values;
/// max abs err ...", or "...: identical".
std::string
describe(const ArrayDiff& d, const io::Array& a, const io::Array& b, std::string_view label);

/// Two result files compared: arrays as they are; an array against a document with the
/// document's "weights" when only they have the array's shape (or the document has nothing
/// else), else its "output"; two documents part by part (output, weights), a part only
/// one has reported and not compared. Throws InputError when two documents have no array
/// in common.
struct ResultDiff {
    bool equal = true;
    std::string report; ///< one line per part, then "equal (rtol R, atol A)" or "different ..."
};
ResultDiff compare_results(const ResultFile& a, const ResultFile& b, const Tolerance& tolerance);

} // namespace attn::problem

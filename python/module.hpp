// What the files of the Python module share: Python values to the problem document and
// numpy arrays in and out (arrays.cpp), compute (compute.cpp) and the figures (figures.cpp),
// each registered on the module by attn_module.cpp. No rule of the problem lives here: the
// library decodes, checks and solves; these files only translate.
#pragma once

#include "attn/error.hpp"
#include "attn/interruption.hpp"
#include "attn/io/array.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h> // every TU casts std::vector<std::string> alike
#include <string>
#include <utility>

namespace attn::python {

namespace py = pybind11;

/// Whether `obj` is an array to hand over as memory (a numpy array, or anything numpy reads
/// through __array__ or the buffer protocol: torch tensors, ...), not a Python scalar, str,
/// list or dict.
bool is_array_like(py::handle obj);

/// An array-like read as the .npy reader reads a file of the same data (io::decode_npy_values):
/// every dtype NPY holds, float32 (and float64 with Precision::f64). A torch tensor is
/// detached and moved to the CPU first; a non-contiguous array is made C-contiguous by numpy.
/// With `borrow`, a float32 C-contiguous array (after that) with Precision::f32 is not
/// copied: the Array borrows its memory (io::Array::borrowed), keeping the numpy array
/// alive (a problem's arrays: decode_problem reads what it can in place and copies the
/// rest). `name` (the field) prefixes every message. Throws InputError.
io::Array
array_in(py::handle obj, const std::string& name, io::Precision precision, bool borrow = false);

/// A Python value as JSON, the problem document's form: None, bool, int, float (non-finite
/// as "inf"/"-inf"/"nan"), str, lists, tuples and mappings of them; numpy scalars and
/// array-likes by their values (tolist()). `name` prefixes the message of a value JSON
/// cannot hold. Throws InputError.
nlohmann::json json_of(py::handle obj, const std::string& name);

/// A result array as numpy, without a copy: its float64 values (precision f64) or its
/// float32 ones move into a capsule that the array owns.
py::array array_out(io::Array&& a);

/// A list of strings as a Python list, or None.
py::object string_list(const std::optional<std::vector<std::string>>& v);

/// progress= as a progress(done, total) callable or None: True is the package's own bar
/// counting `unit`s (attn/_progress.py), False and None are None. Throws InputError for
/// anything else that is not callable.
py::object progress_callable(const py::object& progress, const char* unit);

/// Ctrl-C in a long call (interrupt.cpp): a detail::InterruptionScope check that runs
/// Python's signal handlers (PyErr_CheckSignals, with the GIL) and keeps the exception a
/// handler raised (KeyboardInterrupt), for raise_stopped() to raise again.
class SignalCheck {
  public:
    /// Whether a signal handler raised (then the run stops at its next interruption point).
    bool operator()();
    /// Raises the kept exception (the GIL held). Call only after operator() returned true.
    [[noreturn]] void raise_stopped();

  private:
    std::optional<py::error_already_set> raised_;
};

/// fn() with the GIL released and Ctrl-C watched (every 50 ms, where the library can stop:
/// attn/interruption.hpp): KeyboardInterrupt within a fraction of a second, and nothing
/// written that was not whole (outputs are written atomically after the run).
template <class F> auto released(F&& fn) {
    SignalCheck check;
    try {
        const detail::InterruptionScope scope([&check] { return check(); });
        const py::gil_scoped_release unlocked;
        return std::forward<F>(fn)();
    } catch (const Interrupted&) {
        check.raise_stopped();
    }
}

/// Registers attn.compute and attn.Result (compute.cpp).
void register_compute(py::module_& m);
/// Registers attn.census and attn.Census (census.cpp).
void register_census(py::module_& m);
/// Registers attn.tokenize (tokenize.cpp).
void register_tokenize(py::module_& m);
/// Registers attn.heatmap, attn.view, attn.model_view and attn.Figure (figures.cpp).
void register_figures(py::module_& m);
/// Registers attn.compare (compare.cpp).
void register_compare(py::module_& m);

} // namespace attn::python

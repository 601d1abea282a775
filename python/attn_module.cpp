// The compiled module attn._attn, which the package `attn` re-exports (attn/__init__.py):
// attn.compute, the figures (attn.heatmap, attn.view, attn.model_view) and attn.InputError,
// over the same library as the CLI. Errors keep the CLI's message (what() without the
// "attn: error: " prefix).
#include "attn/error.hpp"
#include "module.hpp"

#include <new>

PYBIND11_MODULE(_attn, m) {
    namespace py = pybind11;
    m.doc() = "attn: attention computed and drawn by the attn library (the engine of the `attn` "
              "command line), numpy arrays in and out.\n\n"
              "attn.compute(...) -> attn.Result; attn.heatmap(...), attn.view(...), "
              "attn.model_view(...) -> attn.Figure (shown inline by Jupyter).";
    m.attr("__version__") = ATTN_VERSION;
    // InputError: the input cannot be used as given (the CLI's exit 2), a ValueError.
    static py::exception<attn::InputError> input_error(m, "InputError", PyExc_ValueError);
    input_error.doc() = "Bad input (the CLI's exit 2): the message is the CLI's error line.";
    // By value: pybind11's translator is a void(*)(std::exception_ptr).
    py::register_exception_translator(
        [](std::exception_ptr p) { // NOLINT(performance-unnecessary-value-param)
            try {
                if (p) {
                    std::rethrow_exception(p);
                }
            } catch (const attn::InputError& e) {
                input_error(e.what());
            } catch (const attn::SystemError& e) {
                // The environment failed (a write, the disk): the CLI's exit 1.
                PyErr_SetString(PyExc_OSError, e.what());
            }
        });
    attn::python::register_compute(m);
    attn::python::register_figures(m);
    attn::python::register_tokenize(m);
    attn::python::register_census(m);
    attn::python::register_compare(m);
}

// progress= of attn.compute, attn.run_model and attn.census: None, a callable, or True for the
// package's own bar (attn/_progress.py: tqdm when installed, else one line of text).
#include "attn/error.hpp"
#include "module.hpp"

namespace attn::python {

py::object progress_callable(const py::object& progress, const char* unit) {
    if (progress.is_none()) {
        return progress;
    }
    if (py::isinstance<py::bool_>(progress)) {
        return progress.cast<bool>() ? py::module_::import("attn._progress").attr("bar")(unit)
                                     : py::none();
    }
    if (!PyCallable_Check(progress.ptr())) {
        throw InputError("progress: expected None, True (a progress bar) or a callable "
                         "progress(done, total), got " +
                         std::string(py::str(py::type::of(progress).attr("__name__"))));
    }
    return progress;
}

} // namespace attn::python

// Ctrl-C in the module's long calls: the check that detail::InterruptionScope runs on the
// calling thread, and the KeyboardInterrupt it raises once the run has stopped.
#include "module.hpp"

namespace attn::python {

bool SignalCheck::operator()() {
    const py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() == 0) {
        return false;
    }
    raised_.emplace(); // fetches the handler's exception (KeyboardInterrupt for SIGINT)
    return true;
}

void SignalCheck::raise_stopped() {
    if (!raised_) {
        throw Interrupted();
    }
    throw *raised_;
}

} // namespace attn::python

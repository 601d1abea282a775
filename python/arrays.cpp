// Python values into the problem document (JSON and arrays handed over as memory) and
// result arrays out to numpy, the module's edge. Arrays are read by the library's NPY
// decoder (io::decode_npy_values), so every dtype reads as a .npy file of the same data does.
#include "attn/error.hpp"
#include "attn/io/npy.hpp"
#include "module.hpp"

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace attn::python {

using nlohmann::json;

bool is_array_like(py::handle obj) {
    if (py::isinstance<py::str>(obj) || py::isinstance<py::bytes>(obj) ||
        py::isinstance<py::bool_>(obj) || py::isinstance<py::int_>(obj) ||
        py::isinstance<py::float_>(obj) || py::isinstance<py::list>(obj) ||
        py::isinstance<py::tuple>(obj) || py::isinstance<py::dict>(obj) || obj.is_none()) {
        return false;
    }
    return py::isinstance<py::array>(obj) || py::hasattr(obj, "__array__") ||
           PyObject_CheckBuffer(obj.ptr()) != 0;
}

namespace {

/// A torch tensor as numpy reads it: detached from autograd and on the CPU (no copy when it
/// already is). Anything else as it is.
py::object plain(py::handle obj) {
    py::object o = py::reinterpret_borrow<py::object>(obj);
    if (py::hasattr(o, "detach") && py::hasattr(o, "cpu") && py::hasattr(o, "numpy")) {
        o = o.attr("detach")().attr("cpu")();
    }
    return o;
}

} // namespace

io::Array array_in(py::handle obj, const std::string& name, io::Precision precision, bool borrow) {
    // C order, as numpy gives it: the same array (no copy) when it already is one.
    py::array a;
    try {
        a = py::module_::import("numpy").attr("asarray")(plain(obj), py::arg("order") = "C");
    } catch (py::error_already_set& e) {
        throw InputError(name + ": cannot be read as an array: " + e.what());
    }
    const std::string descr = py::str(a.dtype().attr("str"));
    const std::vector<std::size_t> shape(a.shape(), a.shape() + a.ndim());
    if (borrow && precision == io::Precision::f32 && descr == "<f4" &&
        (a.flags() & py::array::c_style) != 0 &&
        reinterpret_cast<std::uintptr_t>(a.data()) % alignof(float) == 0) {
        // float32 in C order: read in place. The numpy array stays alive as long as the
        // library holds the pointer; the last holder lets go of it under the GIL.
        io::Array out;
        out.shape = shape;
        out.dtype = "float32";
        auto* owner = new py::object(a);
        out.borrowed = std::shared_ptr<const float>(static_cast<const float*>(a.data()),
                                                    [owner](const float*) {
                                                        const py::gil_scoped_acquire gil;
                                                        delete owner;
                                                    });
        return out;
    }
    const std::span<const std::uint8_t> payload(static_cast<const std::uint8_t*>(a.data()),
                                                static_cast<std::size_t>(a.nbytes()));
    return io::decode_npy_values(payload, descr, shape, name, precision);
}

json json_of(py::handle obj, const std::string& name) {
    if (obj.is_none()) {
        return nullptr;
    }
    if (py::isinstance<py::bool_>(obj)) {
        return obj.cast<bool>();
    }
    if (py::isinstance<py::int_>(obj)) {
        try {
            const auto i = obj.cast<std::int64_t>();
            if (i >= 0) { // as a JSON parser reads a non-negative literal: unsigned
                return static_cast<std::uint64_t>(i);
            }
            return i;
        } catch (const py::cast_error&) {
            throw InputError(name + ": the integer " + std::string(py::str(obj)) +
                             " is out of range");
        }
    }
    if (py::isinstance<py::float_>(obj)) {
        const double x = obj.cast<double>();
        if (std::isnan(x)) {
            return "nan";
        }
        if (std::isinf(x)) {
            return x > 0 ? "inf" : "-inf";
        }
        return x;
    }
    if (py::isinstance<py::str>(obj)) {
        return obj.cast<std::string>();
    }
    if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
        json out = json::array();
        for (const py::handle item : obj) {
            out.push_back(json_of(item, name));
        }
        return out;
    }
    if (py::isinstance<py::dict>(obj) || py::hasattr(obj, "items")) {
        json out = json::object();
        for (const py::handle item : obj.attr("items")()) {
            const py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
            if (!py::isinstance<py::str>(kv[0])) {
                throw InputError(name + ": expected string keys, got " +
                                 std::string(py::str(kv[0].get_type().attr("__name__"))));
            }
            const std::string key = kv[0].cast<std::string>();
            out[key] = json_of(kv[1], name + "." + key);
        }
        return out;
    }
    if (py::hasattr(obj, "tolist")) { // numpy scalars and arrays, torch tensors
        return json_of(plain(obj).attr("tolist")(), name);
    }
    throw InputError(name + ": cannot read a Python " +
                     std::string(py::str(obj.get_type().attr("__name__"))));
}

namespace {

/// A numpy array of `shape` over a vector that a capsule now owns: no copy.
template <class T> py::array owned_array(std::vector<T>&& values, std::vector<std::size_t> shape) {
    auto* held = new std::vector<T>(std::move(values));
    const py::capsule owner(held, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    std::vector<py::ssize_t> dims(shape.begin(), shape.end());
    return py::array_t<T>(dims, held->data(), owner);
}

} // namespace

py::array array_out(io::Array&& a) {
    if (!a.values64.empty() || a.dtype == "float64") {
        return owned_array(std::move(a.values64), std::move(a.shape));
    }
    return owned_array(std::move(a.values), std::move(a.shape));
}

py::object string_list(const std::optional<std::vector<std::string>>& v) {
    if (!v) {
        return py::none();
    }
    return py::cast(*v);
}

} // namespace attn::python

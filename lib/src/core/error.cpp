// Message builders for attn's exception types: every shape message has one form,
// "what: expected shape [..], got [..]".
#include "attn/error.hpp"

#include <sstream>

namespace attn {

std::string shape_string(const std::vector<std::size_t>& shape) {
    std::ostringstream out;
    out << '[';
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) {
            out << ", ";
        }
        if (shape[i] == kAnyDim) {
            out << '*';
        } else {
            out << shape[i];
        }
    }
    out << ']';
    return out.str();
}

InputError InputError::shape(std::string_view what,
                             const std::vector<std::size_t>& want,
                             const std::vector<std::size_t>& got) {
    return InputError(std::string(what) + ": expected shape " + shape_string(want) + ", got " +
                      shape_string(got));
}

InputError InputError::at(const std::filesystem::path& file, std::string_view detail) {
    return InputError(file.string() + ": " + std::string(detail));
}

} // namespace attn

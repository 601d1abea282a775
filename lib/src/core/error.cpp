// Message builders for attn's exception types: one form per rule, e.g. every shape
// message is "what: expected shape [..], got [..]".
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

InputError InputError::rank(std::string_view what,
                            std::size_t rank,
                            std::string_view form,
                            const std::vector<std::size_t>& got) {
    return InputError(std::string(what) + ": expected a rank-" + std::to_string(rank) + " " +
                      std::string(form) + ", got shape " + shape_string(got));
}

InputError InputError::window(std::string_view what, std::string_view form, std::string_view got) {
    return InputError(std::string(what) + ": expected " + std::string(form) +
                      ", integers >= -1 (-1 = unbounded), got " + std::string(got));
}

std::string fully_masked_text(std::string_view rows, std::string_view note) {
    return std::string(rows) + " can see no key (fully masked" +
           (note.empty() ? "" : "; " + std::string(note)) +
           "): their weights are zeros and their attention output is zeros";
}

} // namespace attn

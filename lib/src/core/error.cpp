// Message builders for attn's exception types: one form per rule, e.g. every shape
// message is "what: expected shape [..], got [..]".
#include "attn/error.hpp"

#include <sstream>
#include <system_error>

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

std::string option_name(std::string_view field) {
    return kOptionMark + std::string(field) + kOptionMark;
}

std::string spell_options(std::string_view marked,
                          const std::function<std::string(std::string_view)>& spell) {
    std::string out;
    out.reserve(marked.size());
    std::size_t at = 0;
    for (;;) {
        const std::size_t open = marked.find(kOptionMark, at);
        const std::size_t close =
            open == std::string_view::npos ? open : marked.find(kOptionMark, open + 1);
        if (close == std::string_view::npos) {
            out += marked.substr(at); // no (complete) mark left: the rest as it is
            return out;
        }
        out += marked.substr(at, open - at);
        const std::string_view field = marked.substr(open + 1, close - open - 1);
        out += spell ? spell(field) : std::string(field);
        at = close + 1;
    }
}

InputError::InputError(const std::string& message)
    : Error(spell_options(message)), marked_(std::make_shared<const std::string>(message)) {}

InputError
InputError::field(std::string_view what, std::string_view expected, std::string_view got) {
    return InputError(std::string(what) + ": expected " + std::string(expected) +
                      (got.empty() ? std::string() : ", got " + std::string(got)));
}

InputError InputError::shape(std::string_view what,
                             const std::vector<std::size_t>& want,
                             const std::vector<std::size_t>& got) {
    return field(what, "shape " + shape_string(want), shape_string(got));
}

InputError InputError::at(const std::filesystem::path& file, std::string_view detail) {
    return InputError(file.string() + ": " + std::string(detail));
}

InputError InputError::rank(std::string_view what,
                            std::size_t rank,
                            std::string_view form,
                            const std::vector<std::size_t>& got) {
    return field(what,
                 "a rank-" + std::to_string(rank) + " " + std::string(form),
                 "shape " + shape_string(got));
}

InputError InputError::window(std::string_view what, std::string_view form, std::string_view got) {
    return field(what, std::string(form) + ", integers >= -1 (-1 = unbounded)", got);
}

InputError InputError::string_list(std::string_view what, std::string_view got) {
    return field(what, "a list of strings", got);
}

InputError
InputError::string_list_item(std::string_view what, std::size_t index, std::string_view got) {
    return field(std::string(what) + ": [" + std::to_string(index) + "]", "a string", got);
}

InputError InputError::label_count(std::string_view what,
                                   std::size_t want,
                                   std::size_t got,
                                   std::string_view note) {
    return field(what,
                 std::to_string(want) + " tokens" +
                     (note.empty() ? std::string() : " (" + std::string(note) + ")"),
                 std::to_string(got));
}

InputError InputError::cannot_read(std::string_view file, int err) {
    return InputError(std::string(file) + ": cannot read: " + std::system_category().message(err));
}

InputError InputError::trailing_bytes(std::string_view what,
                                      std::uint64_t header_bytes,
                                      std::uint64_t file_bytes) {
    return InputError(std::string(what) + ": trailing bytes: header says " +
                      std::to_string(header_bytes) + " bytes of data, file has " +
                      std::to_string(file_bytes));
}

std::string fully_masked_text(std::string_view rows, std::string_view note) {
    return std::string(rows) + " can see no key (fully masked" +
           (note.empty() ? "" : "; " + std::string(note)) +
           "): their weights are zeros and their attention output is zeros";
}

} // namespace attn

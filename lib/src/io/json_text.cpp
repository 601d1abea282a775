// JSON text into a tree: the size and depth limits first, then nlohmann's parser, its
// errors cut to one line naming the input.
#include "attn/io/json_text.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/limits.hpp"

#include <string>

namespace attn::io {

using nlohmann::json;

nlohmann::json parse_json_text(std::string_view text, std::string_view name) {
    const std::uint64_t limit = memory_limit();
    if (text.size() > limit / 16) {
        throw InputError(std::string(name) + ": JSON text of " + format_size(text.size()) +
                         " may need up to 16 times that to parse, more than the memory limit "
                         "of " +
                         format_size(limit) + " (--max-memory); store large arrays as .npy");
    }
    check_json_depth(text, name);
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        std::string what = e.what();
        // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
        const auto pos = what.find("] ");
        if (pos != std::string::npos) {
            what = what.substr(pos + 2);
        }
        throw InputError(std::string(name) + ": invalid JSON: " + message_text(what, 300));
    } catch (const json::exception& e) {
        // Not a syntax error but still the text's fault, e.g. out_of_range.406 "number
        // overflow parsing '1e400'" (beyond double range).
        std::string what = e.what();
        const auto pos = what.find("] ");
        if (pos != std::string::npos) {
            what = what.substr(pos + 2);
        }
        throw InputError(std::string(name) + ": invalid JSON: " + message_text(what, 300));
    }
}

} // namespace attn::io

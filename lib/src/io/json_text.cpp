// The guards of JSON text before nlohmann parses it (nesting depth, size against the
// memory limit) and its parse errors as one-line messages.
#include "attn/io/json_text.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/number_text.hpp"

#include <nlohmann/json.hpp>

namespace attn::io {
namespace {

/// JSON text of n bytes may take up to this many times n to parse (nlohmann's values are
/// 24 bytes with JSON_DIAGNOSTICS, plus vectors): refused beyond memory_limit().
constexpr std::uint64_t json_parse_factor = 16;

/// "PATH: invalid JSON: byte N: DETAIL" from nlohmann's parse_error.
[[noreturn]] void throw_json_error(const nlohmann::json::parse_error& e, const std::string& shown) {
    // what(): "[json.exception.parse_error.101] parse error at line 1, column 2: DETAIL"
    std::string detail = e.what();
    const std::size_t at = detail.find("parse error");
    if (at != std::string::npos) {
        const std::size_t colon = detail.find(": ", at);
        if (colon != std::string::npos) {
            detail = detail.substr(colon + 2);
        }
    }
    throw InputError(shown + ": invalid JSON: byte " + std::to_string(e.byte) + ": " +
                     message_text(detail, 300));
}

} // namespace

void check_json_depth(std::string_view text, std::string_view name, std::size_t max_depth) {
    std::size_t depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i; // the escaped character, whatever it is
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                throw InputError(std::string(name) + ": JSON nested deeper than " +
                                 std::to_string(max_depth) + " levels (at byte " +
                                 std::to_string(i) + ")");
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
}

void check_json_fits(std::size_t text_bytes, std::string_view name) {
    const std::uint64_t limit = memory_limit();
    if (text_bytes > limit / json_parse_factor) {
        throw InputError(std::string(name) + ": JSON text of " + format_size(text_bytes) +
                         " may need up to " + std::to_string(json_parse_factor) +
                         " times that to parse, more than the memory limit of " +
                         format_size(limit) + " (--max-memory); store large arrays as .npy");
    }
}

nlohmann::json detail::parse_json_file_text(std::string_view text, const std::string& shown) {
    check_json_fits(text.size(), shown);
    check_json_depth(text, shown);
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw_json_error(e, shown);
    } catch (const nlohmann::json::exception& e) {
        // Not a syntax error but still the file's fault, e.g. out_of_range.406 "number
        // overflow parsing '1e400'" (beyond double range).
        std::string detail = e.what();
        const std::size_t at = detail.find("] ");
        if (at != std::string::npos) {
            detail = detail.substr(at + 2);
        }
        throw InputError(shown + ": invalid JSON: " + message_text(detail, 300));
    }
}

nlohmann::json parse_json_text(std::string_view text, std::string_view name) {
    check_json_fits(text.size(), name);
    check_json_depth(text, name);
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 2: ...";
        // not only syntax errors but also out_of_range.406 "number overflow parsing
        // '1e400'" (beyond double range) are the text's fault.
        std::string what = e.what();
        const auto pos = what.find("] ");
        if (pos != std::string::npos) {
            what = what.substr(pos + 2);
        }
        throw InputError(std::string(name) + ": invalid JSON: " + message_text(what, 300));
    }
}

std::string value_text(const nlohmann::json& value) {
    const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return std::string(value.type_name()) + " " + message_text(text, 60);
}

} // namespace attn::io

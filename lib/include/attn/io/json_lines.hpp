// JSON Lines, the format of `attn batch`: the parser of one line (a fast path for the
// common, mostly numeric document, the full parser otherwise) and the error line
// {"id": .., "error": ..} that stands for a line that failed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attn::io {

/// The fast path alone: a strict recursive parser of the common subset of JSON (no string
/// escapes, ASCII strings only, numbers within double range, nesting at most
/// max_fast_json_depth levels) that builds the same document as parse_json_text. Returns
/// false on anything else (including every syntax error), leaving `out` unspecified: the
/// caller then parses with parse_json_text, which decides and words the error.
bool parse_json_fast(std::string_view text, nlohmann::json& out);

/// Nesting beyond this (arrays and objects) makes parse_json_fast give up.
inline constexpr int max_fast_json_depth = 32;

/// One line of a JSON Lines input, parsed: parse_json_fast when it applies, else
/// parse_json_text(line, "line N"), whose errors read "line N: invalid JSON: ...".
/// Throws InputError.
nlohmann::json parse_json_line(std::string_view line, std::uint64_t line_no);

/// A JSON value as one line of text (invalid UTF-8 replaced, never thrown on).
std::string dump_json_line(const nlohmann::json& j);

/// The line that stands for a failed input line: {"id":ID,"error":"MESSAGE"} (ID null
/// when the line showed none), without its '\n'.
std::string json_error_line(const nlohmann::json& id, const std::string& message);

/// True for a line of spaces, tabs and '\r' only: JSON Lines skips it.
bool blank_line(std::string_view line);

} // namespace attn::io

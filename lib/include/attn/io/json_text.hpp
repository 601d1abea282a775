// The guards every JSON text passes before it is parsed, and JSON text (a problem document,
// a params file, a batch line) parsed into a tree with one-line errors.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attn::io {

/// JSON nested deeper than this (arrays and objects) is refused before it is parsed:
/// nlohmann's copies, comparisons and dumps recurse once per level, so a hostile
/// "[[[[...]]]]" of a million levels would overflow the stack.
inline constexpr std::size_t max_json_depth = 128;

/// Throws InputError("NAME: JSON nested deeper than 128 levels") when the text nests
/// arrays and objects deeper than `max_depth`. A linear scan that skips strings; it does
/// not validate the text (the parser does that afterwards).
void check_json_depth(std::string_view text,
                      std::string_view name,
                      std::size_t max_depth = max_json_depth);

/// Parses JSON text (a problem document) with one-line errors: "NAME: invalid JSON: ...".
/// Text nested deeper than max_json_depth is refused before parsing (check_json_depth).
nlohmann::json parse_json_text(std::string_view text, std::string_view name);

/// A JSON value as a message shows what was found: its type and its text, shortened to 60
/// characters ("string \"abc\"", "number -1", "array [1,2]").
std::string value_text(const nlohmann::json& value);

} // namespace attn::io

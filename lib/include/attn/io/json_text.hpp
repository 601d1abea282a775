// The guards every JSON text passes before it is parsed.
#pragma once

#include <cstddef>
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

} // namespace attn::io

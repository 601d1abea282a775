// JSON text (a problem document, a params file, a batch line) parsed into a tree, with
// one-line errors and the depth and memory limits checked before the parser runs.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace attn::io {

/// Parses JSON text (a problem document) with one-line errors: "NAME: invalid JSON: ...".
/// Text nested deeper than max_json_depth is refused before parsing (check_json_depth).
nlohmann::json parse_json_text(std::string_view text, std::string_view name);

} // namespace attn::io

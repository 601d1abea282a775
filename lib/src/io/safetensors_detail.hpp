// Shared by the safetensors reader and the checkpoint layouts.
#pragma once

#include "attn/io/number_text.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attn::io::detail {

/// A name from the file, quoted for a one-line message.
inline std::string quote_name(std::string_view s) {
    return "'" + message_text(s, 120) + "'";
}

/// Parses JSON header text (a safetensors header, a shard index), refusing duplicate keys
/// in any object (nlohmann keeps the last one silently; the reference implementation
/// refuses them). Throws InputError("NAME: invalid JSON header: ...", "NAME: header has
/// the key 'K' twice").
nlohmann::json parse_header_json(std::string_view text, const std::string& name);

} // namespace attn::io::detail

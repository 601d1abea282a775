// Shared by the safetensors reader and the checkpoint layouts.
#pragma once

#include "attn/io/number_text.hpp"

#include <string>
#include <string_view>

namespace attn::io::detail {

/// A name from the file, quoted for a one-line message.
inline std::string quote_name(std::string_view s) {
    return "'" + message_text(s, 120) + "'";
}

} // namespace attn::io::detail

// Shared by the model readers (safetensors, GGUF, checkpoint layouts): strict JSON headers.
#pragma once

#include "attn/io/detail.hpp"
#include "attn/io/number_text.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attn::model::detail {

// The io readers' helpers (quote_name, checked sizes, raw reads), under the model's own
// detail namespace.
using namespace io::detail;

/// Parses JSON header text (a safetensors header, a shard index), refusing duplicate keys
/// in any object (nlohmann keeps the last one silently; the reference implementation
/// refuses them). Throws InputError("NAME: invalid JSON header: ...", "NAME: header has
/// the key 'K' twice").
nlohmann::json parse_header_json(std::string_view text, const std::string& name);

} // namespace attn::model::detail

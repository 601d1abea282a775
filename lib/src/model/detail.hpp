// Shared by the model readers (safetensors, GGUF, checkpoint layouts): strict JSON headers.
#pragma once

#include "attn/io/detail.hpp"
#include "attn/io/number_text.hpp"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
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

/// config.json's boolean `key`: `fallback` when absent or null. `file` prefixes the message
/// for a value that is not true or false.
bool flag(const nlohmann::json& doc,
          const std::string& key,
          bool fallback,
          const std::string& file);

/// The sliding window config.json gives a model of `type` (each query sees its last N
/// keys), as its transformers config class reads it: Mistral's sliding_window (4096 when
/// absent, none when null), Phi-3's, Starcoder2's and Mixtral's (none when absent), Qwen2's
/// and Qwen3's only with use_sliding_window, Gemma 2's and 3's (4096 when absent). Nothing
/// for other types. `file` prefixes the message for a value that is not a positive integer.
std::optional<std::size_t>
config_sliding_window(const nlohmann::json& doc, const std::string& type, const std::string& file);

} // namespace attn::model::detail

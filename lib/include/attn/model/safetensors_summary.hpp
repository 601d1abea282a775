// What `attn info` (and any front end) tells of a .safetensors checkpoint, as data: every
// tensor's name, dtype, shape and size, the attention layers `params` recognises, the
// metadata, and the model view's summary. As gguf_summary (gguf_model.hpp) for GGUF.
#pragma once

#include "attn/model/safetensors.hpp"

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace attn::model {

/// {"file", "format": "safetensors", "tensors": [{"name", "dtype", "shape", "bytes"}],
/// "layers": [{"layout", "prefix"}] (sorted), "metadata" (when present), "model" (when a
/// layer is recognised: {"layout", "layers", "config" (the config.json beside it, if any),
/// "heads", "kv_heads", "head_dim" (null when unknown), "norm" ("layer_norm", "rms_norm"
/// or null), "rope"}). Reads config.json beside `file` when there is one.
nlohmann::json safetensors_summary(const std::string& file, const SafetensorsHeader& h);

} // namespace attn::model

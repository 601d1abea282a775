// A checkpoint's summary for `attn info`: see attn/model/safetensors_summary.hpp.
#include "attn/model/safetensors_summary.hpp"

#include "attn/error.hpp"
#include "attn/model/checkpoint_layers.hpp"
#include "attn/model/checkpoint_model.hpp"
#include "attn/model/hf_config.hpp"

#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace attn::model {

namespace {

/// The (layout, prefix) pairs a checkpoint's names hold (attention_prefixes), sorted.
std::set<std::pair<std::string, std::string>>
recognised_layers(const std::vector<SafetensorsEntry>& tensors) {
    std::vector<std::string> names;
    names.reserve(tensors.size());
    for (const SafetensorsEntry& t : tensors) {
        names.push_back(t.name);
    }
    std::set<std::pair<std::string, std::string>> out;
    for (const auto& [layout, prefix] : attention_prefixes(names)) {
        out.insert({std::string(layout_name(layout)), prefix});
    }
    return out;
}

/// What the model view needs of a checkpoint: its main layout (the one with the most
/// layers), the layer count, heads (config.json), kv heads, head dim, norm and RoPE.
nlohmann::json model_summary(const std::string& file, const SafetensorsHeader& h) {
    const std::optional<CheckpointLayers> layers = checkpoint_layers(h);
    ATTN_ASSERT(layers.has_value());
    const ParamsLayout layout = layers->layout;
    nlohmann::json m = {{"layout", layout_name(layout)}, {"layers", layers->prefixes.size()}};
    std::optional<HfConfig> config;
    if (const auto path = hf_config_beside(file)) {
        config = read_hf_config(*path);
        m["config"] = path->string();
    }
    const auto value = [](const auto& v) {
        return v ? nlohmann::json(v->value) : nlohmann::json();
    };
    m["heads"] = config ? value(config->num_heads) : nlohmann::json();
    m["kv_heads"] = config && config->num_kv_heads ? value(config->num_kv_heads) : m["heads"];
    const std::optional<std::size_t> head_dim = config ? hf_head_dim(*config) : std::nullopt;
    m["head_dim"] = head_dim ? nlohmann::json(*head_dim) : nlohmann::json();
    const auto kind = layout_norm_kind(layout);
    const bool has_norm =
        kind && h.find(block_prefix(layers->prefixes.front()) +
                       std::string(layout_norm_name(layout)) + ".weight") != nullptr;
    m["norm"] = !has_norm
                    ? nlohmann::json()
                    : nlohmann::json(*kind == NormKind::layer_norm ? "layer_norm" : "rms_norm");
    m["rope"] = layout_uses_rope(layout);
    return m;
}

} // namespace

nlohmann::json safetensors_summary(const std::string& file, const SafetensorsHeader& h) {
    nlohmann::json j = {{"file", file}, {"format", "safetensors"}};
    j["tensors"] = nlohmann::json::array();
    for (const SafetensorsEntry& t : h.tensors) {
        j["tensors"].push_back(
            {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"bytes", t.end - t.begin}});
    }
    const auto layers = recognised_layers(h.tensors);
    j["layers"] = nlohmann::json::array();
    for (const auto& [layout, prefix] : layers) {
        j["layers"].push_back({{"layout", layout}, {"prefix", prefix}});
    }
    if (!h.metadata.empty()) {
        j["metadata"] = h.metadata;
    }
    if (!layers.empty()) {
        j["model"] = model_summary(file, h);
    }
    return j;
}

} // namespace attn::model

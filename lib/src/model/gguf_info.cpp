// What `attn info` shows of a GGUF file, as JSON (the app prints it as text or as is):
// the {arch}.* hyper-parameters, the tokenizer in short, the other metadata (long arrays
// summarised), the tensor table and the Hugging Face config the model maps to.
#include "attn/error.hpp"
#include "attn/model/gguf_model.hpp"

#include <bit>

namespace attn::model {

nlohmann::json gguf_value_json(const GgufValue& v, std::size_t max_items) {
    switch (v.type) {
    case GgufType::string:
        return v.text;
    case GgufType::boolean:
        return v.bits != 0;
    case GgufType::f32:
    case GgufType::f64:
        return *v.as_decimal();
    case GgufType::array: {
        if (v.count > max_items) {
            return {{"array", gguf_type_name(v.element)}, {"count", v.count}};
        }
        nlohmann::json out = nlohmann::json::array();
        for (std::size_t i = 0; i < v.count; ++i) {
            if (v.element == GgufType::string) {
                out.push_back(v.strings[i]);
            } else if (v.element == GgufType::array) {
                out.push_back(gguf_value_json(v.items[i], max_items));
            } else {
                out.push_back(gguf_value_json(v.element_at(i), max_items));
            }
        }
        return out;
    }
    default:
        break;
    }
    if (const auto u = v.as_uint()) {
        return *u;
    }
    return static_cast<std::int64_t>(*v.as_double()); // a negative integer: exact in int64
}

nlohmann::json gguf_summary(const GgufHeader& h, std::string_view name, const GgufFile* data) {
    nlohmann::json j = {{"format", "gguf"}, {"version", h.version}, {"alignment", h.alignment}};
    const GgufValue* arch = h.find_value("general.architecture");
    const std::string arch_name =
        arch != nullptr && arch->type == GgufType::string ? arch->text : std::string();
    const std::string prefix = arch_name.empty() ? std::string() : arch_name + ".";
    j["architecture"] = arch_name.empty() ? nlohmann::json() : nlohmann::json(arch_name);
    nlohmann::json hyper = nlohmann::json::object();
    nlohmann::json tokenizer = nlohmann::json::object();
    nlohmann::json other = nlohmann::json::object();
    constexpr std::string_view tok = "tokenizer.ggml.";
    for (const auto& [key, value] : h.metadata) {
        if (!prefix.empty() && key.starts_with(prefix)) {
            hyper[key] = gguf_value_json(value, 16);
        } else if (key.starts_with(tok)) {
            const std::string k = key.substr(tok.size());
            tokenizer[k] = value.type == GgufType::array ? nlohmann::json(value.count)
                                                         : gguf_value_json(value, 16);
        } else if (key != "general.architecture") {
            other[key] = gguf_value_json(value, 16);
        }
    }
    j["hyperparameters"] = hyper;
    j["tokenizer"] = tokenizer;
    j["metadata"] = other;
    j["tensors"] = nlohmann::json::array();
    std::uint64_t total = 0;
    for (const GgufTensor& t : h.tensors) {
        const GgmlTypeTraits* traits = ggml_type_traits(t.type);
        j["tensors"].push_back(
            {{"name", t.name}, {"type", traits->name}, {"shape", t.shape}, {"bytes", t.bytes}});
        total += t.bytes;
    }
    j["data_bytes"] = total;
    try {
        j["config"] = gguf_hf_config(h, name, data);
    } catch (const InputError& e) {
        j["config_error"] = e.what();
    }
    return j;
}

} // namespace attn::model

// config.json: each needed value looked up under its aliases, type-checked, and stored
// with the key it came from. Keys we do not need are never looked at.
#include "attn/model/hf_config.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_text.hpp"
#include "model/detail.hpp"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

/// A positive integer (JSON integer type; 12.0 is refused like "12").
std::size_t positive_integer(const json& j, const std::string& where) {
    // nlohmann stores non-negative integers as unsigned, negative ones as signed.
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > 0) {
        return static_cast<std::size_t>(j.get<std::uint64_t>());
    }
    throw InputError(where + ": expected a positive integer, got " + io::value_text(j));
}

/// A finite number (integer or not).
double finite_number(const json& j, const std::string& where) {
    if (j.is_number()) {
        const auto v = j.get<double>();
        if (std::isfinite(v)) {
            return v;
        }
    }
    throw InputError(where + ": expected a finite number, got " + io::value_text(j));
}

/// The first non-null of `keys` in `doc`; aliases that are both present must agree.
template <class T, class Read>
std::optional<HfValue<T>> lookup(const json& doc,
                                 std::initializer_list<const char*> keys,
                                 const std::string& prefix,
                                 const std::string& file,
                                 Read read) {
    std::optional<HfValue<T>> found;
    const json* first = nullptr;
    for (const char* key : keys) {
        const auto it = doc.find(key);
        if (it == doc.end() || it->is_null()) {
            continue;
        }
        const std::string name = prefix + key;
        T value = read(*it, file + ": " + name);
        if (!found) {
            found = HfValue<T>{value, name};
            first = &*it;
        } else if (!(found->value == value)) {
            throw InputError(file + ": " + found->key + " and " + name + " disagree (" +
                             io::value_text(*first) + " vs " + io::value_text(*it) + ")");
        }
    }
    return found;
}

double positive_number(const json& j, const std::string& where) {
    const double v = finite_number(j, where);
    if (v <= 0.0) {
        throw InputError(where + ": expected a number > 0, got " + io::value_text(j));
    }
    return v;
}

} // namespace

RopeScaling parse_rope_scaling(const json& j, std::string_view where_in) {
    const std::string where(where_in);
    if (!j.is_object()) {
        throw InputError(where + ": expected an object, got " + io::value_text(j));
    }
    std::optional<std::string> type;
    for (const char* key : {"rope_type", "type"}) {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) {
            continue;
        }
        if (!it->is_string()) {
            throw InputError(where + "." + key + ": expected a string, got " + io::value_text(*it));
        }
        if (type && *type != it->get<std::string>()) {
            throw InputError(where + ": rope_type and type disagree (" + *type + " vs " +
                             io::message_text(it->get<std::string>(), 40) + ")");
        }
        type = it->get<std::string>();
    }
    if (!type) {
        throw InputError(where +
                         ": expected \"rope_type\" (or \"type\"): default, linear or llama3");
    }
    auto number = [&](const char* key) {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) {
            throw InputError(where + ": rope_type " + *type + " needs \"" + key + "\"");
        }
        return positive_number(*it, where + "." + key);
    };
    RopeScaling s;
    if (*type == "default") {
        return s;
    }
    if (*type == "linear") {
        s.type = RopeScalingType::linear;
        s.factor = number("factor");
        return s;
    }
    if (*type == "llama3") {
        s.type = RopeScalingType::llama3;
        s.factor = number("factor");
        s.low_freq_factor = number("low_freq_factor");
        s.high_freq_factor = number("high_freq_factor");
        s.original_max_position_embeddings = number("original_max_position_embeddings");
        if (s.high_freq_factor <= s.low_freq_factor) {
            throw InputError(where + ".high_freq_factor: expected more than low_freq_factor");
        }
        return s;
    }
    throw InputError(where + ": rope_type '" + io::message_text(*type, 40) +
                     "' is not supported (supported: default, linear, llama3)");
}

namespace {

/// What changes the attention beyond the heads and RoPE (a whole model applies these; one
/// layer's weights are refused with them, decode_model.cpp): the sliding window the model
/// type's config class reads, and GPT-2's score scaling keys.
void read_attention_extras(const json& doc, const std::string& file, HfConfig& c) {
    const std::string type = c.model_type ? c.model_type->value : "";
    if (const auto w = detail::config_sliding_window(doc, type, file)) {
        c.sliding_window = HfValue<std::size_t>{
            *w, doc.contains("sliding_window") ? "sliding_window" : "sliding_window (by default)"};
    }
    for (auto [key, out] :
         {std::pair{"scale_attn_weights", &c.scale_attn_weights},
          std::pair{"scale_attn_by_inverse_layer_idx", &c.scale_attn_by_inverse_layer_idx}}) {
        if (const auto it = doc.find(key); it != doc.end() && !it->is_null()) {
            *out = HfValue<bool>{detail::flag(doc, key, false, file), key};
        }
    }
}

} // namespace

HfConfig parse_hf_config(std::string_view text, const fs::path& path) {
    const std::string file = path.string();
    const json doc = io::parse_json_text(text, file);
    if (!doc.is_object()) {
        throw InputError(file + ": expected a JSON object, got " + std::string(doc.type_name()));
    }
    HfConfig c;
    c.file = path;
    c.model_type = lookup<std::string>(
        doc, {"model_type"}, "", file, [](const json& j, const std::string& where) {
            if (!j.is_string()) {
                throw InputError(where + ": expected a string, got " + io::value_text(j));
            }
            return j.get<std::string>();
        });
    c.num_heads = lookup<std::size_t>(
        doc, {"num_attention_heads", "n_head", "n_heads"}, "", file, positive_integer);
    c.num_kv_heads = lookup<std::size_t>(doc, {"num_key_value_heads"}, "", file, positive_integer);
    c.head_dim = lookup<std::size_t>(doc, {"head_dim"}, "", file, positive_integer);
    c.hidden_size =
        lookup<std::size_t>(doc, {"hidden_size", "n_embd", "dim"}, "", file, positive_integer);
    c.num_layers = lookup<std::size_t>(
        doc, {"num_hidden_layers", "n_layer", "n_layers"}, "", file, positive_integer);
    c.vocab_size = lookup<std::size_t>(doc, {"vocab_size"}, "", file, positive_integer);
    c.max_positions = lookup<std::size_t>(
        doc, {"max_position_embeddings", "n_positions"}, "", file, positive_integer);
    c.rope_theta =
        lookup<double>(doc, {"rope_theta", "rotary_emb_base"}, "", file, positive_number);
    c.partial_rotary_factor = lookup<double>(
        doc,
        {"partial_rotary_factor", "rotary_pct"},
        "",
        file,
        [](const json& j, const std::string& where) {
            const double v = positive_number(j, where);
            if (v > 1.0) {
                throw InputError(where + ": expected a number in (0, 1], got " + io::value_text(j));
            }
            return v;
        });
    c.rotary_dim = lookup<std::size_t>(doc, {"rotary_dim"}, "", file, positive_integer);
    c.norm_eps = lookup<double>(
        doc,
        {"rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps", "norm_epsilon"},
        "",
        file,
        [](const json& j, const std::string& where) {
            const double v = finite_number(j, where);
            if (v < 0.0) {
                throw InputError(where + ": expected a number >= 0, got " + io::value_text(j));
            }
            return v;
        });

    for (auto [key, out] :
         {std::pair{"pad_token_id", &c.pad_token_id}, std::pair{"eos_token_id", &c.eos_token_id}}) {
        const auto it = doc.find(key);
        const json* id = it == doc.end()                  ? nullptr
                         : it->is_array() && !it->empty() ? &it->front()
                         : it->is_array()                 ? nullptr
                                                          : &*it;
        if (id != nullptr && id->is_number_integer() && id->get<std::int64_t>() >= 0) {
            *out = HfValue<std::int64_t>{id->get<std::int64_t>(), key};
        }
    }
    read_attention_extras(doc, file, c);
    if (const auto it = doc.find("rope_scaling"); it != doc.end() && !it->is_null()) {
        c.rope_scaling =
            HfValue<RopeScaling>{parse_rope_scaling(*it, file + ": rope_scaling"), "rope_scaling"};
    }
    // transformers 5 writes "rope_parameters": {"rope_type": .., "rope_theta": .., ...}.
    if (const auto it = doc.find("rope_parameters"); it != doc.end() && !it->is_null()) {
        if (!it->is_object()) {
            throw InputError(file + ": rope_parameters: expected an object, got " +
                             io::value_text(*it));
        }
        const auto theta =
            lookup<double>(*it, {"rope_theta"}, "rope_parameters.", file, positive_number);
        if (theta) {
            if (c.rope_theta && c.rope_theta->value != theta->value) {
                throw InputError(file + ": " + c.rope_theta->key + " and " + theta->key +
                                 " disagree");
            }
            c.rope_theta = theta;
        }
        if (!c.rope_scaling && (it->contains("rope_type") || it->contains("type"))) {
            c.rope_scaling = HfValue<RopeScaling>{
                parse_rope_scaling(*it, file + ": rope_parameters"), "rope_parameters"};
        }
        if (!c.partial_rotary_factor) {
            if (const auto f = it->find("partial_rotary_factor"); f != it->end() && !f->is_null()) {
                c.partial_rotary_factor = HfValue<double>{
                    positive_number(*f, file + ": rope_parameters.partial_rotary_factor"),
                    "rope_parameters.partial_rotary_factor"};
            }
        }
    }
    return c;
}

HfConfig read_hf_config(const fs::path& file) {
    const std::vector<std::uint8_t> bytes = io::read_file(file);
    return parse_hf_config(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), file);
}

std::optional<fs::path> hf_config_beside(const fs::path& checkpoint) {
    fs::path candidate = checkpoint.parent_path() / "config.json";
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) {
        return candidate;
    }
    return std::nullopt;
}

std::optional<std::size_t> hf_head_dim(const HfConfig& c) {
    if (c.head_dim) {
        return c.head_dim->value;
    }
    if (c.hidden_size && c.num_heads) {
        if (c.hidden_size->value % c.num_heads->value != 0) {
            throw InputError(c.file.string() + ": " + c.hidden_size->key + " " +
                             std::to_string(c.hidden_size->value) + " is not divisible by " +
                             c.num_heads->key + " " + std::to_string(c.num_heads->value));
        }
        return c.hidden_size->value / c.num_heads->value;
    }
    return std::nullopt;
}

std::optional<std::size_t> hf_rotary_dim(const HfConfig& c, std::size_t head_dim) {
    if (c.rotary_dim) {
        return c.rotary_dim->value;
    }
    if (c.partial_rotary_factor) {
        // Hugging Face: int(head_dim * partial_rotary_factor), truncating.
        return static_cast<std::size_t>(static_cast<double>(head_dim) *
                                        c.partial_rotary_factor->value);
    }
    return std::nullopt;
}

RopeStyle hf_rope_style(const HfConfig& c) {
    if (c.model_type && (c.model_type->value == "gptj" || c.model_type->value == "codegen")) {
        return RopeStyle::interleaved;
    }
    return RopeStyle::neox;
}

RopeSpec hf_rope_spec(const HfConfig& c, std::size_t head_dim) {
    RopeSpec spec;
    if (c.rope_theta) {
        spec.theta = c.rope_theta->value;
    }
    spec.style = hf_rope_style(c);
    spec.dim = hf_rotary_dim(c, head_dim).value_or(0);
    if (c.rope_scaling) {
        spec.scaling = c.rope_scaling->value;
    }
    return spec;
}

} // namespace attn::model

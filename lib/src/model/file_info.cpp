// `attn info`'s summaries as JSON and text: see attn/model/file_info.hpp.
#include "attn/model/file_info.hpp"

#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/number_text.hpp"
#include "attn/model/architecture.hpp"
#include "attn/model/folder.hpp"
#include "attn/model/gguf_model.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/model/safetensors_summary.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

namespace attn::model {

namespace {

std::string human_bytes(std::uint64_t n) {
    return n < 1024 ? std::to_string(n) + " B" : io::format_size(n);
}

/// JSON with invalid UTF-8 (a file or tensor name) replaced, not refused.
std::string dump(const nlohmann::json& v) {
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string pad(const std::string& text, std::size_t width) {
    return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

const char* plural(std::uint64_t n) {
    return n == 1 ? "" : "s";
}

/// A name column's width: the longest name shown (at most 60), at least 4.
std::size_t name_width(const std::vector<std::string>& names) {
    std::size_t width = 4;
    for (const std::string& n : names) {
        width = std::max(width, std::min<std::size_t>(io::message_text(n).size(), 60));
    }
    return width;
}

/// The model line under a checkpoint's layers: its layout, layers, heads and norm.
std::string model_line(const nlohmann::json& m) {
    const auto text = [](const nlohmann::json& v) {
        return v.is_null() ? std::string("?") : v.dump();
    };
    std::ostringstream out;
    out << "model: " << m["layout"].get<std::string>() << ", " << m["layers"] << " layer"
        << (m["layers"] == 1 ? "" : "s") << ", heads " << text(m["heads"]) << ", kv heads "
        << text(m["kv_heads"]) << ", head dim " << text(m["head_dim"]) << ", norm "
        << (m["norm"].is_null() ? std::string("none") : m["norm"].get<std::string>()) << ", rope "
        << (m["rope"].get<bool>() ? "yes" : "no")
        << (m.contains("config")
                ? " (config.json)"
                : " (no config.json beside it: give " + option_name("num_heads") + ")")
        << '\n';
    return out.str();
}

} // namespace

InfoKind info_kind(const std::string& path) {
    if (is_gguf_path(path)) {
        return InfoKind::gguf;
    }
    if (is_model_folder(path)) {
        return InfoKind::model_folder;
    }
    if (is_safetensors_path(path)) {
        return InfoKind::safetensors;
    }
    if (const auto ref = io::parse_npz_ref(path); ref && ref->member.empty()) {
        return InfoKind::npz;
    }
    return InfoKind::array;
}

FileInfo array_info(const std::string& file, const io::Array& arr) {
    std::size_t n = 1;
    for (auto d : arr.shape) {
        n *= d;
    }
    std::string dtype = arr.dtype;
    if (dtype == "json") {
        dtype = arr.is_bool ? "bool (JSON)" : "number (JSON)";
    }
    FileInfo info;
    info.json = "{\"file\":" + dump(file) + ",\"shape\":" + nlohmann::json(arr.shape).dump() +
                ",\"dtype\":\"" + arr.dtype + "\"}\n";
    info.text = file + ": shape " + shape_string(arr.shape) + ", dtype " + dtype + ", " +
                std::to_string(n) + " element" + plural(n) + "\n";
    return info;
}

std::vector<FileInfo> npz_info(const std::string& file) {
    const std::vector<std::uint8_t> archive = io::read_file(io::parse_npz_ref(file).value().file);
    std::vector<FileInfo> out;
    for (const std::string& member : io::npz_members(archive, file)) {
        const io::Array arr =
            io::parse_npy(io::npz_member_bytes(archive, member, file), file + ":" + member);
        out.push_back(array_info(file + ":" + member, arr));
    }
    return out;
}

FileInfo safetensors_info(const std::string& file) {
    const SafetensorsFile st(file);
    const SafetensorsHeader& h = st.header();
    const nlohmann::json j = safetensors_summary(file, h);
    std::vector<std::string> names;
    std::size_t shape_width = 2;
    for (const SafetensorsEntry& t : h.tensors) {
        names.push_back(t.name);
        shape_width = std::max(shape_width, shape_string(t.shape).size());
    }
    const std::size_t width = name_width(names);
    std::ostringstream out;
    out << io::message_text(file) << ": safetensors, " << h.tensors.size() << " tensor"
        << plural(h.tensors.size()) << ", " << human_bytes(h.data_size) << " of data\n";
    for (const SafetensorsEntry& t : h.tensors) {
        out << "  " << pad(io::message_text(t.name), width) << "  " << pad(t.dtype, 4) << "  "
            << pad(shape_string(t.shape), shape_width) << "  " << human_bytes(t.end - t.begin)
            << '\n';
    }
    if (j["layers"].empty()) {
        out << "no attention layer attn recognises (layouts attn, torch-mha, gpt2, llama, bert)\n";
    } else {
        out << "attention layers (params: {\"file\", \"prefix\", \"layout\"}, or "
            << option_name("params") << " FILE " << option_name("prefix") << " P "
            << option_name("layout") << " L):\n";
        for (const auto& l : j["layers"]) {
            out << "  " << pad(l["layout"].get<std::string>(), 9) << "  prefix '"
                << io::message_text(l["prefix"].get<std::string>()) << "'\n";
        }
        out << model_line(j["model"]);
    }
    return {dump(j) + "\n", out.str()};
}

FileInfo gguf_info(const std::string& file) {
    const GgufFile gguf(file);
    nlohmann::json j = gguf_summary(gguf.header(), gguf.shown(), &gguf);
    const nlohmann::json& tensors = j["tensors"];
    std::ostringstream out;
    out << io::message_text(file) << ": GGUF v" << j["version"] << ", " << tensors.size()
        << " tensor" << plural(tensors.size()) << ", "
        << human_bytes(j["data_bytes"].get<std::uint64_t>()) << " of data, alignment "
        << j["alignment"] << '\n';
    out << "architecture: "
        << (j["architecture"].is_null() ? std::string("?")
                                        : io::message_text(j["architecture"].get<std::string>()))
        << '\n';
    const auto print_map = [&](const char* title, const nlohmann::json& m) {
        if (m.empty()) {
            return;
        }
        out << title << ":\n";
        for (const auto& [key, value] : m.items()) {
            out << "  " << io::message_text(key) << " = " << io::message_text(dump(value), 200)
                << '\n';
        }
    };
    print_map("hyper-parameters", j["hyperparameters"]);
    print_map("tokenizer (tokenizer.ggml.*; arrays as counts)", j["tokenizer"]);
    print_map("metadata", j["metadata"]);
    std::vector<std::string> names;
    std::size_t shape_width = 2;
    for (const auto& t : tensors) {
        names.push_back(t["name"].get<std::string>());
        shape_width =
            std::max(shape_width, shape_string(t["shape"].get<std::vector<std::size_t>>()).size());
    }
    const std::size_t width = name_width(names);
    out << "tensors:\n";
    for (const auto& t : tensors) {
        out << "  " << pad(io::message_text(t["name"].get<std::string>()), width) << "  "
            << pad(t["type"].get<std::string>(), 7) << "  "
            << pad(shape_string(t["shape"].get<std::vector<std::size_t>>()), shape_width) << "  "
            << human_bytes(t["bytes"].get<std::uint64_t>()) << '\n';
    }
    if (j.contains("config")) {
        out << "model (as config.json): " << dump(j["config"]) << '\n';
    } else {
        out << "model: not mapped: " << j["config_error"].get<std::string>() << '\n';
    }
    j["file"] = file;
    return {dump(j) + "\n", out.str()};
}

FileInfo model_folder_info(const std::string& folder) {
    const ModelFolder model(folder);
    if (!model.config()) {
        throw InputError(folder + ": no config.json (the model's architecture and sizes)");
    }
    const std::vector<std::string> names = model.names();
    const ModelSpec spec = model_spec(*model.config(), names);
    const std::vector<std::string> shards = model.shards();
    nlohmann::json j = {{"file", folder},
                        {"format", "model folder"},
                        {"architecture", spec.arch.model_type},
                        {"layers", spec.layers},
                        {"hidden_size", spec.hidden},
                        {"heads", spec.heads},
                        {"kv_heads", spec.kv_heads},
                        {"head_dim", spec.head_dim},
                        {"tensors", names.size()},
                        {"shards", shards}};
    for (const auto& row : spec.origins) {
        j["settings"].push_back({{"name", row[0]}, {"value", row[1]}, {"from", row[2]}});
    }
    std::string text = folder + ": " + spec.arch.model_type + " model, " +
                       std::to_string(names.size()) + " tensors in " +
                       std::to_string(shards.size()) + " file" + plural(shards.size()) + "\n";
    for (const std::string& line : describe_model(spec)) {
        text += "  " + line + "\n";
    }
    return {j.dump() + "\n", text};
}

} // namespace attn::model

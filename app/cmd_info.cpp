// `attn info FILE`: the shape and dtype of an array file (.npy or .json), or the tensors
// of a .safetensors checkpoint and the attention layers `params` can take from it, read with
// the same strict readers as every other command.
#include "attn/error.hpp"
#include "attn/io/architecture.hpp"
#include "attn/io/array.hpp"
#include "attn/io/gguf_model.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/model_folder.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/io/safetensors_summary.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

namespace attn::app {

namespace {

struct InfoArgs {
    std::string file;
    bool json = false;
};

bool is_safetensors(const std::string& file) {
    constexpr std::string_view ext = ".safetensors";
    if (file.size() < ext.size()) {
        return false;
    }
    std::string tail = file.substr(file.size() - ext.size());
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
    });
    return tail == ext;
}

std::string human_bytes(std::uint64_t n) {
    return n < 1024 ? std::to_string(n) + " B" : io::format_size(n);
}

/// A .safetensors file: its header (checked strictly; no tensor data is read), every
/// tensor's name, dtype, shape and size, and the layers `params` recognises.
void run_info_safetensors(const InfoArgs& a) {
    const io::SafetensorsFile file(a.file);
    const io::SafetensorsHeader& h = file.header();
    const nlohmann::json j = io::safetensors_summary(a.file, h);
    const auto dump = [](const nlohmann::json& v) {
        return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    if (a.json) {
        std::cout << dump(j) << '\n';
        return;
    }
    std::size_t name_width = 4;
    std::size_t shape_width = 2;
    for (const io::SafetensorsEntry& t : h.tensors) {
        name_width =
            std::max(name_width, std::min<std::size_t>(io::message_text(t.name).size(), 60));
        shape_width = std::max(shape_width, shape_string(t.shape).size());
    }
    const auto pad = [](const std::string& text, std::size_t width) {
        return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
    };
    std::cout << io::message_text(a.file) << ": safetensors, " << h.tensors.size() << " tensor"
              << (h.tensors.size() == 1 ? "" : "s") << ", " << human_bytes(h.data_size)
              << " of data\n";
    for (const io::SafetensorsEntry& t : h.tensors) {
        std::cout << "  " << pad(io::message_text(t.name), name_width) << "  " << pad(t.dtype, 4)
                  << "  " << pad(shape_string(t.shape), shape_width) << "  "
                  << human_bytes(t.end - t.begin) << '\n';
    }
    if (j["layers"].empty()) {
        std::cout << "no attention layer attn recognises (layouts attn, torch-mha, gpt2, "
                     "llama, bert)\n";
    } else {
        std::cout << "attention layers (params: {\"file\", \"prefix\", \"layout\"}, or --params "
                     "FILE --prefix P --layout L):\n";
        for (const auto& l : j["layers"]) {
            std::cout << "  " << pad(l["layout"].get<std::string>(), 9) << "  prefix '"
                      << io::message_text(l["prefix"].get<std::string>()) << "'\n";
        }
        const nlohmann::json& m = j["model"];
        const auto text = [](const nlohmann::json& v) {
            return v.is_null() ? std::string("?") : v.dump();
        };
        std::cout << "model: " << m["layout"].get<std::string>() << ", " << m["layers"] << " layer"
                  << (m["layers"] == 1 ? "" : "s") << ", heads " << text(m["heads"])
                  << ", kv heads " << text(m["kv_heads"]) << ", head dim " << text(m["head_dim"])
                  << ", norm "
                  << (m["norm"].is_null() ? std::string("none") : m["norm"].get<std::string>())
                  << ", rope " << (m["rope"].get<bool>() ? "yes" : "no")
                  << (m.contains("config") ? " (config.json)"
                                           : " (no config.json beside it: give --heads)")
                  << '\n';
    }
}

/// A .gguf file: its header (checked strictly; no tensor is dequantized), the {arch}.*
/// hyper-parameters, the tokenizer in short, the tensor table and the Hugging Face config
/// the model maps to (io::gguf_summary).
void run_info_gguf(const InfoArgs& a) {
    const io::GgufFile file(a.file);
    nlohmann::json j = io::gguf_summary(file.header(), file.shown(), &file);
    const auto dump = [](const nlohmann::json& v) {
        return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    if (a.json) {
        j["file"] = a.file;
        std::cout << dump(j) << '\n';
        return;
    }
    const nlohmann::json& tensors = j["tensors"];
    std::cout << io::message_text(a.file) << ": GGUF v" << j["version"] << ", " << tensors.size()
              << " tensor" << (tensors.size() == 1 ? "" : "s") << ", "
              << human_bytes(j["data_bytes"].get<std::uint64_t>()) << " of data, alignment "
              << j["alignment"] << '\n';
    std::cout << "architecture: "
              << (j["architecture"].is_null()
                      ? std::string("?")
                      : io::message_text(j["architecture"].get<std::string>()))
              << '\n';
    const auto print_map = [&](const char* title, const nlohmann::json& m) {
        if (m.empty()) {
            return;
        }
        std::cout << title << ":\n";
        for (const auto& [key, value] : m.items()) {
            std::cout << "  " << io::message_text(key) << " = "
                      << io::message_text(dump(value), 200) << '\n';
        }
    };
    print_map("hyper-parameters", j["hyperparameters"]);
    print_map("tokenizer (tokenizer.ggml.*; arrays as counts)", j["tokenizer"]);
    print_map("metadata", j["metadata"]);
    std::size_t name_width = 4;
    std::size_t shape_width = 2;
    for (const auto& t : tensors) {
        name_width = std::max(
            name_width,
            std::min<std::size_t>(io::message_text(t["name"].get<std::string>()).size(), 60));
        shape_width =
            std::max(shape_width, shape_string(t["shape"].get<std::vector<std::size_t>>()).size());
    }
    const auto pad = [](const std::string& text, std::size_t width) {
        return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
    };
    std::cout << "tensors:\n";
    for (const auto& t : tensors) {
        std::cout << "  " << pad(io::message_text(t["name"].get<std::string>()), name_width) << "  "
                  << pad(t["type"].get<std::string>(), 7) << "  "
                  << pad(shape_string(t["shape"].get<std::vector<std::size_t>>()), shape_width)
                  << "  " << human_bytes(t["bytes"].get<std::uint64_t>()) << '\n';
    }
    if (j.contains("config")) {
        std::cout << "model (as config.json): " << dump(j["config"]) << '\n';
    } else {
        std::cout << "model: not mapped: " << j["config_error"].get<std::string>() << '\n';
    }
}

void print_array_info(const std::string& file, const io::Array& arr, bool json) {
    std::size_t n = 1;
    for (auto d : arr.shape) {
        n *= d;
    }
    std::string dtype = arr.dtype;
    if (dtype == "json") {
        dtype = arr.is_bool ? "bool (JSON)" : "number (JSON)";
    }
    if (json) {
        std::cout << "{\"file\":"
                  << nlohmann::json(file).dump(
                         -1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << ",\"shape\":" << nlohmann::json(arr.shape).dump() << ",\"dtype\":\""
                  << arr.dtype << "\"}\n";
    } else {
        std::cout << file << ": shape " << shape_string(arr.shape) << ", dtype " << dtype << ", "
                  << n << " element" << (n == 1 ? "" : "s") << '\n';
    }
}

/// A model folder: its architecture and sizes, each with where it came from.
void run_info_model(const InfoArgs& a) {
    const io::ModelFolder folder(a.file);
    if (!folder.config()) {
        throw InputError(a.file + ": no config.json (the model's architecture and sizes)");
    }
    const std::vector<std::string> names = folder.names();
    const io::ModelSpec spec = io::model_spec(*folder.config(), names);
    const std::vector<std::string> shards = folder.shards();
    if (a.json) {
        nlohmann::json j = {{"file", a.file},
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
        std::cout << j.dump() << '\n';
        return;
    }
    std::cout << a.file << ": " << spec.arch.model_type << " model, " << names.size()
              << " tensors in " << shards.size() << " file" << (shards.size() == 1 ? "" : "s")
              << '\n';
    for (const std::string& line : io::describe_model(spec)) {
        std::cout << "  " << line << '\n';
    }
}

void run_info(const InfoArgs& a) {
    // A .gguf first: it is a whole model too, but its summary is the file's own (metadata,
    // tensor types), and a GGUF of no supported architecture still has one.
    if (io::is_gguf_path(a.file)) {
        run_info_gguf(a);
        return;
    }
    if (io::is_model_folder(a.file)) {
        run_info_model(a);
        return;
    }
    if (is_safetensors(a.file)) {
        run_info_safetensors(a);
        return;
    }
    // A bare .npz: every array it holds, one line (or JSON line) each, in archive order.
    if (const auto ref = io::parse_npz_ref(a.file); ref && ref->member.empty()) {
        const std::vector<std::uint8_t> archive = io::read_file(ref->file);
        for (const std::string& member : io::npz_members(archive, a.file)) {
            const io::Array arr =
                io::parse_npy(io::npz_member_bytes(archive, member, a.file), a.file + ":" + member);
            print_array_info(a.file + ":" + member, arr, a.json);
        }
        return;
    }
    print_array_info(a.file, read_array_arg(a.file, io::ArrayKind::mask), a.json); // "-": stdin
}

void info_options(CLI::App& cmd, InfoArgs& a) {
    cmd.add_option("file",
                   a.file,
                   "a .npy or .json array file (- for stdin), a .npz archive (every array; "
                   "x.npz:NAME for one), a .safetensors file, a .gguf file, or a model folder "
                   "(config.json + safetensors)")
        ->required();
    cmd.add_flag("--json",
                 a.json,
                 "print {\"file\", \"shape\", \"dtype\"} as JSON (safetensors: {\"file\", "
                 "\"format\", \"tensors\", \"layers\", \"metadata\"}; gguf: {\"file\", "
                 "\"format\", \"architecture\", \"hyperparameters\", \"tokenizer\", "
                 "\"metadata\", \"tensors\", \"config\"})");
}

} // namespace

void add_info(CLI::App& app) {
    add_command<InfoArgs>(app,
                          {"info",
                           "Print the shape and dtype of an array file (each array of a .npz), or "
                           "the tensors of a .safetensors "
                           "checkpoint and the attention layers (layout, prefix) it holds, or "
                           "the metadata and tensors of a .gguf model"},
                          info_options,
                          run_info);
}

} // namespace attn::app

// Model folders: the shard index, strictly, and every shard's header checked against it.
#include "attn/model/folder.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/number_text.hpp"
#include "attn/model/hf_config.hpp"
#include "detail.hpp"

#include <set>

namespace attn::model {

namespace fs = std::filesystem;
using detail::quote_name;
using nlohmann::json;

std::map<std::string, std::string> parse_safetensors_index(std::string_view text,
                                                           std::string_view name_in) {
    const std::string name(name_in);
    io::check_json_depth(text, name);
    const json doc = detail::parse_header_json(text, name);
    if (!doc.is_object()) {
        throw InputError(name + ": expected a JSON object, got " + std::string(doc.type_name()));
    }
    if (const auto m = doc.find("metadata"); m != doc.end() && !m->is_object() && !m->is_null()) {
        throw InputError(name + ": metadata: expected an object, got " +
                         std::string(m->type_name()));
    }
    const auto map = doc.find("weight_map");
    if (map == doc.end() || !map->is_object()) {
        throw InputError(name + ": expected \"weight_map\": an object naming each tensor's shard");
    }
    if (map->empty()) {
        throw InputError(name + ": weight_map names no tensor");
    }
    std::map<std::string, std::string> out;
    for (const auto& [tensor, shard] : map->items()) {
        if (!shard.is_string()) {
            throw InputError(name + ": weight_map: tensor " + quote_name(tensor) +
                             ": expected a shard file name, got " + std::string(shard.type_name()));
        }
        const std::string file = shard.get<std::string>();
        const bool plain = !file.empty() && file != "." && file != ".." &&
                           file.find_first_of("/\\") == std::string::npos &&
                           file.find('\0') == std::string::npos;
        const std::string ext = ".safetensors";
        if (!plain || file.size() <= ext.size() ||
            file.compare(file.size() - ext.size(), ext.size(), ext) != 0) {
            throw InputError(name + ": weight_map: tensor " + quote_name(tensor) + ": shard " +
                             quote_name(file) +
                             " is not a .safetensors file name in the model's folder");
        }
        out.emplace(tensor, file);
    }
    return out;
}

bool is_model_folder(const fs::path& path) {
    std::error_code ec;
    return fs::is_directory(path, ec) || is_gguf_path(path.string());
}

SafetensorsFolder::SafetensorsFolder(const fs::path& path) : path_(path.string()) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
        add_file(path);
        return;
    }
    const fs::path index = path / safetensors_index_name;
    const fs::path single = path / "model.safetensors";
    if (fs::exists(index, ec)) {
        add_shards(path, index);
        return;
    }
    if (!fs::exists(single, ec)) {
        throw InputError(path.string() + ": no model.safetensors and no " + safetensors_index_name +
                         " in this folder");
    }
    add_file(single);
}

const SafetensorsFile& SafetensorsFolder::add_file(const fs::path& file) {
    files_.push_back(std::make_unique<SafetensorsFile>(file));
    const SafetensorsFile& f = *files_.back();
    for (const SafetensorsEntry& e : f.header().tensors) {
        if (where_.emplace(e.name, Where{&f, &e}).second) {
            add(TensorInfo{e.name, e.dtype, e.shape});
        }
    }
    return f;
}

void SafetensorsFolder::add_shards(const fs::path& folder, const fs::path& index) {
    std::error_code ec;
    const std::vector<std::uint8_t> bytes = io::read_file(index);
    const std::map<std::string, std::string> map = parse_safetensors_index(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
        index.string());
    std::map<std::string, const SafetensorsFile*> shards;
    for (const auto& [tensor, shard] : map) {
        if (shards.count(shard) == 0) {
            const fs::path file = folder / shard;
            if (!fs::exists(file, ec)) {
                throw InputError(index.string() + ": shard " + quote_name(shard) +
                                 " (holding tensor " + quote_name(tensor) + ") is missing");
            }
            shards.emplace(shard, &add_file(file));
        }
    }
    // Every tensor of every shard is listed there, and once.
    for (const auto& [shard, file] : shards) {
        for (const SafetensorsEntry& e : file->header().tensors) {
            const auto it = map.find(e.name);
            if (it == map.end() || it->second != shard) {
                throw InputError(index.string() + ": tensor " + quote_name(e.name) + " is in " +
                                 quote_name(shard) + " but the index " +
                                 (it == map.end() ? std::string("does not list it")
                                                  : "puts it in " + quote_name(it->second)));
            }
        }
    }
    for (const auto& [tensor, shard] : map) {
        if (where_.count(tensor) == 0) {
            throw InputError(index.string() + ": tensor " + quote_name(tensor) +
                             " is not in its shard " + quote_name(shard));
        }
    }
}

const SafetensorsFolder::Where& SafetensorsFolder::where(std::string_view name) const {
    const auto it = where_.find(name);
    if (it == where_.end()) {
        throw InputError(path_ + ": no tensor " + quote_name(name));
    }
    return it->second;
}

io::Array SafetensorsFolder::read(std::string_view name) const {
    const Where& w = where(name);
    return w.file->read(*w.entry);
}

io::Array SafetensorsFolder::read_rows(std::string_view name,
                                       std::span<const std::size_t> rows) const {
    const Where& w = where(name);
    return w.file->read_rows(*w.entry, rows);
}

std::optional<StoredTensor> SafetensorsFolder::stored(std::string_view name) const {
    const Where& w = where(name);
    return w.file->stored(*w.entry);
}

std::vector<std::string> SafetensorsFolder::files() const {
    std::vector<std::string> out;
    out.reserve(files_.size());
    for (const auto& f : files_) {
        out.push_back(f->shown());
    }
    return out;
}

ModelFolder::ModelFolder(const fs::path& path) : path_(path) {
    std::error_code ec;
    const bool folder = fs::is_directory(path, ec);
    if (is_gguf_path(path.string()) && !folder) {
        source_ = std::make_unique<GgufModel>(path);
        return;
    }
    source_ = std::make_unique<SafetensorsFolder>(path);
    if (!folder) {
        config_ = hf_config_beside(path);
    } else if (fs::is_regular_file(path / "config.json", ec)) {
        config_ = path / "config.json";
    }
}

void ModelFolder::require(std::string_view name) const {
    if (source_->find(name) == nullptr) {
        throw InputError(path_.string() + ": no tensor " + quote_name(name));
    }
}

io::Array ModelFolder::read(std::string_view name) const {
    require(name);
    return source_->read(name);
}

io::Array ModelFolder::read_rows(std::string_view name, std::span<const std::size_t> rows) const {
    require(name);
    return source_->read_rows(name, rows);
}

std::optional<StoredTensor> ModelFolder::stored(std::string_view name) const {
    require(name);
    return source_->stored(name);
}

} // namespace attn::model

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

ModelFolder::ModelFolder(const fs::path& path) : path_(path) {
    std::error_code ec;
    if (is_gguf_path(path.string()) && !fs::is_directory(path, ec)) {
        gguf_ = std::make_unique<GgufModel>(path);
        const std::vector<std::string> names = gguf_->names();
        gguf_entries_.reserve(names.size());
        for (const std::string& name : names) {
            const GgufSource* source = gguf_->find(name);
            const GgufTensor* t = gguf_->file().header().find(source->gguf_name);
            SafetensorsEntry e;
            e.name = name;
            e.dtype = std::string(ggml_type_traits(t->type)->name);
            e.shape = t->shape;
            if (source->fix == GgufFix::transpose && e.shape.size() == 2) {
                std::swap(e.shape[0], e.shape[1]);
            }
            gguf_entries_.push_back(std::move(e));
        }
        for (const SafetensorsEntry& e : gguf_entries_) {
            tensors_.emplace(e.name, Where{0, &e});
        }
        return;
    }
    const auto add = [this](const fs::path& file) {
        files_.push_back(std::make_unique<SafetensorsFile>(file));
        return files_.size() - 1;
    };
    if (!fs::is_directory(path, ec)) {
        const std::size_t i = add(path);
        for (const SafetensorsEntry& e : files_[i]->header().tensors) {
            tensors_.emplace(e.name, Where{i, &e});
        }
        config_ = hf_config_beside(path);
        return;
    }
    const fs::path config = path / "config.json";
    if (fs::is_regular_file(config, ec)) {
        config_ = config;
    }
    const fs::path index = path / safetensors_index_name;
    const fs::path single = path / "model.safetensors";
    if (!fs::exists(index, ec)) {
        if (!fs::exists(single, ec)) {
            throw InputError(path.string() + ": no model.safetensors and no " +
                             safetensors_index_name + " in this folder");
        }
        const std::size_t i = add(single);
        for (const SafetensorsEntry& e : files_[i]->header().tensors) {
            tensors_.emplace(e.name, Where{i, &e});
        }
        return;
    }
    const std::vector<std::uint8_t> bytes = io::read_file(index);
    const std::map<std::string, std::string> map = parse_safetensors_index(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
        index.string());
    std::map<std::string, std::size_t> shard_index;
    for (const auto& [tensor, shard] : map) {
        if (shard_index.count(shard) == 0) {
            const fs::path file = path / shard;
            if (!fs::exists(file, ec)) {
                throw InputError(index.string() + ": shard " + quote_name(shard) +
                                 " (holding tensor " + quote_name(tensor) + ") is missing");
            }
            shard_index.emplace(shard, add(file));
        }
    }
    // Every tensor of every shard is listed there, and once.
    for (const auto& [shard, i] : shard_index) {
        for (const SafetensorsEntry& e : files_[i]->header().tensors) {
            const auto it = map.find(e.name);
            if (it == map.end() || it->second != shard) {
                throw InputError(index.string() + ": tensor " + quote_name(e.name) + " is in " +
                                 quote_name(shard) + " but the index " +
                                 (it == map.end() ? std::string("does not list it")
                                                  : "puts it in " + quote_name(it->second)));
            }
            tensors_.emplace(e.name, Where{i, &e});
        }
    }
    for (const auto& [tensor, shard] : map) {
        if (tensors_.count(tensor) == 0) {
            throw InputError(index.string() + ": tensor " + quote_name(tensor) +
                             " is not in its shard " + quote_name(shard));
        }
    }
}

std::vector<std::string> ModelFolder::names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& [name, where] : tensors_) {
        out.push_back(name);
    }
    return out;
}

const SafetensorsEntry* ModelFolder::find(std::string_view name) const {
    const auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : it->second.entry;
}

io::Array ModelFolder::read_rows(std::string_view name, std::span<const std::size_t> rows) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) {
        throw InputError(path_.string() + ": no tensor " + quote_name(name));
    }
    if (gguf_ != nullptr) {
        return gguf_->read_rows(name, rows);
    }
    return files_[it->second.file]->read_rows(*it->second.entry, rows);
}

io::Array ModelFolder::read(std::string_view name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) {
        throw InputError(path_.string() + ": no tensor " + quote_name(name));
    }
    if (gguf_ != nullptr) {
        return gguf_->read(name);
    }
    return files_[it->second.file]->read(*it->second.entry);
}

std::optional<std::string> ModelFolder::gguf_config_text() const {
    if (gguf_ == nullptr) {
        return std::nullopt;
    }
    return gguf_->config().dump();
}

std::vector<std::string> ModelFolder::shards() const {
    std::vector<std::string> out;
    if (gguf_ != nullptr) {
        out.push_back(gguf_->file().shown());
    }
    for (const auto& f : files_) {
        out.push_back(f->shown());
    }
    return out;
}

} // namespace attn::model

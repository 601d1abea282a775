// A model as Hugging Face writes it: a folder with config.json and model.safetensors, or
// the shards model.safetensors.index.json lists (model-00001-of-00004.safetensors, ...).
// Opening reads and checks every shard's header and the index (strictly: a missing shard,
// a tensor in no shard or in two, a truncated shard are one-line InputErrors); a tensor's
// data is read only when asked for, so a forward pass holds one layer's weights at a time.
#pragma once

#include "attn/io/array.hpp"
#include "attn/model/gguf_model.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/model/tensor_source.hpp"

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {

/// The index's name beside the shards.
inline constexpr const char* safetensors_index_name = "model.safetensors.index.json";

/// Parses model.safetensors.index.json: {"metadata": {...}, "weight_map": {TENSOR: SHARD}}.
/// Checks: a JSON object (no duplicate keys anywhere, depth limited) whose "weight_map" is
/// a non-empty object of strings, each a plain file name (no '/', '\\', not "." or "..")
/// ending in ".safetensors"; "metadata", if present, an object. Other keys are ignored.
/// Returns tensor name -> shard file name. Throws InputError("NAME: ...").
std::map<std::string, std::string> parse_safetensors_index(std::string_view text,
                                                           std::string_view name);

/// Whether `path` is a whole model: a folder, or a .gguf file (llama.cpp's checkpoints).
bool is_model_folder(const std::filesystem::path& path);

/// A safetensors model's tensors (model::TensorSource): a folder holding the index and its
/// shards, or model.safetensors, or one .safetensors file. Shard headers are read on opening;
/// tensor data on read(), pread from its shard (the shards are not mapped).
class SafetensorsFolder final : public TensorSource {
  public:
    /// `path`: the folder or the file. Throws InputError("PATH: ...") naming the folder, the
    /// index, the shard or the tensor.
    explicit SafetensorsFolder(const std::filesystem::path& path);

    io::Array read(std::string_view name) const override;
    io::Array read_rows(std::string_view name, std::span<const std::size_t> rows) const override;
    /// In place in the shard's mapping (SafetensorsFile::stored).
    std::optional<StoredTensor> stored(std::string_view name) const override;
    std::vector<std::string> files() const override;

  private:
    struct Where {
        const SafetensorsFile* file = nullptr;
        const SafetensorsEntry* entry = nullptr;
    };
    /// The tensor's shard and entry; InputError("PATH: no tensor 'NAME'") when absent.
    const Where& where(std::string_view name) const;
    /// Opens a shard and lists its tensors.
    const SafetensorsFile& add_file(const std::filesystem::path& file);
    /// Opens the shards `index` names in `folder` and checks that they and the index agree.
    void add_shards(const std::filesystem::path& folder, const std::filesystem::path& index);

    std::string path_; ///< the folder or file as given, for messages
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, Where, std::less<>> where_;
};

/// A model's tensors and configuration: a safetensors folder or file (SafetensorsFolder, its
/// config.json beside it) or a .gguf file (model::GgufModel: Hugging Face names and layout,
/// its metadata as config.json), one model::TensorSource either way.
class ModelFolder {
  public:
    /// Throws InputError("PATH: ...") naming the folder, the shard or the tensor.
    explicit ModelFolder(const std::filesystem::path& path);

    /// The folder (or the file) as given.
    const std::filesystem::path& path() const { return path_; }
    /// config.json in the folder (or beside the file), if it is there (never for a GGUF).
    const std::optional<std::filesystem::path>& config() const { return config_; }
    /// A GGUF's metadata as config.json text (gguf_hf_config), or empty for safetensors.
    std::optional<std::string> gguf_config_text() const { return source_->config_text(); }
    /// Where the tensors are.
    const TensorSource& source() const { return *source_; }
    /// Every tensor name, sorted.
    std::vector<std::string> names() const { return source_->names(); }
    /// The tensor called `name`, or null.
    const TensorInfo* find(std::string_view name) const { return source_->find(name); }
    /// The tensor as float32, read from its file now. Throws InputError naming it (and
    /// "PATH: no tensor 'NAME'" when it is absent).
    io::Array read(std::string_view name) const;
    /// Rows `rows` (in that order) of the matrix read(name) gives, shape [rows.size(),
    /// columns], reading (or dequantizing) only those rows where the file allows: what a
    /// token embedding of a large vocabulary costs is the tokens in use, not the table.
    io::Array read_rows(std::string_view name, std::span<const std::size_t> rows) const;
    /// The tensor's stored bytes and type (TensorSource::stored), "PATH: no tensor 'NAME'"
    /// when it is absent.
    std::optional<StoredTensor> stored(std::string_view name) const;
    /// The files read, as messages name them.
    std::vector<std::string> shards() const { return source_->files(); }

  private:
    /// InputError("PATH: no tensor 'NAME'") unless the source has the tensor.
    void require(std::string_view name) const;

    std::filesystem::path path_;
    std::optional<std::filesystem::path> config_;
    std::unique_ptr<TensorSource> source_;
};

} // namespace attn::model

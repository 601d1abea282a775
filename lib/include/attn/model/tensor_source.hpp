// Where a model's tensors are stored, behind one interface: a safetensors folder (one file, or
// shards under an index) and a GGUF file both list Hugging Face names with the shape the model
// reads, read a tensor (or some of its rows) as float32, and hand a kernel that computes on the
// stored type the bytes as stored, without a float32 copy. Opening and checking a file is its
// class's (model::SafetensorsFolder, model::GgufModel); which one a path is, model::ModelFolder's.
#pragma once

#include "attn/io/array.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {

/// One tensor as a source lists it.
struct TensorInfo {
    std::string name;               ///< Hugging Face's ("model.layers.0.self_attn.q_proj.weight")
    std::string dtype;              ///< as stored: "F32", "BF16" (safetensors), "Q4_K" (GGUF)
    std::vector<std::size_t> shape; ///< as read() gives it, numpy order
};

/// What reading a tensor does to its stored values besides decoding them: llama.cpp's
/// converter's changes, undone (convert_hf_to_gguf.py). Safetensors stores every tensor as read.
enum class StoredFix {
    none,
    unpermute_q, ///< rows: LlamaModel.permute(w, n_head, n_head) undone (model::unpermute_rows)
    unpermute_k, ///< rows: LlamaModel.permute(w, n_head, n_head_kv) undone
    minus_one,   ///< values: Gemma's norm weights, stored as w + 1
    transpose,   ///< layout: GPT-2's Conv1D weights, stored as w.T
    regroup_qkv, ///< rows: q|k|v blocks back to groups of (heads/kv q heads, k, v): BLOOM's
                 ///< and Falcon's fused query_key_value (model::regroup_qkv_row_map)
};

/// A tensor's bytes as its file stores them, for a kernel that computes on the stored type.
struct StoredTensor {
    /// ggml's type number (model::ggml_type_traits names it and gives its block size):
    /// F32 0, F16 1, Q8_0 8, Q4_K 12, BF16 30, ...
    std::uint32_t type = 0;
    /// As stored, numpy order: rows of shape.back() values each, every row a whole number of
    /// the type's blocks. read()'s shape, but reversed for StoredFix::transpose.
    std::vector<std::size_t> shape;
    /// Row-major, exactly the rows' blocks: inside the file's mapping (GGUF), or in `holder`.
    /// Valid while the source lives (and `holder`, when set).
    std::span<const std::uint8_t> bytes;
    /// What read() does beyond decoding these bytes.
    StoredFix fix = StoredFix::none;
    /// The bytes when the source does not map its file (a safetensors shard, read on demand).
    std::shared_ptr<const std::vector<std::uint8_t>> holder;
};

/// A model's tensors, by Hugging Face name. The index (names(), find()) is filled once by the
/// implementation's constructor; reading is the implementation's.
class TensorSource {
  public:
    virtual ~TensorSource() = default;
    TensorSource(const TensorSource&) = delete;
    TensorSource& operator=(const TensorSource&) = delete;
    TensorSource(TensorSource&&) = delete;
    TensorSource& operator=(TensorSource&&) = delete;

    /// Every tensor name, sorted.
    std::vector<std::string> names() const;
    /// The tensor called `name`, or null.
    const TensorInfo* find(std::string_view name) const;

    /// The tensor as float32 in find(name)->shape, read (or dequantized) now.
    /// Throws InputError("FILE: no tensor 'NAME'") when it is absent, and InputError naming
    /// the tensor for what its file cannot give (an unsupported dtype, the memory limit).
    virtual io::Array read(std::string_view name) const = 0;
    /// Rows `rows` (in that order, repeats allowed) of the matrix read(name) gives, shape
    /// [rows.size(), columns], reading (or dequantizing) only those rows where the file
    /// allows. Throws InputError as read() does, and for a row past the end.
    virtual io::Array read_rows(std::string_view name, std::span<const std::size_t> rows) const = 0;
    /// The tensor's stored bytes and type; empty when its stored type is not one of ggml's
    /// (a safetensors BOOL, U8 or F8 tensor). Throws InputError as read() does for a missing
    /// tensor, and for a copy (`holder`) larger than the memory limit.
    virtual std::optional<StoredTensor> stored(std::string_view name) const = 0;
    /// The files read, as messages show them.
    virtual std::vector<std::string> files() const = 0;
    /// config.json's text when the file carries its own configuration (a GGUF's metadata,
    /// model::gguf_hf_config); empty for safetensors, whose config.json lies beside it.
    virtual std::optional<std::string> config_text() const { return std::nullopt; }

  protected:
    TensorSource() = default;
    /// Lists one tensor (the implementation's constructor, once per name).
    void add(TensorInfo info);

  private:
    std::map<std::string, TensorInfo, std::less<>> tensors_;
};

} // namespace attn::model

// Projection weights from model checkpoints: a strict reader of the safetensors format (the
// Hugging Face one: 8-byte little-endian header length, JSON header, raw little-endian data)
// and the mapping of the common layouts (nn.MultiheadAttention, GPT-2 Conv1D, Llama, ours)
// onto attn::Projections. Like the NPY reader it never trusts a header: every offset, size
// and shape is checked against the bytes present before anything is allocated.
#pragma once

#include "attn/io/array.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/source.hpp"
#include "attn/layer.hpp"
#include "attn/model/tensor_source.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {

/// The largest header the format allows (the reference implementation's limit).
inline constexpr std::uint64_t safetensors_max_header = 100'000'000;

/// One tensor of a safetensors header.
struct SafetensorsEntry {
    std::string name;
    std::string dtype;              ///< as written: "F32", "F16", "BF16", "I64", ...
    std::vector<std::size_t> shape; ///< product and byte size overflow-checked
    std::size_t item_size = 0;      ///< bytes per element of dtype
    std::uint64_t begin = 0;        ///< data_offsets, relative to the data section
    std::uint64_t end = 0;
};

/// A parsed and checked safetensors header.
struct SafetensorsHeader {
    std::uint64_t data_start = 0;          ///< file offset of the data section: 8 + header length
    std::uint64_t data_size = 0;           ///< bytes of the data section (the rest of the file)
    std::vector<SafetensorsEntry> tensors; ///< sorted by name
    std::map<std::string, std::string> metadata; ///< "__metadata__", if any

    /// The tensor called `name`, or null.
    const SafetensorsEntry* find(std::string_view name) const;
};

/// Parses and checks a safetensors header. `bytes` holds the start of the file, at least the
/// 8-byte length and the header it announces (it may hold the whole file); `file_size` is the
/// size of the whole file. Checks: the length fits the file and the format's 100 MB limit;
/// the header is a JSON object starting with '{' with no duplicate keys; "__metadata__", if
/// present, maps strings to strings; every other key is a tensor {"dtype", "shape",
/// "data_offsets"} and nothing else; dtype is one of the format's (BOOL, U8, I8, F8_E5M2,
/// F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64); shape holds
/// non-negative integers whose product (and byte size) does not overflow; data_offsets are
/// [begin, end] with begin <= end <= data size and end - begin = product(shape) * item size;
/// and the tensors tile the data section exactly (no overlap, no hole, nothing after the
/// last), as the format requires. Throws InputError("NAME: ...") naming the tensor.
SafetensorsHeader parse_safetensors_header(std::span<const std::uint8_t> bytes,
                                           std::uint64_t file_size,
                                           std::string_view name);

/// Converts one tensor's raw bytes (exactly end - begin of them) to float32, C order:
/// F32 as is, F16 and BF16 exactly (subnormals, infinities and NaN payloads included), F64
/// rounded to nearest. Other dtypes throw InputError("NAME: tensor 'T': dtype I64 is not
/// supported ..."). Refuses (before allocating) a copy larger than memory_limit().
io::Array decode_safetensors_tensor(const SafetensorsEntry& entry,
                                    std::span<const std::uint8_t> data,
                                    std::string_view name);

/// A whole safetensors file held in memory, parsed: for tests and fuzzing.
/// Throws InputError("NAME: ...").
std::map<std::string, io::Array> parse_safetensors(std::span<const std::uint8_t> bytes,
                                                   std::string_view name);

/// A safetensors file opened for reading: the constructor reads and checks the header only;
/// read() fetches one tensor's bytes when asked, so one layer of a multi-gigabyte checkpoint
/// costs only that layer. Pipes and devices are read whole (within memory_limit()).
/// Throws InputError("PATH: ...").
class SafetensorsFile {
  public:
    explicit SafetensorsFile(const std::filesystem::path& path);

    const SafetensorsHeader& header() const { return header_; }
    /// The path as messages show it.
    const std::string& shown() const { return shown_; }
    /// The tensor as float32 (decode_safetensors_tensor).
    io::Array read(const SafetensorsEntry& entry) const;
    /// Rows `rows` (in that order, repeats allowed) of a matrix tensor as float32, shape
    /// [rows.size(), columns]: only those rows' bytes are read. Throws InputError for a tensor
    /// that is not a matrix, a row past its end, or what read() refuses.
    io::Array read_rows(const SafetensorsEntry& entry, std::span<const std::size_t> rows) const;
    /// The tensor's bytes as stored, its dtype as ggml's type (ggml_type_named), or empty for
    /// a dtype ggml lacks (BOOL, U8, F8_*): in place, in a regular file's mapping (no copy,
    /// nothing allocated: pages are read as a product touches them) or in a pipe's bytes
    /// held whole. Valid while this object lives.
    std::optional<StoredTensor> stored(const SafetensorsEntry& entry) const;

  private:
    std::string shown_;
    io::Fd fd_;                         ///< a regular file, read on demand
    std::optional<io::MappedFile> map_; ///< and mapped, for stored()
    std::vector<std::uint8_t> whole_;   ///< or a pipe/device, read whole
    SafetensorsHeader header_;
};

/// How a checkpoint names a layer's attention weights (after the prefix).
enum class ParamsLayout {
    attn,      ///< ours: w_q, w_k, w_v, w_o [out, in]; b_q, b_k, b_v, b_o
    torch_mha, ///< nn.MultiheadAttention: in_proj_weight [3E, E] (or q_proj_weight,
               ///< k_proj_weight, v_proj_weight), in_proj_bias, out_proj.weight/.bias
    gpt2,      ///< GPT-2 Conv1D: c_attn.weight [in, 3·out] (q|k|v columns), c_attn.bias,
               ///< c_proj.weight [in, out], c_proj.bias
    llama,     ///< q_proj, k_proj, v_proj, o_proj .weight [out, in] (and optional .bias)
    bert,      ///< self.query, self.key, self.value, output.dense .weight [out, in], .bias
    opt,       ///< q_proj, k_proj, v_proj, out_proj .weight [out, in], .bias; no RoPE (OPT,
               ///< BART, Whisper, CLIP, ViT). GPT-J's names are the same (with RoPE): taken
               ///< only when asked for (layout) or config.json's model_type says which
};

/// "attn", "torch-mha", "gpt2", "llama", "bert", "opt".
std::string_view layout_name(ParamsLayout layout);

/// The layouts whose names appear among `names` (tensor names with the prefix removed), in
/// enum order. A layout is recognized by its main weight: w_q/w_k/w_v/w_o (attn),
/// in_proj_weight/q_proj_weight/out_proj.weight (torch-mha), c_attn.weight (gpt2),
/// q_proj.weight with o_proj.weight (llama), self.query.weight (bert), q_proj.weight with
/// out_proj.weight (opt; then not torch-mha).
std::vector<ParamsLayout> detect_layouts(const std::vector<std::string>& names);

/// Maps a layer's tensors (keyed by name without the prefix; others are ignored) to
/// nn.Linear-layout projections. Conv1D weights are transposed and fused q|k|v split.
/// `what` names the source in messages ("params: model.safetensors") and `prefix` is put
/// back in front of tensor names there. Throws InputError naming the tensor for a missing
/// required tensor, a wrong rank or a fused size that does not split in three, and for
/// nn.MultiheadAttention's bias_k/bias_v (add_bias_kv), which attn cannot express.
Projections map_layout(ParamsLayout layout,
                       const std::map<std::string, io::Array>& tensors,
                       std::string_view what,
                       std::string_view prefix);

/// True when a "params" value names a checkpoint: a string ending in ".safetensors"
/// (case-insensitive), or an object with a "file" field.
bool is_checkpoint_params(const nlohmann::json& params);

/// True when a path ends in ".safetensors" (case-insensitive).
bool is_safetensors_path(std::string_view path);

/// The projections of one checkpoint layer, and where they were found.
struct CheckpointParams {
    Projections projections;
    ParamsLayout layout = ParamsLayout::attn;
    std::string prefix;         ///< the attention prefix used (with the '.' it may have gained)
    std::filesystem::path file; ///< the .safetensors file
};

/// Loads projections from a checkpoint named by a "params" value:
///   "model.safetensors"  or  {"file": F, "prefix": "transformer.h.0.attn.", "layout": L}
/// (a "config" key is allowed and left to the caller: attn/model/checkpoint_model.hpp).
/// F is relative to `base`. prefix (default "") selects the layer; a prefix that finds nothing
/// is retried with a '.' appended. layout (default: detected from the names at the prefix)
/// is "attn", "torch-mha", "gpt2", "llama" or "bert". Records the file as source "params" and each
/// tensor used as "params.NAME" (for --check-finite and the output-path check).
/// `model_type`: config.json's model_type as the caller read it ("" without one): it tells
/// OPT-like out_proj names from GPT-J's, and refuses a model whose attention is more than a
/// layer's weights compute (Gemma's norm, scale and softcap, ...).
/// Throws InputError("params: ...") naming the file and the tensor; when nothing is found at
/// the prefix, the message lists prefixes where the file does hold attention weights.
CheckpointParams load_checkpoint_params(const nlohmann::json& params,
                                        const std::filesystem::path& base,
                                        std::vector<io::ProblemSource>& sources,
                                        const std::string& model_type = {});

/// The key/value heads that checkpoint weights imply when num_kv_heads is not given:
/// rows(w_k) / (rows(w_q) / num_heads) when that is a whole divisor of num_heads
/// (Llama-style grouped-query attention), else num_heads.
std::size_t implied_num_kv_heads(const Projections& projections, std::size_t num_heads);

} // namespace attn::model

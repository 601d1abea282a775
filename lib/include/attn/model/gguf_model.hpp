// A GGUF file presented as the Hugging Face model it was converted from: its metadata as the
// config.json keys (model_type, heads, kv heads, head dim, sizes, RoPE, norm eps, context
// length) and its tensors under Hugging Face's names with llama.cpp's conversion undone
// (convert_hf_to_gguf.py): llama's Q/K rows un-permuted (LlamaModel.permute; llama.cpp runs
// them with interleaved RoPE, Hugging Face with rotate_half), Gemma's norms minus the 1 the
// converter added, GPT-2's Conv1D weights transposed back. Written for llama (Mistral
// files included), qwen2, gemma, phi3 and gpt2. The forward pass is not here.
#pragma once

#include "attn/io/array.hpp"
#include "attn/model/gguf.hpp"
#include "attn/model/tensor_source.hpp"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {

/// The general.architecture values attn maps, for messages ("llama (mixtral when it has
/// experts), qwen2, qwen3, ...").
std::string_view gguf_architecture_names();

/// What llama.cpp's converter did to a tensor that reading it must undo.
using GgufFix = StoredFix;

/// Where one Hugging Face tensor comes from: a GGUF tensor, or one slice of its outermost
/// dimension (an expert of a stacked ffn_*_exps tensor, a head of StableLM's q/k norms).
struct GgufSource {
    std::string gguf_name; ///< "blk.0.attn_q.weight"
    GgufFix fix = GgufFix::none;
    std::optional<std::size_t> slice; ///< index along the GGUF shape's first (numpy) dim
};

/// The Hugging Face model_type a GGUF of general.architecture `arch` presents as ("starcoder"
/// -> "gpt_bigcode", "gemma3" -> "gemma3_text", "llama" with experts -> "mixtral"), or empty
/// for an architecture attn does not map.
std::optional<std::string> gguf_hf_model_type(std::string_view arch, bool has_experts);

/// The Hugging Face name of GGUF tensor `gguf_name` for Hugging Face `model_type` (as
/// gguf_hf_model_type gives it), and what to undo; empty for a name the architecture does
/// not map (e.g. rope_freqs.weight). A stacked tensor (ffn_gate_exps, StableLM's
/// attn_q_norm) maps to a name with "{}" where its slice's index goes, source.slice unset.
/// `two_norms`: a Falcon file with attn_norm_2 (new_decoder_architecture's ln_attn; its
/// attn_norm is then ln_mlp).
std::optional<std::pair<std::string, GgufSource>>
gguf_to_hf(std::string_view model_type, std::string_view gguf_name, bool two_norms = false);

/// config.json's keys from a GGUF's metadata ("model_type", "num_attention_heads",
/// "num_key_value_heads", "head_dim", "hidden_size", "num_hidden_layers",
/// "intermediate_size", "vocab_size", "max_position_embeddings", "rope_theta",
/// "rope_scaling", "partial_rotary_factor", "rms_norm_eps" or "layer_norm_epsilon",
/// "tie_word_embeddings", "bos_token_id", "eos_token_id"), for the one config reader
/// (model::parse_hf_config) and the architecture table. float32 metadata (eps, rope base) is
/// read as the shortest decimal that gives the same float32, as the converter was given it.
/// Throws InputError("NAME: KEY: ...") for a missing or ill-typed key, an architecture
/// attn does not map, per-layer head counts, or RoPE scaling it cannot express. `data`: the
/// file, whose rope_freqs.weight (llama 3's RoPE scaling) becomes "rope_scaling"
/// (gguf_llama3_rope_scaling); without it such a file is refused.
nlohmann::json
gguf_hf_config(const GgufHeader& h, std::string_view name, const GgufFile* data = nullptr);

/// Llama 3's rope_freqs.weight (the divisor of each rotary frequency theta^(-2i/dim), as
/// convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors computes it from rope_scaling)
/// as config.json's {"rope_type": "llama3", "factor", "low_freq_factor",
/// "high_freq_factor", "original_max_position_embeddings"}: parameters whose divisors equal
/// every factor (Llama 3.1's 1, 4, 8192 when they fit); null when every factor is 1.
/// Throws InputError("WHAT: ...") for a count other than rotary_dim / 2, a factor below 1,
/// or factors no such parameters give.
nlohmann::json gguf_llama3_rope_scaling(std::span<const float> factors,
                                        double theta,
                                        std::size_t rotary_dim,
                                        const std::string& what);

/// A metadata value as JSON: numbers, bools, strings, arrays (nested too); an array of more
/// than `max_items` elements as {"array": ELEMENT TYPE, "count": N} instead.
nlohmann::json gguf_value_json(const GgufValue& v, std::size_t max_items);

/// What `attn info` shows of a GGUF: {"format": "gguf", "version", "alignment",
/// "architecture", "hyperparameters" (the {arch}.* keys), "tokenizer" (model, pre, token and
/// merge counts, special ids: the tokenizer.ggml.* keys in short), "metadata" (every other
/// key; long arrays summarised), "tensors" ([{name, type, shape, bytes}]), "data_bytes",
/// and "config" (gguf_hf_config) or "config_error" (why the model cannot be mapped)}.
nlohmann::json
gguf_summary(const GgufHeader& h, std::string_view name, const GgufFile* data = nullptr);

/// Undoes LlamaModel.permute on w's rows ([rows] or [rows, cols]; rows = n_head · head dim):
/// within each head, row 2i + j of the file is row j · (head dim / 2) + i of the model.
/// Throws InputError naming `what` when the rows do not split into n_head even halves.
void unpermute_rows(io::Array& w, std::size_t n_head, std::string_view what);

/// unpermute_rows' map for a tensor of `shape`: the model's row `to` is the file's row
/// map[to]. Throws as unpermute_rows does.
std::vector<std::size_t>
unpermute_row_map(const std::vector<std::size_t>& shape, std::size_t n_head, std::string_view what);

/// The map that undoes convert_hf_to_gguf.py's q|k|v reordering of a fused query_key_value
/// ([rows] or [rows, cols], rows = (heads + 2 kv) · head dim): BloomModel (kv = heads:
/// per head q, k, v) and FalconModel (kv groups of heads/kv q heads, then k, then v). The
/// model's row `to` is the file's row map[to]. Throws InputError naming `what` when the rows
/// do not split so.
std::vector<std::size_t> regroup_qkv_row_map(const std::vector<std::size_t>& shape,
                                             std::size_t heads,
                                             std::size_t kv_heads,
                                             std::string_view what);

/// A GGUF file as a Hugging Face model (model::TensorSource): names and read() in Hugging
/// Face's terms; find() gives the shape read() gives and the GGUF type's name as dtype.
class GgufModel final : public TensorSource {
  public:
    /// Opens and checks the file, maps every tensor name (a tensor the architecture does not
    /// name is an error naming it), and builds the config. Throws InputError("PATH: ...").
    explicit GgufModel(const std::filesystem::path& path);

    const GgufFile& file() const { return file_; }
    /// general.architecture ("llama").
    const std::string& architecture() const { return arch_; }
    /// The config.json equivalent (gguf_hf_config).
    const nlohmann::json& config() const { return config_; }
    /// The GGUF tensor behind a Hugging Face name, or null.
    const GgufSource* source(std::string_view hf_name) const;
    /// The tensor as float32 in Hugging Face's layout, dequantized now.
    /// Throws InputError("PATH: no tensor 'NAME'") when it is absent.
    io::Array read(std::string_view hf_name) const override;
    /// Rows `rows` of a matrix read() would give, shape [rows.size(), columns]: a tensor
    /// stored as it is read (the token embedding) dequantizes only those rows' blocks; one
    /// the reading must fix is read whole first. Throws InputError as read() and
    /// GgufFile::read_rows do.
    io::Array read_rows(std::string_view hf_name, std::span<const std::size_t> rows) const override;
    /// The GGUF tensor's bytes inside the file's mapping (GgufFile::raw), its ggml type, and
    /// the fix read() applies. Never empty: a GGUF holds only ggml's types.
    std::optional<StoredTensor> stored(std::string_view hf_name) const override;
    /// The file, as messages show it.
    std::vector<std::string> files() const override { return {file_.shown()}; }
    /// config().dump().
    std::optional<std::string> config_text() const override { return config_.dump(); }

  private:
    /// The source of a tensor that is there; InputError("PATH: no tensor 'NAME'") if not.
    const GgufSource& require(std::string_view hf_name) const;
    /// The GGUF tensor behind `s`, or its slice as a tensor inside the file's data.
    GgufTensor tensor_of(const GgufSource& s) const;

    GgufFile file_;
    std::string arch_;
    nlohmann::json config_;
    std::map<std::string, GgufSource, std::less<>> sources_;
};

} // namespace attn::model

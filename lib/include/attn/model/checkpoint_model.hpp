// The model around one attention layer of a checkpoint: the layout's pre-attention norm
// (GPT-2 `ln_1`, llama `input_layernorm`), its token embeddings (GPT-2 `wte` + `wpe`,
// llama `embed_tokens`, BERT word + position + token type + LayerNorm) and whether it
// rotates Q and K (llama). The projections themselves: attn/model/safetensors.hpp.
#pragma once

#include "attn/embedding.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/norm.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {

/// A checkpoint's attention layers: the layout most of its layers use, and their
/// attention prefixes in layer order (by the first integer component: "h.2.attn." before
/// "h.10.attn.").
struct CheckpointLayers {
    ParamsLayout layout = ParamsLayout::attn;
    std::vector<std::string> prefixes;
};

/// The layers of a checkpoint header (prefixes where a layout's main weight sits, as
/// detect_layouts() recognises it). Empty when it holds none.
std::optional<CheckpointLayers> checkpoint_layers(const SafetensorsHeader& header);

/// The block of a layer: its attention prefix less the last component
/// ("transformer.h.0.attn." -> "transformer.h.0."; "" for "" or a one-component prefix).
std::string block_prefix(std::string_view attention_prefix);

/// The norm kind a layout puts before attention: gpt2 LayerNorm, llama RMSNorm; none for
/// attn, torch-mha and bert (post-norm: its hidden states are already normed).
std::optional<NormKind> layout_norm_kind(ParamsLayout layout);

/// The norm's tensor names in the block ("ln_1", "input_layernorm"); empty for none.
std::string_view layout_norm_name(ParamsLayout layout);

/// Whether the layout rotates Q and K (llama).
bool layout_uses_rope(ParamsLayout layout);

/// The eps a layout's norms use when no config.json says (GPT-2 1e-5, llama 1e-6, BERT
/// 1e-12: the Hugging Face defaults).
double layout_default_norm_eps(ParamsLayout layout);

/// The pre-attention norm of the layer whose attention weights sit at `prefix`: the
/// tensors BLOCK + "ln_1.weight"/".bias" or "input_layernorm.weight". Empty when the
/// layout has none or the checkpoint does not hold it. Records each tensor read in
/// `sources` ("params.NAME"). Throws InputError for a tensor of the wrong rank.
std::optional<Norm> load_layer_norm(const SafetensorsFile& file,
                                    ParamsLayout layout,
                                    std::string_view prefix,
                                    double eps,
                                    std::vector<io::ProblemSource>& sources);

/// The checkpoint's token embeddings for the layout, found by their names' endings
/// anywhere in the file ("wte.weight", "embed_tokens.weight",
/// "embeddings.word_embeddings.weight", ...; the root is the part before). `norm_eps`:
/// BERT's embedding LayerNorm. Throws InputError naming the missing tensor, or for a
/// layout without embeddings (attn, torch-mha).
Embeddings load_embeddings(const SafetensorsFile& file,
                           ParamsLayout layout,
                           double norm_eps,
                           std::vector<io::ProblemSource>& sources);

} // namespace attn::model

// A model's weights by its architecture's names (attn/model/architecture.hpp): one block's
// tensors read from the folder when the block is computed, fused tensors split and Conv1D
// ones transposed into nn.Linear layout, every shape checked against the config's sizes.
#pragma once

#include "attn/block.hpp"
#include "attn/embedding.hpp"
#include "attn/model/architecture.hpp"
#include "attn/model/folder.hpp"
#include "attn/model/matmul.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attn::model {

/// Layer `layer`'s weights. T = float: each matrix of a type stored_matmul multiplies
/// (every GGUF type, a shard's F16 and BF16; F32 too with `stored_f32`, else F32 is read)
/// as stored (BasicProjections::stored_q, ..., BasicMlp::stored_up, ...: views of the
/// file's bytes, llama.cpp's Q/K permutation and fused tensors' parts as row maps), the
/// rest read now. T = double: every tensor read now, each float32 value widened.
/// BasicBlockWeights' shapes with the config's sizes (E: hidden, H: heads, Hkv: kv heads,
/// D: head dim, I: the up weight's rows; fused and Conv1D tensors already split and
/// transposed):
///   attention.w_q  [H·D, E]     attention.b_q  [H·D]
///   attention.w_k  [Hkv·D, E]   attention.b_k  [Hkv·D]
///   attention.w_v  [Hkv·D, E]   attention.b_v  [Hkv·D]
///   attention.w_o  [E, H·D]     attention.b_o  [E]
///   attention_norm, mlp_norm: weight, bias [E]
///   mlp.up, mlp.gate  [I, E]    mlp.down  [E, I]
/// Throws InputError naming the tensor: missing, or a shape that disagrees with the config
/// ("model.layers.0.self_attn.q_proj.weight: expected shape [64, 64], got [32, 64]
/// (config.json: heads 4, head dim 16, hidden size 64)").
/// `activations` (attn/model/matmul.hpp): what the stored weights' products do with their
/// input (check_activations refuses a choice that would change nothing).
template <class T>
BasicBlockWeights<T> load_block(const ModelFolder& folder,
                                const ModelSpec& spec,
                                std::size_t layer,
                                bool stored_f32 = false,
                                Activations activations = Activations::f32);

/// Whether a float32 run multiplies the stored matrix `t` where it lies (stored_matmul, the
/// file's mapping: no float32 copy) instead of reading it as float32: a 2-D matrix of a type
/// the stored products take (F32 only when `stored_f32`, load_block's), whole blocks per row,
/// stored as read or with its rows reordered or transposed.
bool multiplied_in_place(const StoredTensor& t, bool stored_f32);

/// The layers' matrices (their 2-D tensors) by stored dtype, as the file names it: {"Q4_K",
/// 96}, {"Q6_K", 16}, in the order the dtypes first appear in the folder's names; nothing
/// read.
std::vector<std::pair<std::string, std::size_t>> layer_matrix_types(const ModelFolder& folder,
                                                                    const ModelSpec& spec);

/// Throws InputError when `activations` is not f32 and rounds the inputs of no layer
/// matrix's type (activations_round; nothing read: the tensors' stored types).
void check_activations(const ModelFolder& folder, const ModelSpec& spec, Activations activations);

/// The embedding tables a run on token ids `ids` needs, and the ids that index them.
/// B, L: the ids' shape; U: the distinct ids in use; E: the hidden size; P, Tt as
/// BasicEmbeddings:
///   tables.token       [U, E]   (the rows of the ids in use, by increasing id)
///   tables.position    [P, E]
///   tables.token_type  [Tt, E]
///   tables.norm        weight, bias [E]
///   ids                [B, L]   (each in [0, U))
template <class T> struct ModelEmbeddings {
    BasicEmbeddings<T> tables;
    TokenIds ids; ///< the run's ids renumbered to rows of tables.token
};

/// The embedding tables (token, learned positions, token type, embedding norm) for `ids`:
/// every id is checked against the vocabulary (check_token_ids), then only the token
/// table's rows in use are read (ModelFolder::read_rows: a GGUF dequantizes only their
/// blocks), so a large vocabulary costs the tokens, not the table. The other tables whole.
template <class T>
ModelEmbeddings<T>
load_model_embeddings(const ModelFolder& folder, const ModelSpec& spec, const TokenIds& ids);

/// The vocabulary's size: the token embedding table's rows (nothing read but its shape).
std::size_t vocabulary_size(const ModelFolder& folder, const ModelSpec& spec);

/// The final norm, if the architecture has one.
template <class T>
std::optional<BasicNorm<T>> load_final_norm(const ModelFolder& folder, const ModelSpec& spec);

/// Checks that the folder holds exactly spec.layers layers (layer N−1's attention weight
/// is there, layer N's is not). Throws InputError naming the config and the tensor.
void check_layer_count(const ModelFolder& folder, const ModelSpec& spec);

/// Layer `layer`'s name prefix: root + layer pattern ("transformer.h.3.").
std::string layer_prefix(const ModelSpec& spec, std::size_t layer);

} // namespace attn::model

// Token embeddings: integer ids [B, L] looked up in a checkpoint's embedding matrix
// [V, E], plus learned position embeddings (GPT-2 wpe, BERT position_embeddings), BERT's
// token-type row 0 and its embedding LayerNorm: the input of layer 0. Reading the
// checkpoint and the id file is attn/io's job.
#pragma once

#include "attn/norm.hpp"
#include "attn/tensor.hpp"

#include <cstdint>
#include <optional>

namespace attn {

/// Token ids [B, L].
using TokenIds = xt::xtensor<std::int64_t, 2>;

/// The embedding tables of one model. T: float or double.
///   gpt2:  token = wte, position = wpe
///   llama: token = embed_tokens
///   bert:  token = word_embeddings, position = position_embeddings,
///          token_type = token_type_embeddings (row 0: every token has type 0),
///          norm = embeddings.LayerNorm
/// V: the vocabulary, E: the model width, P: the positions, Tt: the token types:
///   token       [V, E]
///   position    [P, E]
///   token_type  [Tt, E]  (Tt >= 1)
///   norm        weight, bias [E]
template <class T> struct BasicEmbeddings {
    xt::xtensor<T, 2> token;
    std::optional<xt::xtensor<T, 2>> position;   ///< row position_offset + l added
    std::optional<xt::xtensor<T, 2>> token_type; ///< row 0 added
    std::optional<BasicNorm<T>> norm;            ///< applied to the sum
};
using Embeddings = BasicEmbeddings<float>;

/// Checks every id against a vocabulary of `vocabulary` tokens. Throws InputError:
/// "token_ids: id 50300 at [0, 3] is outside the vocabulary of 50257 tokens" (negative ids
/// too). embed() checks this itself; a reader that fetches only the rows in use checks first.
void check_token_ids(const TokenIds& ids, std::size_t vocabulary);

/// out[b, l] = token[ids[b, l]] (+ token_type[0]) (+ position[position_offset + l]), summed
/// in double, normed in double when e.norm is set, rounded once. Returns [B, L, E].
/// Throws InputError: "token_ids: id 50300 at [0, 3] is outside the vocabulary of 50257
/// tokens" (negative ids too), "token_ids: position 1024 of token [0, 1024] is outside the
/// 1024 position embeddings", or a shape message naming the table whose E disagrees.
Tensor3 embed(const TokenIds& ids, const Embeddings& e, std::size_t position_offset = 0);
BasicTensor3<double>
embed(const TokenIds& ids, const BasicEmbeddings<double>& e, std::size_t position_offset = 0);

} // namespace attn

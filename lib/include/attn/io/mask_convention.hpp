// How the values of the `mask` and `key_padding_mask` fields are read: keep-masks (ours),
// PyTorch nn.MultiheadAttention's ignore-masks, or additive masks (SDPA float masks, ggml).
// Everything is converted here, at the I/O edge, into the core's keep-masks and bias; the
// core never sees a convention. It does not touch `bias` (always additive) or `causal`.
#pragma once

#include "attn/io/array.hpp"
#include "attn/tensor.hpp"

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>

namespace attn::io {

enum class MaskConvention {
    keep,      ///< true / nonzero = may attend, false / 0 = blocked (the default)
    torch_mha, ///< true / nonzero = blocked (ignored), false / 0 = may attend
    additive,  ///< the value is added to the scaled score: 0 = keep, -inf = block
};

/// "keep", "torch-mha" or "additive". Throws
/// InputError("mask_convention: expected \"keep\", \"torch-mha\" or \"additive\", got ...").
MaskConvention decode_mask_convention(const nlohmann::json& j);

/// How a mask field is loaded under `convention`: booleans allowed (keep, torch-mha), or
/// numbers only (additive).
ArrayKind mask_array_kind(MaskConvention convention);

/// A mask field as the core takes it: a keep-mask, or additive values as a bias.
struct DecodedMask {
    std::optional<Mask> keep;   ///< 1 = may attend
    std::optional<Tensor> bias; ///< added to the scaled scores
};

/// Converts a `mask` or `key_padding_mask` array whose shape the caller has checked and
/// lifted to `shape` ([B|1, H|1, Lq, Lk] for mask, [B|1, 1, 1, Lk] for key_padding_mask).
///   keep:      keep-mask, nonzero (NaN too) = may attend.
///   torch-mha: keep-mask, nonzero (NaN too) = blocked.
///   additive:  an array holding only 0 and -inf becomes the equivalent keep-mask (exactly
///              the same result, and no [Lq, Lk] float buffer for the streaming kernel);
///              any other values become a bias of `shape`. A boolean array is refused:
///              InputError("FIELD: mask_convention \"additive\" takes numbers ...").
DecodedMask
decode_mask(const Array& a, const Shape& shape, MaskConvention convention, std::string_view field);

/// bias += addend, broadcasting size-1 batch, head and query dimensions: the result is
/// [max(B), max(H), lq, lk]. An empty `bias` becomes `addend` broadcast to that shape. A new
/// buffer larger than memory_limit() is refused before it is allocated, naming `field`:
/// InputError("FIELD: mask_convention \"additive\" ... needs a bias of shape ...").
/// T: float, or double for precision f64 (summed in double).
template <class T>
void add_bias(std::optional<BasicTensor<T>>& bias,
              const BasicTensor<T>& addend,
              std::size_t lq,
              std::size_t lk,
              std::string_view field);
extern template void
add_bias<float>(std::optional<Tensor>&, const Tensor&, std::size_t, std::size_t, std::string_view);
extern template void add_bias<double>(std::optional<BasicTensor<double>>&,
                                      const BasicTensor<double>&,
                                      std::size_t,
                                      std::size_t,
                                      std::string_view);

} // namespace attn::io

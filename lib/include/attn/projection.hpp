// Linear projections and head split/merge: the layer above attend(). Layouts follow
// PyTorch nn.Linear: weight [out, in], y = x·wᵀ + b.
#pragma once

#include "attn/tensor.hpp"

#include <optional>

namespace attn {

/// y = x·wᵀ + b.  x: [B, L, in]   w: [out, in]   b: [out] or absent  ->  [B, L, out].
/// Throws InputError (naming `what`) when w's in-dimension or b's length disagree.
Tensor3 linear(const Tensor3& x, const Matrix& w, const Vector* b, const char* what = "weight");

/// [B, L, H·Dh] -> [B, H, L, Dh]. Throws InputError if the feature size is not
/// divisible by num_heads.
Tensor split_heads(const Tensor3& x, std::size_t num_heads, const char* what = "input");

/// [B, H, L, Dh] -> [B, L, H·Dh].
Tensor3 merge_heads(const Tensor& y);

/// The float64 overloads (`precision: f64`; dgemm), same shapes and errors.
BasicTensor3<double> linear(const BasicTensor3<double>& x,
                            const BasicMatrix<double>& w,
                            const BasicVector<double>* b,
                            const char* what = "weight");
BasicTensor<double>
split_heads(const BasicTensor3<double>& x, std::size_t num_heads, const char* what = "input");
BasicTensor3<double> merge_heads(const BasicTensor<double>& y);

} // namespace attn

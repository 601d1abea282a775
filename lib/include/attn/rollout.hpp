// Attention rollout (Abnar & Zuidema 2020), one layer's step: the heads fused, half the
// identity added, rows normalized, and the product with the layers before. Numbers only:
// which layers, and the result's shape, are the problem layer's (problem/layer_analysis).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace attn {

/// How a layer's heads are fused into one map: their mean, maximum or minimum.
enum class RolloutFusion { mean, max, min };

/// The fusion called `name` ("mean", "max", "min"); throws InputError
/// "rollout_fusion: expected mean, max or min, got 'NAME'".
RolloutFusion rollout_fusion(std::string_view name);

/// One layer's step for one batch row, in float64:
///   Â = normalize_rows(0.5 · fuse_h(A) + 0.5 · I),  r = Â (first layer) or Â · r.
/// `weights`: the layer's [H, L, L] weights of that batch row (C order), `r`: [L, L].
/// `work` is reused scratch (L·L + 64·L doubles), so r and work are the two L×L matrices
/// the step holds. A row of Â whose sum is 0 stays 0 (it cannot be: the identity's half).
template <class T>
void rollout_step(const T* weights,
                  std::size_t heads,
                  std::size_t length,
                  RolloutFusion fusion,
                  bool first,
                  double* r,
                  std::vector<double>& work);

} // namespace attn

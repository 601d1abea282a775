// What a layer's weights feed besides the result: "return": ["head_stats"] (per-head
// statistics of each block of rows as the kernel makes it) and ["rollout"] (attention
// rollout, one layer's step at a time). solve(), a layer stack and a model run all ask this
// one class around their kernel call. Does not: stack layers' results (layers.cpp).
#pragma once

#include "attn/attention.hpp"
#include "attn/embedding.hpp"
#include "attn/problem/head_stats.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/selection.hpp"
#include "attn/problem/solve.hpp"
#include "attn/rollout.hpp"

#include <optional>
#include <vector>

namespace attn::problem {

/// Attention rollout over layers handed in ascending order: R [B, L, L] in float64, and
/// the step's scratch: two L×L matrices per batch row at most.
class Rollout {
  public:
    Rollout(RolloutFusion fusion, std::size_t batch, std::size_t length);
    /// One layer's weights [B, H, L, L].
    template <class T> void add_layer(const xt::xtensor<T, 4>& weights);
    /// R as [B, L, L] (B dropped when !batched), float64 values kept when `f64`.
    io::Array result(bool batched, bool f64) const;

  private:
    RolloutFusion fusion_;
    std::size_t batch_, length_;
    bool first_ = true;
    std::vector<double> r_;
    std::vector<double> work_;
};

/// One layer's kernel call with p's "return": ["head_stats", "rollout"]. Lives across the
/// call: the spec it gives points into it.
template <class T> class LayerAnalysis {
  public:
    /// `ids`: the token ids [B, L] (null: none); `rollout`: where this layer's step goes
    /// (null: no rollout).
    LayerAnalysis(const Problem& p, const TokenIds* ids, Rollout* rollout);
    LayerAnalysis(const LayerAnalysis&) = delete;
    LayerAnalysis& operator=(const LayerAnalysis&) = delete;

    /// The spec the kernel runs with: weights made whenever this needs them; kept in the
    /// result for rollout, else handed block by block to the statistics and then to the
    /// user's destination (user.weights_to), never kept whole. With "select_heads" or
    /// "query_rows" only the selected heads' rows go on (to the destination, or into the
    /// kept weights [B, H', R, Lk]).
    BasicAttentionSpec<T> spec(BasicAttentionSpec<T> user);
    /// After the kernel: the statistics of weights the result holds, the rollout step, the
    /// weights handed to the user's destination and dropped unless the user asked for them.
    void after(std::optional<xt::xtensor<T, 4>>& weights);
    /// This layer's "head_stats" arrays into s (the selected heads, over every row).
    void into(Solution& s) const;

  private:
    /// Whole rows of the weights [B, H, Lq, Lk] to the user: the selected part of them.
    void pass_on(std::size_t first, const T* values, std::size_t count);

    const Problem& p_;
    Rollout* rollout_;
    std::optional<HeadStatRows> stats_;
    bool user_weights_ = false;
    const WeightsDestination<T>* user_to_ = nullptr;
    WeightsDestination<T> tee_;
    Selection select_;
    std::optional<xt::xtensor<T, 4>> kept_; ///< the selected weights, without a destination
};

/// Whether p asks for anything LayerAnalysis computes.
bool analyses_layers(const Problem& p);

} // namespace attn::problem

// The shape plan of a decoded problem: the core's layer plan (attn/layer.hpp) for
// projected sources, the heads as given for rank-4 inputs, and the output and weights
// shapes in the contract's form. `explain` prints it; the memory estimate counts it.
#pragma once

#include "attn/layer.hpp"
#include "attn/problem/problem.hpp"

#include <cstddef>
#include <vector>

namespace attn::problem {

struct ProblemPlan : LayerPlan {
    /// The output as solve() returns it: [B, Lq, Eo] (B dropped when unbatched), or
    /// [B, H, Lq, Dv] for rank-4 inputs.
    std::vector<std::size_t> output;
    /// The weights as solve() returns them: [B, H, Lq, Lk], B dropped when unbatched and H
    /// for one head.
    std::vector<std::size_t> weights;
};

/// Plans `problem` (plan_layer() for rank-2/3 sources: its checks and messages, in
/// ProblemPlan::error; check() throws it). For rank-4 inputs Eo is Dv and the source and
/// projected features stay 0. Never throws.
ProblemPlan plan_problem(const Problem& problem);

/// A shape in the user's rank: drops the leading batch dim of an unbatched problem.
std::vector<std::size_t> user_rank(std::vector<std::size_t> dims, bool batched);

} // namespace attn::problem

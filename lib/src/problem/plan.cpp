// The shape plan of a decoded problem, from the core's layer plan.
#include "attn/problem/plan.hpp"

namespace attn::problem {

ProblemPlan plan_problem(const Problem& p) {
    ProblemPlan plan;
    if (p.direct_heads) {
        plan.b = p.q4.shape()[0];
        plan.h = p.q4.shape()[1];
        plan.lq = p.q4.shape()[2];
        plan.d = p.q4.shape()[3];
        plan.bk = p.k4.shape()[0];
        plan.hkv = p.k4.shape()[1];
        plan.lk = p.k4.shape()[2];
        plan.dv = p.v4.shape()[3];
        plan.eo = plan.dv;
        plan.output = {plan.b, plan.h, plan.lq, plan.dv};
    } else {
        static_cast<LayerPlan&>(plan) =
            plan_layer<float>({p.query_src.shape(),
                               p.key_src.shape(),
                               p.value_src.shape(),
                               p.num_heads,
                               p.num_kv_heads},
                              p.projections ? &*p.projections : nullptr);
        plan.output = user_rank({plan.b, plan.lq, plan.eo}, p.batched);
    }
    // The result's rule (solve.cpp's finish_solution): rank-4 inputs and selected heads
    // keep H whatever it is; "select_heads" and "query_rows" keep part of H and Lq.
    const std::size_t heads = p.select_heads.empty() ? plan.h : p.select_heads.size();
    const std::size_t rows = p.query_rows ? (*p.query_rows)[1] - (*p.query_rows)[0] : plan.lq;
    plan.weights = {plan.b, heads, rows, plan.lk};
    if (heads == 1 && !p.direct_heads && p.select_heads.empty()) {
        plan.weights.erase(plan.weights.begin() + 1);
    }
    plan.weights = user_rank(plan.weights, p.batched);
    return plan;
}

std::vector<std::size_t> user_rank(std::vector<std::size_t> dims, bool batched) {
    if (!batched) {
        dims.erase(dims.begin());
    }
    return dims;
}

} // namespace attn::problem

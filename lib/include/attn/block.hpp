// One transformer block: its attention layer (attend_layer), residuals, norms and MLP, in
// the three forms the supported architectures use. Numbers only: which tensors a block
// has and how a checkpoint names them is attn/model/architecture.hpp's business, the loop
// over blocks attn/problem/model_run.hpp's.
#pragma once

#include "attn/layer.hpp"
#include "attn/norm.hpp"
#include "attn/tensor.hpp"

#include <functional>
#include <optional>

namespace attn {

/// The MLP's activation, as Hugging Face's ACT2FN names them.
enum class Activation {
    gelu_erf, ///< "gelu": 0.5·x·(1 + erf(x/√2))
    gelu_tanh, ///< "gelu_new", "gelu_pytorch_tanh": 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    relu,      ///< "relu"
    silu,      ///< "silu", "swish": x·sigmoid(x)
    /// BLOOM's BloomGelu: 0.5·x·(1 + tanh(0.79788456·x·(1 + 0.044715·x²))), its rounded √(2/π)
    gelu_bloom,
};

/// How a block joins attention, MLP, norms and the residual stream x.
enum class Residual {
    /// GPT-2, llama, OPT (do_layer_norm_before): h = x + attn(n1(x)); y = h + mlp(n2(h)).
    /// With post norms (Gemma 2's sandwich, OLMo 2 without n1, n2): h = x + p1(attn(n1(x)));
    /// y = h + p2(mlp(n2(h))).
    pre_norm,
    /// BERT, RoBERTa, DistilBERT, OPT-350m: h = n1(x + attn(x)); y = n2(h + mlp(h)).
    post_norm,
    /// GPT-NeoX (use_parallel_residual), GPT-J: y = x + attn(n1(x)) + mlp(n2(x)); without
    /// n2 (GPT-J's one ln_1) the MLP takes n1(x) too.
    parallel,
};

/// The MLP: down(act(up·x + b_up)) + b_down, or gated (llama): down(act(gate·x) ⊙ up·x).
/// Weights in nn.Linear layout [out, in]. E: the model width, I: the MLP's width (up's rows):
///   up    [I, E]   up_bias    [I]
///   gate  [I, E]   gate_bias  [I]
///   down  [E, I]   down_bias  [E]
/// stored_up, stored_gate, stored_down (float32 runs of a model file): the weight as its
/// file stores it (attn/stored_weight.hpp), used instead of up, gate, down (then empty or
/// absent); a gated MLP has gate or stored_gate.
template <class T> struct BasicMlp {
    BasicMatrix<T> up;
    std::optional<BasicVector<T>> up_bias;
    std::optional<BasicMatrix<T>> gate; ///< gated MLP when present
    std::optional<BasicVector<T>> gate_bias;
    BasicMatrix<T> down;
    std::optional<BasicVector<T>> down_bias;
    std::optional<StoredWeight> stored_up, stored_gate, stored_down;
};

/// A routed mixture of experts in place of the MLP (Mixtral's MixtralSparseMoeBlock,
/// Qwen2-MoE's Qwen2MoeSparseMoeBlock), per token x: p = softmax(router·x) (in double),
/// its top_k experts (largest p first, ties to the lower index), their p divided by their
/// sum when `normalize` (Mixtral always, Qwen2-MoE with norm_topk_prob), then
///   out = Σ over experts e in index order of the tokens routed to e: p_e · expert_e(x)
///         (+ sigmoid(shared_gate·x) · shared(x), without shared_gate: + shared(x))
/// Only the experts some token routes to are fetched (`expert`, once per call), so a
/// model's unused experts are never read. N: experts; E: the width:
///   router       [N, E]
///   shared_gate  [1, E]
template <class T> struct BasicMoe {
    BasicMatrix<T> router;
    std::size_t top_k = 2;
    bool normalize = true;
    /// Expert e's weights (a BasicMlp, gated); called once per routed expert per call.
    std::function<BasicMlp<T>(std::size_t)> expert;
    std::optional<BasicMlp<T>> shared;         ///< Qwen2-MoE's shared expert
    std::optional<BasicMatrix<T>> shared_gate; ///< its gate (absent: 1)
};

/// One block's weights. T: float or double. E: the model width; H, Hkv: query and key/value
/// heads; D, Dv: query/key and value head dims (a checkpoint's D = Dv = head_dim):
///   attention.w_q  [H·D, E]     attention.b_q  [H·D]
///   attention.w_k  [Hkv·D, E]   attention.b_k  [Hkv·D]
///   attention.w_v  [Hkv·Dv, E]  attention.b_v  [Hkv·Dv]
///   attention.w_o  [E, H·Dv]    attention.b_o  [E]
///   attention_norm, mlp_norm, attention_post_norm, mlp_post_norm: weight [E], bias [E]
///   q_norm [D] or [H·D], k_norm [D] or [Hkv·D]
///   mlp: up, gate [I, E], down [E, I] (BasicMlp)
template <class T> struct BasicBlockWeights {
    BasicProjections<T> attention;
    /// pre_norm/parallel: before attention; post_norm: after attention's residual.
    std::optional<BasicNorm<T>> attention_norm;
    /// pre_norm/parallel: before the MLP; post_norm: after the MLP's residual.
    std::optional<BasicNorm<T>> mlp_norm;
    /// pre_norm only: on attention's and the MLP's outputs before their residual (Gemma 2's
    /// post_attention_layernorm and post_feedforward_layernorm, OLMo 2's).
    std::optional<BasicNorm<T>> attention_post_norm, mlp_post_norm;
    /// The projected Q's and K's norms (BasicLayerSpec::q_norm; the scope is the layer
    /// spec's): weight [D] or [H·D] (K: [Hkv·D]).
    std::optional<BasicNorm<T>> q_norm, k_norm;
    BasicMlp<T> mlp;
    std::optional<BasicMoe<T>> moe; ///< when set, the block's MLP (`mlp` unused)
};

struct BlockSpec {
    Residual residual = Residual::pre_norm;
    Activation activation = Activation::gelu_erf;
};

/// One block's result over x [B, L, E]:
///   hidden             [B, L, E]
///   attention.output   [B, L, E]
///   attention.weights  [B, H, L, L]  (when the layer spec wants weights)
template <class T> struct BasicBlockResult {
    BasicTensor3<T> hidden;        ///< the next block's input
    BasicLayerResult<T> attention; ///< the attention layer's result (weights, diagnostics)
};

/// The activation applied in place to `n` values (each computed in double, rounded once),
/// in fixed chunks on `threads` threads (0: every hardware thread). SiLU and the tanh forms
/// of GELU are computed as x·sigmoid(β·(x + γ·x³)) (0.5·(1 + tanh(u)) = sigmoid(2u), without
/// the cancellation of 1 + tanh(u) for large negative x), GELU's erf form as
/// 0.5·x·erfc(-x/√2); for float the sigmoid forms run on SIMD target `simd` (Highway's
/// double exp, within 1 ulp of std::exp: the same floats but for a rare last bit).
template <class T>
void activate(T* x, std::size_t n, Activation a, unsigned threads = 1, Simd simd = Simd::best);

/// The MLP over x [B, L, E] -> [B, L, E] (BLAS GEMMs, or the stored weights' products on
/// SIMD target `simd`, on `threads` threads, 0: every hardware thread; as linear()).
/// Throws InputError naming the weight whose shape does not fit ("mlp.up: ...").
template <class T>
BasicTensor3<T> mlp_forward(const BasicTensor3<T>& x,
                            const BasicMlp<T>& mlp,
                            Activation a,
                            unsigned threads = 1,
                            Simd simd = Simd::best);

/// The mixture of experts over x [B, L, E] -> [B, L, E] (BasicMoe). Throws InputError
/// naming the weight whose shape does not fit, or when top_k is 0 or above the experts.
template <class T>
BasicTensor3<T>
moe_forward(const BasicTensor3<T>& x, const BasicMoe<T>& moe, Activation a, unsigned threads = 1);

/// One block over x [B, L, E]: `layer` gives heads, the attention spec (causal, masks,
/// threads, want_weights, diagnostics) and RoPE; its norm and projections are ignored
/// (the block's own are used). Returns the block's output and its attention's result.
/// Throws InputError naming the weight whose shape does not fit.
template <class T>
BasicBlockResult<T> transformer_block(const BasicTensor3<T>& x,
                                      const BasicBlockWeights<T>& weights,
                                      const BlockSpec& spec,
                                      const std::type_identity_t<BasicLayerSpec<T>>& layer);

} // namespace attn

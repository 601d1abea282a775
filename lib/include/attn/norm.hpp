// Pre-attention norms over the last (feature) axis of [B, L, E] tensors: LayerNorm as
// torch.nn.LayerNorm computes it (biased variance) and RMSNorm as Hugging Face's
// LlamaRMSNorm does (x / sqrt(mean(x²) + eps) · w). Sums are taken in double and each
// result is rounded once to the tensor's type. No `1 + w` (Gemma) variant.
#pragma once

#include "attn/tensor.hpp"

#include <optional>

namespace attn {

enum class NormKind { layer_norm, rms_norm };

/// One norm with its checkpoint weights, over the last axis of x [B, L, E]. T: float or
/// double.
///   weight  [E]
///   bias    [E]
template <class T> struct BasicNorm {
    NormKind kind = NormKind::layer_norm;
    xt::xtensor<T, 1> weight;
    std::optional<xt::xtensor<T, 1>> bias; ///< LayerNorm only (absent: zero)
    double eps = 1e-5;                     ///< >= 0
    const char* name = "norm";             ///< e.g. "ln_1", for messages
};
using Norm = BasicNorm<float>;

/// LayerNorm: y = (x − mean) / sqrt(var + eps) · w + b, mean and biased variance over E.
/// x: [B, L, E]   weight, bias: [E]. Throws InputError naming `what`.weight/.bias when a
/// length is not E, or `what`.eps when eps is negative or not finite.
Tensor3 layer_norm(const Tensor3& x,
                   const Vector& weight,
                   const Vector* bias,
                   double eps,
                   const char* what = "layer_norm");
BasicTensor3<double> layer_norm(const BasicTensor3<double>& x,
                                const BasicVector<double>& weight,
                                const BasicVector<double>* bias,
                                double eps,
                                const char* what = "layer_norm");

/// RMSNorm: y = x / sqrt(mean(x²) + eps) · w over E. x: [B, L, E]   weight: [E].
/// Throws InputError as layer_norm.
Tensor3 rms_norm(const Tensor3& x, const Vector& weight, double eps, const char* what = "rms_norm");
BasicTensor3<double> rms_norm(const BasicTensor3<double>& x,
                              const BasicVector<double>& weight,
                              double eps,
                              const char* what = "rms_norm");

/// The norm `n` describes, applied to x (bias ignored by an RMSNorm), its rows shared by
/// `threads` threads (0: every hardware thread; the same values for any count).
Tensor3 apply_norm(const Tensor3& x, const Norm& n, unsigned threads = 1);
BasicTensor3<double>
apply_norm(const BasicTensor3<double>& x, const BasicNorm<double>& n, unsigned threads = 1);

/// x normed by `n`, or x itself when there is no norm: without the copy a by-value result
/// would make (four of a model layer's tensors each layer). Refers to x: use it within
/// x's lifetime, e.g. as a temporary in one expression.
template <class T> class NormedOrSame {
  public:
    NormedOrSame(const BasicTensor3<T>& x, const BasicNorm<T>* n, unsigned threads) : x_(&x) {
        if (n != nullptr) {
            normed_ = apply_norm(x, *n, threads);
            x_ = &*normed_;
        }
    }
    NormedOrSame(const BasicTensor3<T>& x, const std::optional<BasicNorm<T>>& n, unsigned threads)
        : NormedOrSame(x, n ? &*n : nullptr, threads) {}
    NormedOrSame(const NormedOrSame&) = delete;
    NormedOrSame& operator=(const NormedOrSame&) = delete;
    NormedOrSame(NormedOrSame&&) = delete;
    NormedOrSame& operator=(NormedOrSame&&) = delete;
    ~NormedOrSame() = default;
    const BasicTensor3<T>& operator*() const { return *x_; }

  private:
    std::optional<BasicTensor3<T>> normed_;
    const BasicTensor3<T>* x_;
};

/// The norm over each head's features: x [B, L, H·D], each of its H groups of D features
/// normalized on its own (Qwen3's q_norm after the head split). weight, bias: [D] (one
/// for every head) or [H·D] (each head its own: StableLM's per-head LayerNorms).
/// Throws InputError as layer_norm, or when H does not divide the features.
Tensor3 apply_head_norm(const Tensor3& x, const Norm& n, std::size_t heads, unsigned threads = 1);
BasicTensor3<double> apply_head_norm(const BasicTensor3<double>& x,
                                     const BasicNorm<double>& n,
                                     std::size_t heads,
                                     unsigned threads = 1);

} // namespace attn

// One transformer block: attention through attend_layer(), the MLP through linear() (BLAS),
// and the residual forms of attn/block.hpp. The element-wise stages (norms, activation,
// gate, residual sums) run in fixed chunks on the layer's threads.
#include "attn/block.hpp"

#include "attn/error.hpp"
#include "attn/norm.hpp"
#include "attn/parallel.hpp"
#include "attn/projection.hpp"
#include "kernel_ops.hpp"

#include <cmath>
#include <numbers>
#include <optional>
#include <type_traits>
#include <utility>

namespace attn {

namespace {

/// β and γ of an activation that is x·sigmoid(β·(x + γ·x³)) (KernelOps::swish), or nothing:
/// SiLU (1, 0) and the tanh forms of GELU, as 0.5·(1 + tanh(u)) = sigmoid(2u).
std::optional<std::pair<double, double>> swish_form(Activation a) {
    switch (a) {
    case Activation::silu:
        return std::pair{1.0, 0.0};
    case Activation::gelu_tanh:
        return std::pair{2.0 * std::sqrt(2.0 / std::numbers::pi), 0.044715};
    case Activation::gelu_bloom:
        return std::pair{2.0 * 0.79788456, 0.044715};
    case Activation::gelu_erf:
    case Activation::relu:
        break;
    }
    return std::nullopt;
}

/// The activation of x in double: x / (1 + exp(-β·(x + γ·x³))) for the sigmoid forms (the
/// tanh forms' 0.5·x·(1 + tanh(u)) without the cancellation of 1 + tanh(u) for u < 0),
/// 0.5·x·erfc(-x/√2) for erf's (likewise 1 + erf), or ReLU.
double activation_value(double x, Activation a) {
    if (const auto form = swish_form(a)) {
        const auto [beta, gamma] = *form;
        const double z = gamma == 0.0 ? x : x + gamma * x * x * x;
        return x / (1.0 + std::exp(-beta * z));
    }
    if (a == Activation::gelu_erf) {
        return 0.5 * x * std::erfc(-x / std::numbers::sqrt2);
    }
    return x > 0.0 ? x : 0.0;
}

/// Values per task of an element-wise stage: a row-wise stage's chunk (parallel.hpp) of
/// one-value rows.
std::size_t chunk_values() {
    return detail::rows_per_chunk(1);
}

/// a + b, element by element, on `threads` threads.
template <class T>
BasicTensor3<T> add(const BasicTensor3<T>& a, const BasicTensor3<T>& b, unsigned threads) {
    ATTN_ASSERT(a.shape() == b.shape());
    BasicTensor3<T> out = BasicTensor3<T>::from_shape(a.shape());
    T* o = out.data();
    const T* p = a.data();
    const T* q = b.data();
    detail::parallel_chunks(
        out.size(), chunk_values(), threads, [&](std::size_t i0, std::size_t i1) {
            for (std::size_t i = i0; i < i1; ++i) {
                o[i] = p[i] + q[i];
            }
        });
    return out;
}

} // namespace

template <class T> void activate(T* x, std::size_t n, Activation a, unsigned threads, Simd simd) {
    const auto form = swish_form(a);
    detail::parallel_chunks(n, chunk_values(), threads, [&](std::size_t i0, std::size_t i1) {
        if constexpr (std::is_same_v<T, float>) {
            if (form) {
                detail::kernel_ops(simd).swish(x + i0, i1 - i0, form->first, form->second);
                return;
            }
        }
        for (std::size_t i = i0; i < i1; ++i) {
            x[i] = static_cast<T>(activation_value(static_cast<double>(x[i]), a));
        }
    });
}

template <class T>
BasicTensor3<T> mlp_forward(
    const BasicTensor3<T>& x, const BasicMlp<T>& mlp, Activation a, unsigned threads, Simd simd) {
    const auto bias = [](const std::optional<BasicVector<T>>& b) { return b ? &*b : nullptr; };
    BasicTensor3<T> up =
        linear_of(x, mlp.up, mlp.stored_up, bias(mlp.up_bias), "mlp.up", threads, simd);
    if (mlp.gate || mlp.stored_gate) {
        static const BasicMatrix<T> none;
        BasicTensor3<T> gate = linear_of(x,
                                         mlp.gate ? *mlp.gate : none,
                                         mlp.stored_gate,
                                         bias(mlp.gate_bias),
                                         "mlp.gate",
                                         threads,
                                         simd);
        T* u = up.data();
        T* g = gate.data();
        detail::parallel_chunks(
            up.size(), chunk_values(), threads, [&](std::size_t i0, std::size_t i1) {
                activate(g + i0, i1 - i0, a, 1, simd);
                for (std::size_t i = i0; i < i1; ++i) {
                    u[i] = g[i] * u[i];
                }
            });
    } else {
        activate(up.data(), up.size(), a, threads, simd);
    }
    return linear_of(up, mlp.down, mlp.stored_down, bias(mlp.down_bias), "mlp.down", threads, simd);
}

template <class T>
BasicBlockResult<T> transformer_block(const BasicTensor3<T>& x,
                                      const BasicBlockWeights<T>& w,
                                      const BlockSpec& spec,
                                      const std::type_identity_t<BasicLayerSpec<T>>& layer) {
    BasicLayerSpec<T> ls = layer;
    ls.norm = nullptr;
    ls.projections = &w.attention;
    ls.q_norm = w.q_norm ? &*w.q_norm : nullptr;
    ls.k_norm = w.k_norm ? &*w.k_norm : nullptr;
    const unsigned threads = layer.attention.threads; // the MLP's GEMM threads and target
    const Simd simd = layer.attention.simd;
    const auto add = [threads](const BasicTensor3<T>& a, const BasicTensor3<T>& b) {
        return attn::add(a, b, threads);
    };
    const auto ffn = [&](const BasicTensor3<T>& h) {
        return w.moe ? moe_forward(h, *w.moe, spec.activation, threads)
                     : mlp_forward(h, w.mlp, spec.activation, threads, simd);
    };
    BasicBlockResult<T> r;
    switch (spec.residual) {
    case Residual::pre_norm: {
        // Each optional norm applied, or the tensor itself (no copy).
        const NormedOrSame<T> n1(x, w.attention_norm, threads);
        r.attention = attend_layer(*n1, *n1, *n1, ls);
        const BasicTensor3<T> h =
            add(x, *NormedOrSame<T>(r.attention.output, w.attention_post_norm, threads));
        const BasicTensor3<T> f = ffn(*NormedOrSame<T>(h, w.mlp_norm, threads));
        r.hidden = add(h, *NormedOrSame<T>(f, w.mlp_post_norm, threads));
        break;
    }
    case Residual::post_norm: {
        r.attention = attend_layer(x, x, x, ls);
        BasicTensor3<T> h = add(x, r.attention.output);
        if (w.attention_norm) {
            h = apply_norm(h, *w.attention_norm, threads);
        }
        r.hidden = add(h, ffn(h));
        if (w.mlp_norm) {
            r.hidden = apply_norm(r.hidden, *w.mlp_norm, threads);
        }
        break;
    }
    case Residual::parallel: {
        const NormedOrSame<T> n1(x, w.attention_norm, threads);
        r.attention = attend_layer(*n1, *n1, *n1, ls);
        // The MLP's own norm of x, or the attention's normed x (either without a copy).
        const NormedOrSame<T> n2(x, w.mlp_norm, threads);
        const BasicTensor3<T> m = ffn(w.mlp_norm ? *n2 : *n1);
        // Hugging Face's order: mlp + attention + residual.
        r.hidden = add(add(m, r.attention.output), x);
        break;
    }
    }
    return r;
}

template void activate<float>(float*, std::size_t, Activation, unsigned, Simd);
template void activate<double>(double*, std::size_t, Activation, unsigned, Simd);
template BasicTensor3<float>
mlp_forward<float>(const BasicTensor3<float>&, const BasicMlp<float>&, Activation, unsigned, Simd);
template BasicTensor3<double> mlp_forward<double>(
    const BasicTensor3<double>&, const BasicMlp<double>&, Activation, unsigned, Simd);
template BasicBlockResult<float> transformer_block<float>(const BasicTensor3<float>&,
                                                          const BasicBlockWeights<float>&,
                                                          const BlockSpec&,
                                                          const BasicLayerSpec<float>&);
template BasicBlockResult<double> transformer_block<double>(const BasicTensor3<double>&,
                                                            const BasicBlockWeights<double>&,
                                                            const BlockSpec&,
                                                            const BasicLayerSpec<double>&);

} // namespace attn

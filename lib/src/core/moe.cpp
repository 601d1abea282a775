// The mixture of experts of attn/block.hpp (BasicMoe): routing per token, each routed
// expert fetched once and run on its tokens through mlp_forward (BLAS), the weighted
// outputs added in expert order as Hugging Face's index_add_ adds them.
#include "attn/block.hpp"
#include "attn/error.hpp"
#include "attn/projection.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace attn {

namespace {

/// One token's route: its experts and their weights (rounded to T, as the model casts).
template <class T> struct Route {
    std::vector<std::size_t> experts;
    std::vector<T> weights;
};

/// softmax(logits) in double, the top k (largest first, ties to the lower index), divided
/// by their sum when `normalize`.
template <class T> Route<T> route(const T* logits, std::size_t n, std::size_t k, bool normalize) {
    std::vector<double> p(n);
    const double top = static_cast<double>(*std::max_element(logits, logits + n));
    double sum = 0.0;
    for (std::size_t e = 0; e < n; ++e) {
        p[e] = std::exp(static_cast<double>(logits[e]) - static_cast<double>(top));
        sum += p[e];
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(
        order.begin(), order.end(), [&p](std::size_t a, std::size_t b) { return p[a] > p[b]; });
    Route<T> r;
    double kept = 0.0;
    for (std::size_t i = 0; i < k; ++i) {
        kept += p[order[i]] / sum;
    }
    for (std::size_t i = 0; i < k; ++i) {
        const double w = p[order[i]] / sum;
        r.experts.push_back(order[i]);
        r.weights.push_back(static_cast<T>(normalize ? w / kept : w));
    }
    return r;
}

} // namespace

template <class T>
BasicTensor3<T>
moe_forward(const BasicTensor3<T>& x, const BasicMoe<T>& moe, Activation a, unsigned threads) {
    const std::size_t e = x.shape()[2];
    const std::size_t rows = x.shape()[0] * x.shape()[1];
    const std::size_t n = moe.router.shape()[0];
    if (moe.top_k == 0 || moe.top_k > n) {
        throw InputError("moe.top_k: " + std::to_string(moe.top_k) + " experts per token of " +
                         std::to_string(n));
    }
    const BasicTensor3<T> logits = linear(x, moe.router, nullptr, "moe.router", threads);
    std::vector<Route<T>> routes;
    routes.reserve(rows);
    for (std::size_t r = 0; r < rows; ++r) {
        routes.push_back(route(logits.data() + r * n, n, moe.top_k, moe.normalize));
    }
    BasicTensor3<T> out = BasicTensor3<T>::from_shape(x.shape());
    std::fill(out.begin(), out.end(), T{0});
    for (std::size_t expert = 0; expert < n; ++expert) {
        std::vector<std::size_t> tokens;
        std::vector<T> weights;
        for (std::size_t r = 0; r < rows; ++r) {
            const auto& rt = routes[r];
            for (std::size_t i = 0; i < rt.experts.size(); ++i) {
                if (rt.experts[i] == expert) {
                    tokens.push_back(r);
                    weights.push_back(rt.weights[i]);
                }
            }
        }
        if (tokens.empty()) {
            continue; // never fetched
        }
        BasicTensor3<T> in = BasicTensor3<T>::from_shape({1, tokens.size(), e});
        for (std::size_t t = 0; t < tokens.size(); ++t) {
            std::copy_n(x.data() + tokens[t] * e, e, in.data() + t * e);
        }
        const BasicTensor3<T> y = mlp_forward(in, moe.expert(expert), a, threads);
        for (std::size_t t = 0; t < tokens.size(); ++t) {
            T* o = out.data() + tokens[t] * e;
            const T* yt = y.data() + t * e;
            for (std::size_t j = 0; j < e; ++j) {
                o[j] = static_cast<T>(o[j] + static_cast<T>(yt[j] * weights[t]));
            }
        }
    }
    if (moe.shared) {
        const BasicTensor3<T> s = mlp_forward(x, *moe.shared, a, threads);
        std::optional<BasicTensor3<T>> g;
        if (moe.shared_gate) {
            g = linear(x, *moe.shared_gate, nullptr, "moe.shared_gate", threads);
        }
        for (std::size_t r = 0; r < rows; ++r) {
            const double gate =
                g ? 1.0 / (1.0 + std::exp(-static_cast<double>(g->data()[r]))) : 1.0;
            for (std::size_t j = 0; j < e; ++j) {
                T& o = out.data()[r * e + j];
                o = static_cast<T>(o +
                                   static_cast<T>(gate * static_cast<double>(s.data()[r * e + j])));
            }
        }
    }
    return out;
}

template BasicTensor3<float>
moe_forward<float>(const BasicTensor3<float>&, const BasicMoe<float>&, Activation, unsigned);
template BasicTensor3<double>
moe_forward<double>(const BasicTensor3<double>&, const BasicMoe<double>&, Activation, unsigned);

} // namespace attn

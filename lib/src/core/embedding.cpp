// Embedding lookups: every id and position is checked before anything is written, then
// each output row is the sum of its table rows (token, token type 0, position) in double,
// normed in double when the model norms its embeddings, and rounded once.
#include "attn/embedding.hpp"

#include "attn/error.hpp"

#include <string>
#include <type_traits>
#include <xtensor/xoperation.hpp>

namespace attn {

namespace {

std::string at(std::size_t b, std::size_t l) {
    return "[" + std::to_string(b) + ", " + std::to_string(l) + "]";
}

template <class T>
xt::xtensor<T, 3>
embed_impl(const TokenIds& ids, const BasicEmbeddings<T>& e, std::size_t position_offset) {
    const std::size_t B = ids.shape(0), L = ids.shape(1);
    const std::size_t V = e.token.shape(0), E = e.token.shape(1);
    if (e.position && e.position->shape(1) != E) {
        throw InputError::shape("position embeddings", {kAnyDim, E}, shape_of(*e.position));
    }
    if (e.token_type && (e.token_type->shape(1) != E || e.token_type->shape(0) == 0)) {
        throw InputError::shape("token type embeddings", {kAnyDim, E}, shape_of(*e.token_type));
    }
    check_token_ids(ids, V);
    if (e.position && L > 0 && position_offset + L > e.position->shape(0)) {
        const std::size_t l =
            e.position->shape(0) >= position_offset ? e.position->shape(0) - position_offset : 0;
        throw InputError("token_ids: position " + std::to_string(position_offset + l) +
                         " of token " + at(0, l) + " is outside the " +
                         std::to_string(e.position->shape(0)) + " position embeddings");
    }
    // The sums stay in double through the norm: one rounding to T at the end.
    BasicTensor3<double> out = BasicTensor3<double>::from_shape({B, L, E});
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t l = 0; l < L; ++l) {
            const T* tok = e.token.data() + static_cast<std::size_t>(ids(b, l)) * E;
            const T* type = e.token_type ? e.token_type->data() : nullptr;
            const T* pos = e.position ? e.position->data() + (position_offset + l) * E : nullptr;
            double* o = out.data() + (b * L + l) * E;
            for (std::size_t i = 0; i < E; ++i) {
                double v = static_cast<double>(tok[i]);
                if (type != nullptr) {
                    v += static_cast<double>(type[i]);
                }
                if (pos != nullptr) {
                    v += static_cast<double>(pos[i]);
                }
                o[i] = v;
            }
        }
    }
    if (e.norm) {
        BasicNorm<double> n{.kind = e.norm->kind,
                            .weight = xt::cast<double>(e.norm->weight),
                            .bias = {},
                            .eps = e.norm->eps,
                            .name = e.norm->name};
        if (e.norm->bias) {
            n.bias = BasicVector<double>(xt::cast<double>(*e.norm->bias));
        }
        out = apply_norm(out, n);
    }
    if constexpr (std::is_same_v<T, double>) {
        return out;
    } else {
        return xt::xtensor<T, 3>(xt::cast<T>(out));
    }
}

} // namespace

void check_token_ids(const TokenIds& ids, std::size_t vocabulary) {
    for (std::size_t b = 0; b < ids.shape(0); ++b) {
        for (std::size_t l = 0; l < ids.shape(1); ++l) {
            const std::int64_t id = ids(b, l);
            if (id < 0 || static_cast<std::uint64_t>(id) >= vocabulary) {
                throw InputError("token_ids: id " + std::to_string(id) + " at " + at(b, l) +
                                 " is outside the vocabulary of " + std::to_string(vocabulary) +
                                 " tokens");
            }
        }
    }
}

Tensor3 embed(const TokenIds& ids, const Embeddings& e, std::size_t position_offset) {
    return embed_impl(ids, e, position_offset);
}

BasicTensor3<double>
embed(const TokenIds& ids, const BasicEmbeddings<double>& e, std::size_t position_offset) {
    return embed_impl(ids, e, position_offset);
}

} // namespace attn

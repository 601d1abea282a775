// Mask conventions (keep, torch-mha, additive) converted into the core's keep-masks and
// bias, and the broadcasting sum of bias terms. No file or shape checks here: the caller
// (decode_problem) has loaded the arrays and checked their shapes.
#include "attn/io/mask_convention.hpp"

#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/visibility.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace attn::io {

MaskConvention decode_mask_convention(const nlohmann::json& j) {
    if (j.is_string()) {
        const auto& s = j.get_ref<const std::string&>();
        if (s == "keep") {
            return MaskConvention::keep;
        }
        if (s == "torch-mha") {
            return MaskConvention::torch_mha;
        }
        if (s == "additive") {
            return MaskConvention::additive;
        }
    }
    throw InputError(
        "mask_convention: expected \"keep\", \"torch-mha\" or \"additive\", got " +
        message_text(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 80));
}

ArrayKind mask_array_kind(MaskConvention convention) {
    return convention == MaskConvention::additive ? ArrayKind::numeric : ArrayKind::mask;
}

DecodedMask
decode_mask(const Array& a, const Shape& shape, MaskConvention convention, std::string_view field) {
    DecodedMask out;
    const bool only_0_or_neg_inf = std::all_of(a.values.begin(), a.values.end(), [](float x) {
        return x == 0.0f || (std::isinf(x) && x < 0.0f);
    });
    switch (convention) {
    case MaskConvention::keep:
    case MaskConvention::torch_mha: {
        const auto blocked = static_cast<std::uint8_t>(convention == MaskConvention::keep ? 0 : 1);
        Mask m = Mask::from_shape(shape);
        std::transform(a.values.begin(), a.values.end(), m.begin(), [&](float x) {
            // NaN != 0 counts as nonzero in both conventions.
            return static_cast<std::uint8_t>(x != 0.0f ? 1 - blocked : blocked);
        });
        out.keep = std::move(m);
        break;
    }
    case MaskConvention::additive:
        if (a.is_bool) {
            throw InputError(std::string(field) +
                             ": mask_convention \"additive\" takes numbers (0 = keep, -inf = "
                             "block), got a boolean array");
        }
        if (only_0_or_neg_inf) {
            Mask m = Mask::from_shape(shape);
            std::transform(a.values.begin(), a.values.end(), m.begin(), [](float x) {
                return static_cast<std::uint8_t>(x == 0.0f ? 1 : 0);
            });
            out.keep = std::move(m);
        } else {
            Tensor t = Tensor::from_shape(shape);
            std::copy(a.values.begin(), a.values.end(), t.begin());
            out.bias = std::move(t);
        }
        break;
    }
    return out;
}

template <class T>
void add_bias(std::optional<BasicTensor<T>>& bias,
              const BasicTensor<T>& addend,
              std::size_t lq,
              std::size_t lk,
              std::string_view field) {
    const auto& sa = addend.shape();
    Shape target{sa[0], sa[1], lq, lk};
    if (bias) {
        target[0] = std::max(target[0], bias->shape()[0]);
        target[1] = std::max(target[1], bias->shape()[1]);
    }
    if (!bias && sa[2] == lq && sa[3] == lk) {
        bias = addend;
        return;
    }
    // Broadcasting can grow a [B, Lk] key padding mask to [B, 1, Lq, Lk]: check before.
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t bytes = sizeof(T);
    for (const std::size_t d : target) {
        bytes = d != 0 && bytes > max / d ? max : bytes * d;
    }
    if (bytes > memory_limit()) {
        throw InputError(std::string(field) +
                         ": mask_convention \"additive\" with values other "
                         "than 0 and -inf needs a bias of shape " +
                         shape_string({target.begin(), target.end()}) + ", " + format_size(bytes) +
                         ", more than the memory limit of " + format_size(memory_limit()) +
                         " (--max-memory)");
    }
    BasicTensor<T> sum = BasicTensor<T>::from_shape(target);
    T* dst = sum.data();
    for (std::size_t b = 0; b < target[0]; ++b) {
        for (std::size_t h = 0; h < target[1]; ++h) {
            for (std::size_t i = 0; i < lq; ++i) {
                // Rows of the broadcast terms, read as the kernels read them (size-1 dims
                // in place).
                const T* add_row = pair_row(&addend, b, h, i);
                const T* bias_row = bias ? pair_row(&*bias, b, h, i) : nullptr;
                for (std::size_t j = 0; j < lk; ++j) {
                    *dst++ = (bias_row != nullptr ? bias_row[j] : T{0}) + add_row[j];
                }
            }
        }
    }
    bias = std::move(sum);
}

template void
add_bias<float>(std::optional<Tensor>&, const Tensor&, std::size_t, std::size_t, std::string_view);
template void add_bias<double>(std::optional<BasicTensor<double>>&,
                               const BasicTensor<double>&,
                               std::size_t,
                               std::size_t,
                               std::string_view);

} // namespace attn::io

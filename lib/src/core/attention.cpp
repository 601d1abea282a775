// attend(): validates shapes against the contract and dispatches to a kernel. The
// kernels themselves (kernels_*.cpp) assume these checks passed.
#include "attn/attention.hpp"

#include "attn/error.hpp"
#include "attn/kernels.hpp"
#include "kernel_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace attn {

namespace {

/// A broadcastable [B|1, H|1, Lq|1, Lk] operand (mask or bias).
template <class T>
void check_pair_operand(
    const char* what, const T& t, std::size_t b, std::size_t h, std::size_t lq, std::size_t lk) {
    const auto& s = t.shape();
    const bool ok = (s[0] == b || s[0] == 1) && (s[1] == h || s[1] == 1) &&
                    (s[2] == lq || s[2] == 1) && s[3] == lk;
    if (!ok) {
        throw InputError::shape(what, {b, h, lq, lk}, shape_of(t));
    }
}

template <class T>
void check_all(BasicTensorView<T> q,
               BasicTensorView<T> k,
               BasicTensorView<T> v,
               const BasicAttentionSpec<T>& spec) {
    const auto [b, h, lq, d, bk, hkv, lk, dv] = detail::Dims(q, k, v);
    if ((bk != b && bk != 1) || k.shape()[3] != d) {
        throw InputError::shape("key", {b, kAnyDim, kAnyDim, d}, shape_of(k));
    }
    if (hkv == 0 || h % hkv != 0) {
        throw InputError("key: " + std::to_string(hkv) + " key/value heads do not divide " +
                         std::to_string(h) + " query heads (grouped-query attention needs " +
                         "num_heads % num_kv_heads == 0)");
    }
    if (v.shape()[0] != bk || v.shape()[1] != hkv || v.shape()[2] != lk) {
        throw InputError::shape("value", {bk, hkv, lk, kAnyDim}, shape_of(v));
    }
    if (spec.keep_mask != nullptr) {
        check_pair_operand("mask", *spec.keep_mask, b, h, lq, lk);
    }
    if (spec.bias != nullptr) {
        check_pair_operand("bias", *spec.bias, b, h, lq, lk);
    }
    if (spec.key_padding != nullptr) {
        const auto& s = spec.key_padding->shape();
        if ((s[0] != b && s[0] != 1) || s[1] != 1 || s[2] != 1 || s[3] != lk) {
            throw InputError::shape("key_padding_mask", {b, 1, 1, lk}, shape_of(*spec.key_padding));
        }
        if (spec.varlen) {
            // Each sequence's real keys come first: a real key after padding has no place in
            // FlashAttention's packed (varlen) layout.
            for (std::size_t r = 0; r < s[0]; ++r) {
                const std::uint8_t* row = spec.key_padding->data() + r * lk;
                const std::size_t n = real_keys(spec.key_padding, r, lk);
                const auto pad = std::find(row, row + n, std::uint8_t{0});
                if (pad != row + n) {
                    throw InputError("varlen: key_padding_mask row " + std::to_string(r) +
                                     " is not right-padded (padding at key " +
                                     std::to_string(pad - row) + ", a real key at " +
                                     std::to_string(n - 1) +
                                     "): varlen needs each sequence's real keys first");
                }
            }
        }
    } else if (spec.varlen) {
        throw InputError("varlen: needs a key_padding_mask (each sequence's real keys)");
    }
    if (spec.window.left < -1 || spec.window.right < -1) {
        throw InputError::window("window",
                                 "[left, right]",
                                 "[" + std::to_string(spec.window.left) + ", " +
                                     std::to_string(spec.window.right) + "]");
    }
    if (spec.softcap && !(std::isfinite(*spec.softcap) && *spec.softcap > T(0))) {
        throw InputError("softcap: expected a finite number > 0");
    }
    if (!spec.alibi_slopes.empty() && spec.alibi_slopes.size() != h) {
        throw InputError("alibi: expected " + std::to_string(h) + " slopes (one per head), got " +
                         std::to_string(spec.alibi_slopes.size()));
    }
    if (!spec.sinks.empty() && spec.sinks.size() != h) {
        throw InputError("sinks: expected " + std::to_string(h) + " logits (one per head), got " +
                         std::to_string(spec.sinks.size()));
    }
}

/// attend()'s choice of kernel: without weights nothing needs the Lq×Lk matrix, so the
/// float path streams over key blocks; entropy and top-k need a whole weights row, which
/// the materialized kernel computes from its per-thread block buffer. The float64 path
/// has one kernel for every case: blocks of query rows against all keys, in double.
template <class T> bool streams(const BasicAttentionSpec<T>& spec) {
    const bool needs_rows = spec.want_entropy || spec.top_k > 0;
    return std::is_same_v<T, float> && !spec.want_weights && !needs_rows;
}

} // namespace

std::uint64_t Workspace::total(unsigned threads) const {
    return detail::saturating_sum(shared,
                                  detail::saturating_product({per_thread, std::max(threads, 1U)}));
}

template <class T>
Workspace attend_workspace(const Shape& q,
                           const Shape& k,
                           const Shape& v,
                           const BasicAttentionSpec<T>& spec) {
    return streams(spec) ? streaming_workspace(q, k, v) : materialized_workspace(q, k, v, spec);
}

template Workspace attend_workspace(const Shape&, const Shape&, const Shape&, const AttentionSpec&);
template Workspace
attend_workspace(const Shape&, const Shape&, const Shape&, const BasicAttentionSpec<double>&);

template <class T>
void attend_check(BasicTensorView<T> q,
                  BasicTensorView<T> k,
                  BasicTensorView<T> v,
                  const BasicAttentionSpec<T>& spec) {
    check_all(q, k, v, spec);
}

template <class T> std::vector<T> alibi_default_slopes(std::size_t heads) {
    // ggml_soft_max_ext with max_bias = 8 (llama.cpp's ALiBi): n = 2^floor(log2 H). In
    // double, then rounded once to T.
    std::size_t n = 1;
    while (n * 2 <= heads) {
        n *= 2;
    }
    const double m0 = std::pow(2.0, -8.0 / static_cast<double>(n));
    const double m1 = std::pow(2.0, -4.0 / static_cast<double>(n));
    std::vector<T> slopes(heads);
    for (std::size_t h = 0; h < heads; ++h) {
        slopes[h] = static_cast<T>(h < n ? std::pow(m0, static_cast<double>(h + 1))
                                         : std::pow(m1, static_cast<double>(2 * (h - n) + 1)));
    }
    return slopes;
}

template std::vector<float> alibi_default_slopes<float>(std::size_t);
template std::vector<double> alibi_default_slopes<double>(std::size_t);

template <class T>
void attend_into(BasicTensorView<T> q,
                 BasicTensorView<T> k,
                 BasicTensorView<T> v,
                 const BasicAttentionSpec<T>& spec,
                 BasicAttentionResult<T>& result) {
    attend_check(q, k, v, spec);
    if constexpr (std::is_same_v<T, float>) {
        // A NaN or ±inf value must add nothing to the rows that do not see its key: the
        // materialized kernel takes those keys apart (a rare input: the check is one pass,
        // made only when the call would stream; the materialized kernel makes its own).
        const auto finite_values = [&] {
            return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
        };
        if (streams(spec)) {
            if (finite_values()) {
                attend_streaming_into(q, k, v, spec, result);
                return;
            }
            if (spec.pooled_to != nullptr) {
                // The pooling is the streaming kernel's (scores alone: V does not enter it);
                // the output the materialized kernel's. Twice the work, for a rare input.
                AttentionResult pooling;
                attend_streaming_into(q, k, v, spec, pooling);
                AttentionSpec rest = spec;
                rest.pooled_to = nullptr;
                attend_materialized_into(q, k, v, rest, result);
                return;
            }
        }
    }
    ATTN_ASSERT((spec.pooled_to == nullptr || !std::is_same_v<T, float>)); // only streaming pools
    attend_materialized_into(q, k, v, spec, result); // streams(spec) is false for double
}

template void attend_check(TensorView, TensorView, TensorView, const AttentionSpec&);
template void attend_check(BasicTensorView<double>,
                           BasicTensorView<double>,
                           BasicTensorView<double>,
                           const BasicAttentionSpec<double>&);
template void
attend_into(TensorView, TensorView, TensorView, const AttentionSpec&, AttentionResult&);
template void attend_into(BasicTensorView<double>,
                          BasicTensorView<double>,
                          BasicTensorView<double>,
                          const BasicAttentionSpec<double>&,
                          BasicAttentionResult<double>&);

} // namespace attn

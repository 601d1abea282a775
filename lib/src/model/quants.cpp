// ggml's type table, and dequantize_ggml over the block dequantizers of quant_blocks-inl.h
// (bit for bit ggml's reference dequantize_row_*), compiled here for the static SIMD target
// with -ffp-contract=off (lib/CMakeLists.txt) so that no product and sum fuse into an FMA.
#include "attn/model/quants.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "model/quant_blocks-inl.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

namespace attn::model {
namespace {

using io::detail::half_to_float;

constexpr std::uint32_t qk_k = 256; // the K-quants' super-block

/// Indexed by ggml_type; an empty name marks a number ggml does not (or no longer) define.
constexpr std::array<GgmlTypeTraits, 40> type_table = {{
    {"F32", 1, 4, true},
    {"F16", 1, 2, true},
    {"Q4_0", 32, 18, true},
    {"Q4_1", 32, 20, true},
    {"", 0, 0, false}, // Q4_2, removed
    {"", 0, 0, false}, // Q4_3, removed
    {"Q5_0", 32, 22, true},
    {"Q5_1", 32, 24, true},
    {"Q8_0", 32, 34, true},
    {"Q8_1", 32, 36, false},
    {"Q2_K", qk_k, 84, true},
    {"Q3_K", qk_k, 110, true},
    {"Q4_K", qk_k, 144, true},
    {"Q5_K", qk_k, 176, true},
    {"Q6_K", qk_k, 210, true},
    {"Q8_K", qk_k, 292, false},
    {"IQ2_XXS", qk_k, 66, false},
    {"IQ2_XS", qk_k, 74, false},
    {"IQ3_XXS", qk_k, 98, false},
    {"IQ1_S", qk_k, 50, false},
    {"IQ4_NL", 32, 18, false},
    {"IQ3_S", qk_k, 110, false},
    {"IQ2_S", qk_k, 82, false},
    {"IQ4_XS", qk_k, 136, false},
    {"I8", 1, 1, false},
    {"I16", 1, 2, false},
    {"I32", 1, 4, false},
    {"I64", 1, 8, false},
    {"F64", 1, 8, false},
    {"IQ1_M", qk_k, 56, false},
    {"BF16", 1, 2, true},
    {"", 0, 0, false}, // Q4_0_4_4, removed from GGUF files
    {"", 0, 0, false}, // Q4_0_4_8
    {"", 0, 0, false}, // Q4_0_8_8
    {"TQ1_0", qk_k, 54, false},
    {"TQ2_0", qk_k, 66, false},
    {"", 0, 0, false}, // IQ4_NL_4_4, removed
    {"", 0, 0, false}, // IQ4_NL_4_8
    {"", 0, 0, false}, // IQ4_NL_8_8
    {"MXFP4", 32, 17, false},
}};

} // namespace

namespace detail {

/// Every binary16 value as float32 (ggml keeps the same table): one load per element
/// instead of half_to_float's branches. 256 KiB, built on first use.
const float* f16_table() {
    static const std::vector<float> table = [] {
        std::vector<float> t(std::size_t{1} << 16);
        for (std::size_t h = 0; h < t.size(); ++h) {
            t[h] = half_to_float(static_cast<std::uint16_t>(h));
        }
        return t;
    }();
    return table.data();
}

} // namespace detail

const GgmlTypeTraits* ggml_type_traits(std::uint32_t type) {
    if (type >= type_table.size() || type_table[type].name.empty()) {
        return nullptr;
    }
    return &type_table[type];
}

std::optional<std::uint32_t> ggml_type_named(std::string_view name) {
    for (std::size_t i = 0; i < type_table.size(); ++i) {
        if (!name.empty() && type_table[i].name == name) {
            return static_cast<std::uint32_t>(i);
        }
    }
    return std::nullopt;
}

std::string_view dequantizable_type_names() {
    return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";
}

void dequantize_ggml(std::uint32_t type, std::span<const std::uint8_t> src, std::span<float> dst) {
    const GgmlTypeTraits* t = ggml_type_traits(type);
    ATTN_ASSERT(t != nullptr && t->dequantizable);
    if (t == nullptr) {
        return; // not reached (asserted above); a release build's compiler cannot know
    }
    ATTN_ASSERT(dst.size() % t->block == 0);
    const std::size_t n_blocks = dst.size() / t->block;
    ATTN_ASSERT(src.size() == n_blocks * t->block_bytes);
    if (n_blocks == 0) {
        return; // empty spans may hold null pointers, which memcpy must not see
    }
    detail::HWY_NAMESPACE::dequantize_blocks(type, *t, src.data(), n_blocks, dst.data());
}

} // namespace attn::model

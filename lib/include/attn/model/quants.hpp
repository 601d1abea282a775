// ggml's tensor types as GGUF stores them: each type's name, block size and block bytes,
// and dequantization to float32 of the types attn reads (F32, F16, BF16, Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, Q2_K..Q6_K), bit-exact with ggml's reference dequantize_row_* (no FMA
// contraction: each product and sum rounded as the C source writes it). It knows nothing
// of files: gguf.hpp hands it a tensor's bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace attn::model {

/// What ggml says of one of its types.
struct GgmlTypeTraits {
    std::string_view name;         ///< "Q4_K", as ggml and gguf-py name it
    std::uint32_t block = 0;       ///< elements per block (1 for plain types)
    std::uint32_t block_bytes = 0; ///< bytes per block
    bool dequantizable = false;    ///< attn dequantizes it
};

/// The traits of ggml type `type`, or null when ggml defines no such type (numbers ggml
/// removed, such as 4, 5 and 31..33, count as unknown).
const GgmlTypeTraits* ggml_type_traits(std::uint32_t type);

/// The ggml type called `name` ("BF16", "Q4_K"), or empty: how a safetensors dtype, whose
/// names are ggml's where both have the type, becomes ggml's number.
std::optional<std::uint32_t> ggml_type_named(std::string_view name);

/// "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K".
std::string_view dequantizable_type_names();

/// Dequantizes `dst.size()` elements of type `type` from `src`, which holds exactly
/// dst.size() / block blocks. Requires a dequantizable type, dst.size() a multiple of the
/// block size and src.size() the matching byte count (the caller has checked all three;
/// a violation is ATTN_ASSERTed). Thread-safe; reads src unaligned.
void dequantize_ggml(std::uint32_t type, std::span<const std::uint8_t> src, std::span<float> dst);

} // namespace attn::model

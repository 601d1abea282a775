// The per-target part of the stored-type matrix products (matmul.cpp drives it): one table
// per SIMD target compiled into matmul_hwy.cpp, picked once per call.
#pragma once

#include "attn/attention.hpp"
#include "attn/model/quants.hpp"

#include <cstddef>
#include <cstdint>

namespace attn::model::detail {

struct MatmulOps {
    /// Dequantizes n_blocks blocks of ggml type `type` (one attn dequantizes; `traits` its
    /// traits) from src to dst: quant_blocks-inl.h compiled for this target, bit-exact with
    /// dequantize_ggml.
    void (*dequantize)(std::uint32_t type,
                       const GgmlTypeTraits& traits,
                       const std::uint8_t* src,
                       std::size_t n_blocks,
                       float* dst);
};

/// The table of `simd`'s target (the best this CPU runs for Simd::best). Throws
/// InputError for a target that is not compiled in or that this CPU lacks.
const MatmulOps& matmul_ops(Simd simd);

} // namespace attn::model::detail

// The SIMD part of the stored-type matrix products (matmul.cpp drives it): one table per
// SIMD target compiled into matmul_hwy.cpp, picked once per call.
//
// Legend: n rows of x, m rows of a dequantized W panel, k the shared (input) dimension.
#pragma once

#include "attn/attention.hpp"
#include "attn/model/quants.hpp"

#include <cstddef>
#include <cstdint>

namespace attn::model::detail {

/// One panel product: y[i, j] = (accumulate ? y[i, j] : 0) + Σ_{p<k} x[i, p] · w[j, p]
/// for i < n, j < m; x, w and y row-major with row strides ldx, ldw, ldy (floats).
struct PanelArgs {
    const float* x = nullptr;
    std::size_t ldx = 0;
    std::size_t n = 0;
    const float* w = nullptr;
    std::size_t ldw = 0;
    std::size_t m = 0;
    std::size_t k = 0;
    float* y = nullptr;
    std::size_t ldy = 0;
    bool accumulate = false;
};

struct MatmulOps {
    /// Dequantizes n_blocks blocks of ggml type `type` (one attn dequantizes; `traits` its
    /// traits) from src to dst: quant_blocks-inl.h compiled for this target, bit-exact with
    /// dequantize_ggml.
    void (*dequantize)(std::uint32_t type,
                       const GgmlTypeTraits& traits,
                       const std::uint8_t* src,
                       std::size_t n_blocks,
                       float* dst);
    /// The panel product PanelArgs describes.
    void (*panel)(const PanelArgs& args);
    /// W rows per register tile: the driver's panels are a multiple of it.
    std::size_t tile_rows;
};

/// The table of `simd`'s target (the best this CPU runs for Simd::best). Throws
/// InputError for a target that is not compiled in or that this CPU lacks.
const MatmulOps& matmul_ops(Simd simd);

} // namespace attn::model::detail

// The stored-type matrix products' driver: checks the shapes, cuts W into panels of rows
// (one task each, a fixed partition of y's columns), dequantizes a panel's k-chunk into a
// per-thread float32 buffer and hands it to the SIMD panel product (both per SIMD target
// in matmul_hwy.cpp; the dequantization bit-exact with ggml's). It never holds more of W as float32
// than one panel.
#include "attn/model/matmul.hpp"

#include "attn/error.hpp"
#include "attn/model/quants.hpp"
#include "attn/parallel.hpp"
#include "model/matmul_ops.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace attn::model {
namespace {

/// k per chunk: a W tile of the panel kernel (6 rows x 2048 floats, 48 KiB) stays in L1/L2
/// while x's rows pass by, and the lanes are reduced once per 2048 products.
constexpr std::size_t kChunk = 2048;
/// Floats of W per panel buffer (256 KiB, in L2 with an x tile beside it).
constexpr std::size_t kPanelFloats = std::size_t{64} * 1024;

std::vector<std::size_t> dims(std::size_t a, std::size_t b) {
    return {a, b};
}

/// The checks: a type we multiply, whole blocks per row, spans of the shapes' sizes.
const GgmlTypeTraits& check_shapes(std::span<const float> x,
                                   std::size_t rows_x,
                                   const StoredMatrix& w,
                                   std::span<float> y) {
    const GgmlTypeTraits* t = ggml_type_traits(w.type);
    if (t == nullptr || !t->dequantizable) {
        throw InputError::field("weight type",
                                "one of " + std::string(dequantizable_type_names()),
                                t == nullptr ? "type " + std::to_string(w.type)
                                             : std::string(t->name));
    }
    if (w.cols % t->block != 0) {
        throw InputError::field("weight columns",
                                "a multiple of " + std::to_string(t->block) + " for " +
                                    std::string(t->name),
                                std::to_string(w.cols));
    }
    const std::size_t bytes = w.rows * (w.cols / t->block) * t->block_bytes;
    if (w.bytes.size() != bytes) {
        throw InputError::field(
            "weight bytes", std::to_string(bytes), std::to_string(w.bytes.size()));
    }
    if (x.size() != rows_x * w.cols) {
        throw InputError::shape("x", dims(rows_x, w.cols), {x.size()});
    }
    if (y.size() != rows_x * w.rows) {
        throw InputError::shape("y", dims(rows_x, w.rows), {y.size()});
    }
    return *t;
}

} // namespace

bool stored_matmul_supports(std::uint32_t type) {
    const GgmlTypeTraits* t = ggml_type_traits(type);
    return t != nullptr && t->dequantizable;
}

void stored_matmul(std::span<const float> x,
                   std::size_t rows_x,
                   const StoredMatrix& w,
                   std::span<float> y,
                   const MatmulOptions& options) {
    const GgmlTypeTraits& t = check_shapes(x, rows_x, w, y);
    const std::size_t m = w.rows;
    const std::size_t k = w.cols;
    if (rows_x == 0 || m == 0) {
        return;
    }
    if (k == 0) {
        std::fill(y.begin(), y.end(), 0.0F);
        return;
    }
    const detail::MatmulOps& ops = detail::matmul_ops(options.simd);
    // k-chunks of whole blocks (kChunk is a multiple of every block size); panels of whole
    // register tiles, as many rows as kPanelFloats holds at this chunk.
    const std::size_t chunk = std::min(k, kChunk);
    const std::size_t tile = ops.tile_rows;
    const std::size_t panel_rows = std::max(tile, kPanelFloats / chunk / tile * tile);
    const std::size_t panels = (m + panel_rows - 1) / panel_rows;
    const std::size_t row_bytes = k / t.block * t.block_bytes;
    const unsigned threads = attn::detail::resolve_threads(options.threads, panels);
    std::vector<std::vector<float>> scratch(threads);
    attn::detail::parallel_for(panels, threads, [&](unsigned worker, std::size_t task) {
        std::vector<float>& buf = scratch[worker];
        buf.resize(panel_rows * chunk);
        const std::size_t m0 = task * panel_rows;
        const std::size_t mc = std::min(panel_rows, m - m0);
        for (std::size_t k0 = 0; k0 < k; k0 += chunk) {
            const std::size_t kc = std::min(chunk, k - k0);
            for (std::size_t j = 0; j < mc; ++j) {
                const std::size_t at = (m0 + j) * row_bytes + k0 / t.block * t.block_bytes;
                ops.dequantize(w.type, t, w.bytes.data() + at, kc / t.block, buf.data() + j * kc);
            }
            ops.panel({.x = x.data() + k0,
                       .ldx = k,
                       .n = rows_x,
                       .w = buf.data(),
                       .ldw = kc,
                       .m = mc,
                       .k = kc,
                       .y = y.data() + m0,
                       .ldy = m,
                       .accumulate = k0 > 0});
        }
    });
}

} // namespace attn::model

// The stored-type matrix products' driver: checks the shapes, cuts W into panels of 64 rows
// (one task each, a fixed partition of y's columns), dequantizes a panel's k-chunk into a
// per-thread float32 buffer (per SIMD target, matmul_hwy.cpp; bit-exact with ggml's),
// transposes it into the micro-GEMM's B layout (per target too; F32 and BF16 rows go
// straight from the mapping into that layout, converted in the same pass) and multiplies
// (attn/micro_gemm.hpp, the attention kernels' micro-GEMM). It never holds more of W as
// float32 than two panels per thread.
#include "attn/model/matmul.hpp"

#include "attn/aligned.hpp"
#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/micro_gemm.hpp"
#include "attn/model/quants.hpp"
#include "attn/parallel.hpp"
#include "model/matmul_bf16.hpp"
#include "model/matmul_ops.hpp"
#include "model/matmul_q8.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {
namespace {

using detail::kPanelRows;
/// k per chunk: a packed panel of 64 x 1024 floats (256 KiB) stays in L2 while every row
/// of x passes it (the micro-GEMM takes a chunk in one pass, a tile of 16 or 64 columns
/// at a time).
constexpr std::size_t kChunk = 1024;

std::vector<std::size_t> dims(std::size_t a, std::size_t b) {
    return {a, b};
}

/// a · b, or InputError("WHAT: expected a size that fits in 64 bits, got A x B").
std::size_t size_product(std::size_t a, std::size_t b, std::string_view what) {
    std::size_t out = 0;
    if (!io::detail::checked_mul(a, b, out)) {
        throw InputError::field(
            what, "a size that fits in 64 bits", std::to_string(a) + " x " + std::to_string(b));
    }
    return out;
}

/// The checks of a row map: one entry per row of W, each a row `bytes` holds whole.
void check_row_of(const StoredMatrix& w, std::size_t row_bytes) {
    if (w.row_of.size() != w.rows) {
        throw InputError::field(
            "weight row map", std::to_string(w.rows) + " rows", std::to_string(w.row_of.size()));
    }
    if (row_bytes == 0 ? !w.bytes.empty() : w.bytes.size() % row_bytes != 0) {
        throw InputError::field("weight bytes",
                                "whole rows of " + std::to_string(row_bytes) + " bytes",
                                std::to_string(w.bytes.size()));
    }
    const std::size_t stored = row_bytes == 0 ? w.rows : w.bytes.size() / row_bytes;
    for (const std::size_t r : w.row_of) {
        if (r >= stored) {
            throw InputError::field("weight row map",
                                    "rows below " + std::to_string(stored),
                                    "row " + std::to_string(r));
        }
    }
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
    const std::size_t row_bytes = w.cols / t->block * t->block_bytes;
    if (w.row_of.empty()) {
        const std::size_t bytes = size_product(w.rows, row_bytes, "weight bytes");
        if (w.bytes.size() != bytes) {
            throw InputError::field(
                "weight bytes", std::to_string(bytes), std::to_string(w.bytes.size()));
        }
    } else {
        check_row_of(w, row_bytes);
    }
    if (x.size() != size_product(rows_x, w.cols, "x")) {
        throw InputError::shape("x", dims(rows_x, w.cols), {x.size()});
    }
    if (y.size() != size_product(rows_x, w.rows, "y")) {
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
    const std::size_t row_bytes = k / t.block * t.block_bytes;
    const detail::Rounding rounding = detail::input_rounding(w.type, options.activations);
    if (rounding == detail::Rounding::bf16) {
        detail::bf16_matmul(x, rows_x, w, row_bytes, y, options);
        return;
    }
    if (rounding != detail::Rounding::none) {
        detail::q8_matmul(x, rows_x, w, row_bytes, y, options);
        return;
    }
    const detail::MatmulOps& ops = detail::matmul_ops(options.simd);
    const std::size_t chunk = std::min(k, kChunk); // whole blocks: a multiple of 256
    const std::size_t panels = (m + kPanelRows - 1) / kPanelRows;
    const unsigned threads = attn::detail::resolve_threads(options.threads, panels);
    // Per thread: the panel's rows as dequantized [64, chunk], then packed as the
    // micro-GEMM's B operand, transposed [chunk, 64].
    std::vector<AlignedVector<float>> rows(threads);
    std::vector<AlignedVector<float>> packed(threads);
    attn::detail::parallel_for(panels, threads, [&](unsigned worker, std::size_t task) {
        AlignedVector<float>& w_rows = rows[worker];
        AlignedVector<float>& w_t = packed[worker];
        w_rows.resize(kPanelRows * chunk);
        w_t.resize(kPanelRows * chunk);
        const std::size_t m0 = task * kPanelRows;
        const std::size_t mc = std::min(kPanelRows, m - m0);
        const std::array<const std::uint8_t*, kPanelRows> w_at =
            detail::panel_rows(w, row_bytes, m0, mc);
        for (std::size_t k0 = 0; k0 < k; k0 += chunk) {
            const std::size_t kc = std::min(chunk, k - k0);
            std::array<const std::uint8_t*, kPanelRows> at{}; // the chunk's first bytes
            for (std::size_t j = 0; j < mc; ++j) {
                at[j] = w_at[j] + k0 / t.block * t.block_bytes;
            }
            if (!ops.pack_transposed(w.type, at.data(), mc, kc, w_t.data())) {
                for (std::size_t j = 0; j < mc; ++j) {
                    ops.dequantize(w.type, t, at[j], kc / t.block, w_rows.data() + j * kc);
                }
                ops.transpose(w_rows.data(), mc, kc, w_t.data());
            }
            // y[:, m0 .. m0 + mc] (+)= x[:, k0 .. k0 + kc] · w_t
            micro_gemm(options.simd,
                       rows_x,
                       mc,
                       kc,
                       x.data() + k0,
                       k,
                       w_t.data(),
                       mc,
                       y.data() + m0,
                       m,
                       k0 > 0);
        }
    });
}

StoredWeight
stored_weight(const StoredMatrix& w, std::shared_ptr<const void> keep, Activations activations) {
    const std::vector<float> none;
    check_shapes(none, 0, w, {}); // the type, the blocks and the row map, once
    StoredWeight out;
    out.rows = w.rows;
    out.cols = w.cols;
    out.multiply = [w, keep = std::move(keep), activations](std::span<const float> x,
                                                            std::size_t n,
                                                            std::span<float> y,
                                                            unsigned threads,
                                                            Simd simd) {
        stored_matmul(x, n, w, y, {.threads = threads, .simd = simd, .activations = activations});
    };
    return out;
}

} // namespace attn::model

// The integer path's driver: the activations rounded to Q8_0 or Q8_K once per call (the SIMD
// target's round_q8_0 or round_q8_k, quant_round-inl.h; rows shared among the threads), then W cut
// into panels of 64 rows (one task each, a fixed partition of y's columns, as the float32 path's)
// whose products the SIMD target's dot_q8 or dot_q8_k computes (quant_dot-inl.h,
// quant_dot_k-inl.h). The weights are read as stored, never converted.
#include "model/matmul_q8.hpp"

#include "attn/parallel.hpp"
#include "model/matmul_ops.hpp"

#include <algorithm>
#include <array>
#include <optional>

namespace attn::model::detail {
namespace {

constexpr std::size_t kBlock = 32;
constexpr std::size_t kSuper = 256; // Q8_K

} // namespace

void quantize_rows(std::span<const float> x,
                   std::size_t rows,
                   std::size_t k,
                   bool super,
                   unsigned threads,
                   const MatmulOps& ops,
                   Q8Rows& out) {
    out.blocks = k / (super ? kSuper : kBlock);
    const std::size_t sums = super ? k / 16 : out.blocks; // a row's
    hold(out.q, rows * k);
    hold(out.d, rows * out.blocks);
    hold(out.sum, rows * sums);
    if (super) {
        hold(out.pair, rows * k / 32);
    }
    attn::detail::parallel_chunks(
        rows, attn::detail::rows_per_chunk(k), threads, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r) {
                const float* xr = x.data() + r * k;
                std::int8_t* q = out.q.data() + r * k;
                float* d = out.d.data() + r * out.blocks;
                std::int32_t* sum = out.sum.data() + r * sums;
                if (super) {
                    ops.round_q8_k(xr, out.blocks, q, d, sum, out.pair.data() + r * k / 32);
                } else {
                    ops.round_q8_0(xr, out.blocks, q, d, sum);
                }
            }
        });
}

Rounding input_rounding(std::uint32_t type, Activations activations) {
    if (activations == Activations::f32) {
        return Rounding::none;
    }
    if (activations == Activations::bf16) {
        return type == 30 ? Rounding::bf16 : Rounding::none; // BF16
    }
    if (type == 8 || type == 2) { // Q8_0, Q4_0
        return Rounding::q8_0;
    }
    if (activations == Activations::q8 && (type == 12 || type == 13 || type == 14)) {
        return Rounding::q8_k; // Q4_K, Q5_K, Q6_K
    }
    return Rounding::none;
}

void q8_matmul(std::span<const float> x,
               std::size_t rows_x,
               const StoredMatrix& w,
               std::size_t row_bytes,
               std::span<float> y,
               const MatmulOptions& options) {
    const MatmulOps& ops = matmul_ops(options.simd);
    const std::size_t m = w.rows;
    const std::size_t k = w.cols;
    const std::size_t panels = (m + kPanelRows - 1) / kPanelRows;
    const unsigned threads = attn::detail::resolve_threads(options.threads, panels);
    const bool super = input_rounding(w.type, options.activations) == Rounding::q8_k;
    // The calling thread's rounded inputs, reused by its next product (the products of a
    // layer, and of the next: the same few sizes), so their pages are not faulted in and
    // zeroed again every call; up to kKeptInput values (a 1B model's MLP input at 2048
    // tokens), so a long context does not leave hundreds of MiB behind after the run: a
    // larger input gets buffers of its own for the call. The workers only read them while
    // this call waits, through the reference (a lambda naming the thread_local itself
    // would read its own thread's).
    constexpr std::size_t kKeptInput = std::size_t{16} << 20U;
    thread_local Q8Rows scratch;
    Q8Rows own;
    Q8Rows& a = rows_x * k <= kKeptInput ? scratch : own;
    quantize_rows(x, rows_x, k, super, threads, ops, a);
    // The target's VNNI pass where the CPU has it: the same values, in fewer steps.
    const bool vnni = options.vnni && vnni_runs(ops);
    const auto dot =
        super ? (vnni ? ops.dot_q8_k_vnni : ops.dot_q8_k) : (vnni ? ops.dot_q8_vnni : ops.dot_q8);
    attn::detail::parallel_for(panels, threads, [&](unsigned, std::size_t task) {
        const std::size_t m0 = task * kPanelRows;
        const std::size_t mc = std::min(kPanelRows, m - m0);
        const std::array<const std::uint8_t*, kPanelRows> w_rows = panel_rows(w, row_bytes, m0, mc);
        const DotQ8Args args{.type = w.type,
                             .w_rows = w_rows.data(),
                             .m = mc,
                             .qx = a.q.data(),
                             .dx = a.d.data(),
                             .sx = a.sum.data(),
                             .px = a.pair.data(),
                             .n = rows_x,
                             .blocks = a.blocks,
                             .y = y.data() + m0,
                             .ldy = m};
        dot(args);
    });
}

} // namespace attn::model::detail

namespace attn::model {

std::string_view int8_products(Simd simd) {
    const detail::MatmulOps& ops = detail::matmul_ops(simd);
    return detail::vnni_runs(ops) ? ops.int8_products_vnni : ops.int8_products;
}

std::string_view activations_name(Activations activations) {
    switch (activations) {
    case Activations::q8_0:
        return "q8_0";
    case Activations::q8:
        return "q8";
    case Activations::bf16:
        return "bf16";
    case Activations::f32:
        break;
    }
    return "f32";
}

std::string_view activations_types(Activations activations) {
    switch (activations) {
    case Activations::q8:
        return "Q8_0, Q4_0, Q4_K, Q5_K and Q6_K";
    case Activations::bf16:
        return "BF16";
    case Activations::f32:
    case Activations::q8_0:
        break;
    }
    return "Q8_0 and Q4_0";
}

std::string_view activations_rounding(std::uint32_t type, Activations activations) {
    switch (detail::input_rounding(type, activations)) {
    case detail::Rounding::q8_0:
        return "Q8_0";
    case detail::Rounding::q8_k:
        return "Q8_K";
    case detail::Rounding::bf16:
        return "BF16";
    case detail::Rounding::none:
        break;
    }
    return {};
}

std::optional<Activations> activations_named(std::string_view name) {
    for (const Activations a :
         {Activations::f32, Activations::q8_0, Activations::q8, Activations::bf16}) {
        if (name == activations_name(a)) {
            return a;
        }
    }
    return std::nullopt;
}

} // namespace attn::model

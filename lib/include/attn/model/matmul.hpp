// Matrix products on weights as a GGUF stores them: y = x · Wᵀ (nn.Linear) with W in its
// ggml block format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, F16, BF16, F32), never
// dequantized whole: a panel of W's rows at a time becomes float32 in a per-thread buffer
// that stays in L2, and a SIMD kernel (Highway, run-time dispatch) multiplies it. It reads
// no file: the caller hands it the stored bytes.
#pragma once

#include "attn/attention.hpp"
#include "attn/stored_weight.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace attn::model {

/// A weight matrix W[rows, cols] as stored: row-major, each row `cols / block` blocks of
/// ggml type `type` (GgmlTypeTraits), `bytes` the whole matrix (borrowed). With `row_of`
/// (borrowed), W's row j is the stored row row_of[j] of `bytes` (which then holds any
/// whole number of rows): a fused tensor's part, or rows a converter permuted, unmoved.
struct StoredMatrix {
    std::uint32_t type = 0;
    std::size_t rows = 0; ///< M: output features
    std::size_t cols = 0; ///< K: input features
    std::span<const std::uint8_t> bytes;
    std::span<const std::size_t> row_of; ///< empty: row j is stored row j
};

/// What the products do with their float32 input x. f32: exact products of x and the
/// dequantized W (float32 sums). q8_0: for Q8_0 and Q4_0 weights, x rounded per row to
/// Q8_0 first, as llama.cpp does before its products (ggml's quantize_row_q8_0: per block
/// of 32, d = amax / 127 stored as binary16, q = round(x · (1/d)), ties away from zero as
/// its reference code), then exact int32 sums per block scaled by d_w · d_x: llama.cpp's
/// products up to the order of its float sums (and its SIMD rounding's ties to even). Each
/// element of x moves by at most d · (1/2 + 2⁻¹⁵ + 127 · 2⁻¹¹) (the rounding of q and of
/// x · (1/d), and of d to binary16). q8: x rounded as llama.cpp rounds it for each weight
/// type: Q8_0 and Q4_0 as q8_0; Q4_K, Q5_K and Q6_K to Q8_K (ggml's
/// quantize_row_q8_K_ref: per super-block of 256, iscale = −127 / (the value of largest
/// magnitude), q = round(iscale · x) with ties to even, d = 1 / iscale as float32), then
/// exact int32 sums per sub-block combined with the weights' scales and mins as ggml's
/// vec_dot_q*_K_q8_K do; each element moves by at most |d| · (1/2 + 2⁻¹⁵). bf16: for
/// BF16 weights, x rounded to BF16 first (to nearest, ties to even, as ggml's
/// GGML_FP32_TO_BF16; a NaN stays a NaN; a result below 2⁻¹²⁶ in magnitude becomes a zero
/// of its sign, as AVX512_BF16's vdpbf16ps reads it), so each element moves by at most
/// 2⁻⁸ |x| (|x| where flushed); then BF16 pair products as vdpbf16ps computes them:
/// per output, along k in pairs (2i, 2i + 1), acc = fma(x[2i+1], w[2i+1], acc), then
/// acc = fma(x[2i], w[2i], acc), every product exact, with inputs and sums of magnitude
/// below 2⁻¹²⁶ read and written as zeros (denormals flushed); on a CPU with AMX-BF16
/// (bf16_products), as its TDPBF16PS sums them instead: the pairs in blocks of 16 from the
/// first, per block the even k's products and the odd k's summed apart from +0, then
/// acc = acc + (even + odd), with the same rounding and flushing (the same bound, other last
/// bits). Other weight types keep the f32 products under every choice.
enum class Activations { f32, q8_0, q8, bf16 };

/// The field's spelling of a choice: "f32", "q8_0", "q8", "bf16".
std::string_view activations_name(Activations activations);
/// The weight types a choice other than f32 reaches: "Q8_0 and Q4_0" (q8_0),
/// "Q8_0, Q4_0, Q4_K, Q5_K and Q6_K" (q8), "BF16" (bf16), for the messages that refuse it.
std::string_view activations_types(Activations activations);
/// The choice spelled `name`, or nothing.
std::optional<Activations> activations_named(std::string_view name);
/// What `activations` rounds the inputs of ggml type `type`'s products to (the integer
/// path, or bf16's pair products): "Q8_0", "Q8_K" or "BF16"; empty for float32 inputs (f32,
/// and the types a choice does not reach).
std::string_view activations_rounding(std::uint32_t type, Activations activations);

/// How the bf16 choice's pair products run for `simd` on this CPU: "AMX" (Simd::best where
/// the CPU has AMX-BF16 and the OS grants its tiles: TDPBF16PS's order), "vdpbf16ps" (AVX3_DL
/// named, or best on a CPU with AVX512_BF16 not Intel's) or "FMA" (vdpbf16ps's order in
/// float32 FMAs, or a multiply and an add without FMA). Throws InputError as simd_target.
std::string_view bf16_products(Simd simd);

/// How the q8_0 and q8 choices' integer products run for `simd` on this CPU (the same bits
/// on every one): "AVX512-VNNI" (AVX3_DL, and AVX3 on a CPU with AVX512_VNNI: Cascade
/// Lake, Cooper Lake), "AVX-VNNI" (the AVX2 target on a CPU with AVX-VNNI: Alder Lake and
/// later, Zen 5), "maddubs" (AVX2 and AVX3 without them) or "portable" (one pair at a
/// time). Throws InputError as simd_target.
std::string_view int8_products(Simd simd);

/// How stored_matmul runs: `threads` (0: all hardware threads), the SIMD target
/// (Simd::best, or one that simd_target() named, for tests and benchmarks) and what
/// happens to the activations.
struct MatmulOptions {
    unsigned threads = 1;
    Simd simd = Simd::best;
    Activations activations = Activations::f32;
    /// The integer products with the VNNI instructions this CPU has beyond the target (the
    /// same bits; int8_products): AVX-VNNI on AVX2, AVX512_VNNI on AVX3. false: the
    /// target's own maddubs, as a CPU without them runs it (tests, benchmarks).
    bool vnni = true;
};

/// Whether stored_matmul multiplies ggml type `type` (every dequantizable type).
bool stored_matmul_supports(std::uint32_t type);

/// y[n, m] = Σ_k x[n, k] · W[m, k] for n < rows_x, m < w.rows, k < w.cols: x is float32
/// [rows_x, w.cols] row-major, y float32 [rows_x, w.rows] row-major (overwritten). W's
/// elements are its dequantized values (bit-exact with ggml's dequantize_row_*); sums are
/// float32, in an order fixed by the SIMD target alone, so y is bit-identical for any
/// thread count (each task owns a fixed panel of W's rows, i.e. of y's columns).
/// Throws InputError when the type is not supported, w.cols is not a whole number of
/// blocks, a span's size does not match the shapes, or a row_of entry is past the rows
/// `bytes` holds.
void stored_matmul(std::span<const float> x,
                   std::size_t rows_x,
                   const StoredMatrix& w,
                   std::span<float> y,
                   const MatmulOptions& options = {});

/// W as the core's StoredWeight (attn/stored_weight.hpp), its product stored_matmul's
/// with `activations`. `keep` owns what w.bytes and w.row_of point into (null: they outlive
/// the weight). Throws InputError as stored_matmul does for what does not fit (checked here
/// once).
StoredWeight stored_weight(const StoredMatrix& w,
                           std::shared_ptr<const void> keep,
                           Activations activations = Activations::f32);

} // namespace attn::model

// The per-target part of the stored-type matrix products: the block dequantizers of
// quant_blocks-inl.h compiled once per SIMD target the core's kernels are compiled for
// (kernel_ops_hwy.cpp: x86 AVX3_DL, AVX3, AVX2, SSE4, SSSE3; Arm SVE and NEON; the
// fallback), so the compiler vectorizes each panel's dequantization for the target that
// then multiplies it (the core's micro-GEMM, attn/micro_gemm.hpp). This file is included
// once per target by hwy/foreach_target.h; the HWY_ONCE part picks a table per call.
#include "attn/cpuid.hpp"
#include "attn/error.hpp"
#include "attn/hwy_targets.hpp" // the targets, before Highway's own headers
#include "attn/kernels.hpp"
#include "model/matmul_ops.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "model/matmul_hwy.cpp"
#include <hwy/foreach_target.h> // IWYU pragma: keep
#include <hwy/highway.h>

// The block dequantizers, included here once per target.
#include "model/quant_blocks-inl.h"
// The float32 path's panel transpose, likewise.
#include "model/panel_transpose-inl.h"
// The integer products on Q8_0- and Q8_K-rounded activations, likewise.
#include "model/quant_dot-inl.h"
#include "model/quant_dot_k-inl.h"
// The rounding of their activations to Q8_0 and Q8_K, likewise.
#include "model/quant_round-inl.h"
// The BF16 pair products (AVX3_DL with AVX512_BF16), likewise.
#include "model/bf16_dot-inl.h"

// The AVX2 and AVX3 targets' integer products once more, with the VNNI instructions a CPU
// may have beyond them (quant_dot-inl.h), into the nested namespace vnni: each -inl.h file
// is taken once per target pass (its guard toggles with Highway's), so the two guards are
// toggled back first.
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
#define ATTN_QDOT_VNNI_PASS 1
#ifdef ATTN_MODEL_QUANT_DOT_INL_H_
#undef ATTN_MODEL_QUANT_DOT_INL_H_
#else
#define ATTN_MODEL_QUANT_DOT_INL_H_
#endif
#ifdef ATTN_MODEL_QUANT_DOT_K_INL_H_
#undef ATTN_MODEL_QUANT_DOT_K_INL_H_
#else
#define ATTN_MODEL_QUANT_DOT_K_INL_H_
#endif
#include "model/quant_dot-inl.h"   // NOLINT(readability-duplicate-include): the second pass
#include "model/quant_dot_k-inl.h" // NOLINT(readability-duplicate-include): likewise
#undef ATTN_QDOT_VNNI_PASS
#endif

HWY_BEFORE_NAMESPACE();
namespace attn::model::detail::HWY_NAMESPACE {

// The VNNI pass's products and how the CPU is asked for them: the AVX2 and AVX3 targets'.
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
constexpr auto kDotQ8Vnni = &vnni::dot_q8;
constexpr auto kDotQ8KVnni = &vnni::dot_q8_k;
#else
constexpr void (*kDotQ8Vnni)(const DotQ8Args&) = nullptr;
constexpr void (*kDotQ8KVnni)(const DotQ8Args&) = nullptr;
#endif
#if HWY_TARGET == HWY_AVX2
constexpr auto kVnniCpu = &attn::detail::avx_vnni_cpu;
constexpr const char* kInt8ProductsVnni = "AVX-VNNI";
#elif HWY_TARGET == HWY_AVX3
constexpr auto kVnniCpu = &attn::detail::avx512_vnni_cpu;
constexpr const char* kInt8ProductsVnni = "AVX512-VNNI";
#else
constexpr bool (*kVnniCpu)() = nullptr;
constexpr const char* kInt8ProductsVnni = nullptr;
#endif
#if HWY_TARGET == HWY_AVX3_DL
constexpr const char* kInt8Products = "AVX512-VNNI";
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
constexpr const char* kInt8Products = "maddubs";
#else
constexpr const char* kInt8Products = "portable";
#endif

/// This target's table (referenced by the HWY_ONCE part below).
extern const MatmulOps kMatmulOps;
const MatmulOps kMatmulOps{.dequantize = &dequantize_blocks,
                           .transpose = &transpose_panel,
                           .pack_transposed = &pack_transposed,
                           .dot_q8 = &dot_q8,
                           .dot_q8_k = &dot_q8_k,
                           .round_q8_0 = &round_q8_0,
                           .round_q8_k = &round_q8_k,
                           .bf16_pairs = &bf16_pairs,
                           .dot_bf16 = kDotBf16,
                           .dot_q8_vnni = kDotQ8Vnni,
                           .dot_q8_k_vnni = kDotQ8KVnni,
                           .vnni_cpu = kVnniCpu,
                           .int8_products = kInt8Products,
                           .int8_products_vnni = kInt8ProductsVnni};

} // namespace attn::model::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace attn::model::detail {
namespace {

struct TargetOps {
    std::int64_t target;
    const MatmulOps* ops;
};

/// Every target compiled into this file, best first (Highway's order: lower bit = better).
constexpr TargetOps kCompiled[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    {HWY_AVX3_DL, &N_AVX3_DL::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_AVX3
    {HWY_AVX3, &N_AVX3::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_AVX2
    {HWY_AVX2, &N_AVX2::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SSE4
    {HWY_SSE4, &N_SSE4::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SSSE3
    {HWY_SSSE3, &N_SSSE3::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SVE2_128
    {HWY_SVE2_128, &N_SVE2_128::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SVE_256
    {HWY_SVE_256, &N_SVE_256::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SVE2
    {HWY_SVE2, &N_SVE2::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SVE
    {HWY_SVE, &N_SVE::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_NEON
    {HWY_NEON, &N_NEON::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_EMU128
    {HWY_EMU128, &N_EMU128::kMatmulOps},
#endif
#if HWY_TARGETS & HWY_SCALAR
    {HWY_SCALAR, &N_SCALAR::kMatmulOps},
#endif
};

} // namespace

const MatmulOps& matmul_ops(Simd simd) {
    // The core's kernels are compiled for the same targets and own the rule (and the
    // messages) of which target a call may ask for: simd_target() throws unless it is
    // compiled in and this CPU runs it.
    const auto target = static_cast<std::int64_t>(
        simd == Simd::best ? simd_supported().front() : simd_target(simd_name(simd)));
    for (const TargetOps& t : kCompiled) {
        if (t.target == target) {
            return *t.ops;
        }
    }
    throw InputError(std::string("simd: the ") + simd_name(simd) +
                     " target is not compiled into the matrix products");
}

} // namespace attn::model::detail

#endif // HWY_ONCE

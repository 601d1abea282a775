// The inner operations both attention kernels are built from: a micro-GEMM on blocks, an
// online-softmax step over a block of transposed scores, and one softmax row. One source
// (kernel_ops_hwy.cpp, over Google Highway) fills one table per SIMD target compiled in;
// the drivers take a table once per call and never see the instruction set.
//
// Legend: m, n, k are the GEMM sizes; a(r, x) = a[r·a_row + x·a_col] lets one routine
// read A row-major (a_col = 1) or transposed (a_row = 1) without packing.
#pragma once

#include "attn/attention.hpp"

#include <cstddef>
#include <cstdint>

namespace attn::detail {

/// Query columns of a transposed score block: one streaming task's query block, and the
/// width of the AVX-512 micro-kernel's tile (4 vectors of 16 floats).
constexpr std::size_t kScoreColumns = 64;

/// Row stride of a transposed score block, in floats: 64 columns plus one cache line of
/// padding. With a stride of 256 bytes the P·V micro-kernel's column reads (6 adjacent
/// floats per key row) would fall into a quarter of L1's 64 sets and evict the V block;
/// 320 bytes spreads them over all sets.
constexpr std::size_t kScoreStride = kScoreColumns + 16;

/// One micro-GEMM call: C[m, n] = A[m, k] · B[k, n], or, with `accumulate`,
/// C = diag(row_scale) · C + A · B (row_scale null: C += A · B). A is read as
/// a(r, x) = a[r·a_row + x·a_col]; B and C are row-major with row strides ldb and ldc.
/// Along the way `prefetch_bytes` bytes from `prefetch` are pulled toward L2, a cache line
/// per k step, spread over the row tiles: the streaming kernel fetches the V block during
/// Q·Kᵀ and the next K block during P·V this way (a head's K and V, 2 MB at L = 4096,
/// D = 64, do not stay in L2, and a block read in one burst stalls its first row tile on
/// L3). Targets whose compiler has no prefetch ignore the hint.
struct GemmArgs {
    std::size_t m = 0;
    std::size_t n = 0;
    std::size_t k = 0;
    const float* a = nullptr;
    std::size_t a_row = 0;
    std::size_t a_col = 1;
    const float* b = nullptr;
    std::size_t ldb = 0;
    float* c = nullptr;
    std::size_t ldc = 0;
    bool accumulate = false;
    const float* row_scale = nullptr;
    const void* prefetch = nullptr;
    std::size_t prefetch_bytes = 0;
};

struct KernelOps {
    /// The micro-GEMM GemmArgs describes.
    void (*gemm)(const GemmArgs& args);

    /// The MLP's sigmoid-form activations in place (activation_hwy.cpp): x[i] = x[i] /
    /// (1 + exp(-beta·(x[i] + gamma·x[i]³))) for i < n, in double, rounded once.
    void (*swish)(float* x, std::size_t n, double beta, double gamma);

    /// One online-softmax step over st[kb, kScoreColumns] (row stride kScoreStride):
    /// transposed scores (row = key, column = query), already scaled, biased and masked
    /// (-inf). Per column i:
    ///   m' = max(m, max_j st[j, i]);  alpha[i] = exp(m - m') (1 if m' == m);
    ///   st[j, i] = exp(st[j, i] - m');  l' = l·alpha + sum_j st[j, i].
    /// Returns whether any alpha differs from 1 (the accumulator needs rescaling).
    bool (*online_softmax)(float* st, std::size_t kb, float* m, float* l, float* alpha);

    /// One weights row in place: s[j] = softmax_j(s[j]·scale + bias[j], masked) over
    /// j < n, where mask[j] == 0 or pad[j] == 0 blocks key j (each pointer may be null).
    /// Returns false when no key is visible (s is then left for the caller to zero).
    bool (*softmax_row)(float* s,
                        std::size_t n,
                        float scale,
                        const float* bias,
                        const std::uint8_t* mask,
                        const std::uint8_t* pad);

    /// The long view's top-k filter over st[kb, kScoreColumns] (row stride kScoreStride):
    /// hits[j] has bit i set where st[j, i] > bar[i] (a NaN score never is).
    void (*score_hits)(const float* st, std::size_t kb, const float* bar, std::uint64_t* hits);

    /// The long view's columns over the n key rows of st (stride kScoreStride) per query
    /// column i: max[i] = max(max[i]·scale[i], max_j st[j, i]) and sum[i] = sum[i]·scale[i]
    /// + sum_j st[j, i], the sum in key order; scale null: from 0 (st >= 0 or NaN).
    void (*pool_keys)(const float* st, std::size_t n, const float* scale, float* max, float* sum);

    /// The long view's columns made weights: for x < n, column x's kScoreColumns entries
    /// of max and sum (at max + x·kScoreColumns) times the factors of block block_of[x]
    /// (factor + block_of[x]·kScoreColumns); a factor of 0 gives 0 (even times NaN).
    void (*scale_columns)(
        float* max, float* sum, std::size_t n, const std::uint32_t* block_of, const float* factor);
};

/// The table of `simd`'s target: the best one this CPU runs for Simd::best. Throws
/// InputError when `simd` names a target that is not compiled in or that this CPU lacks.
const KernelOps& kernel_ops(Simd simd);

} // namespace attn::detail

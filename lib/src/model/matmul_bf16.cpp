// The BF16 pair products' driver: the activations rounded to BF16 once per call (rows shared
// among the threads), then W cut into panels of 64 rows (one task each, a fixed partition of
// y's columns, as the other paths'), each panel packed a chunk of k at a time: as BF16 pairs
// for vdpbf16ps (bf16_dot-inl.h) where use_pairs says so, else as float32 in the pairs'
// order (the odd k, then the even one) for the core's micro-GEMM, whose chain of FMAs along
// k is then the instruction's. The weights are read as stored, never converted whole.
#include "model/matmul_bf16.hpp"

#include "attn/aligned.hpp"
#include "attn/cpuid.hpp"
#include "attn/micro_gemm.hpp"
#include "attn/parallel.hpp"
#include "model/matmul_amx.hpp"
#include "model/matmul_ops.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#include <immintrin.h>
#define ATTN_MXCSR 1
#endif

namespace attn::model::detail {
namespace {

/// Pairs of k per chunk: a packed chunk of 64 rows is 128 KiB as pairs, 256 KiB as float32,
/// and stays in L2 while every row of x passes it.
constexpr std::size_t kChunkPairs = 512;

/// vdpbf16ps's denormal rule for the float32 FMAs of the fallback: on x86, MXCSR's
/// flush-to-zero (sums below 2⁻¹²⁶ become zeros of their sign, tininess detected after
/// rounding, as the instruction does) and denormals-are-zero (inputs below it read as 0)
/// for the scope, the caller's MXCSR restored after. Elsewhere nothing: the fallback then
/// keeps subnormal sums (IEEE), and differs from vdpbf16ps only where a sum falls below
/// 2⁻¹²⁶ in magnitude.
class FlushDenormals {
  public:
#ifdef ATTN_MXCSR
    FlushDenormals() : saved_(_mm_getcsr()) {
        _mm_setcsr(saved_ | kFtz | kDaz);
    }
    ~FlushDenormals() {
        _mm_setcsr(saved_);
    }
#else
    FlushDenormals() = default;
    ~FlushDenormals() = default;
#endif
    FlushDenormals(const FlushDenormals&) = delete;
    FlushDenormals& operator=(const FlushDenormals&) = delete;
    FlushDenormals(FlushDenormals&&) = delete;
    FlushDenormals& operator=(FlushDenormals&&) = delete;

  private:
#ifdef ATTN_MXCSR
    static constexpr unsigned kFtz = 1U << 15U;
    static constexpr unsigned kDaz = 1U << 6U;
    unsigned saved_;
#endif
};

/// Whether the CPU is Intel's (CPUID leaf 0's vendor string).
bool intel_cpu() {
    static const bool intel = [] {
        const auto r = attn::detail::cpuid(0); // "GenuineIntel" in EBX, EDX, ECX
        return r[1] == 0x756E6547U && r[3] == 0x49656E69U && r[2] == 0x6C65746EU;
    }();
    return intel;
}

/// Whether the products use vdpbf16ps (bf16_dot-inl.h) or the same chain in float32 FMAs:
/// the same bits either way, so a question of speed alone. A target named explicitly
/// (AVX3_DL) uses the instruction wherever the CPU has it (tests and benchmarks reach it);
/// Simd::best not on an Intel CPU: on the Sapphire Rapids Xeon measured, vdpbf16ps ran at
/// half the FMAs' rate (a 6 x 64 register tile: 110 GFLOPS where AVX-512 FMAs ran at 171;
/// the whole product 76 GFLOPS where the FMA chain ran at 99, docs/performance.md).
bool use_pairs(const MatmulOps& ops, Simd simd) {
    if (ops.dot_bf16 == nullptr || !ops.bf16_pairs()) {
        return false;
    }
    return simd != Simd::best || !intel_cpu();
}

/// How the products run: vdpbf16ps, AMX's tiles (on their padded layout) or the FMAs.
enum class Kernel { pairs, amx, fma };

/// AMX's tiles for Simd::best where the CPU and the OS allow them (they outrun both other
/// ways on Sapphire Rapids, docs/performance.md), else use_pairs's choice.
Kernel kernel_for(const MatmulOps& ops, Simd simd) {
    if (simd == Simd::best && amx_bf16_ready()) {
        return Kernel::amx;
    }
    return use_pairs(ops, simd) ? Kernel::pairs : Kernel::fma;
}

float bf16_value(std::uint16_t h) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16U);
}

/// A stored BF16 weight as the products read it: a subnormal is a zero of its sign.
std::uint16_t bf16_weight(const std::uint8_t* p) {
    const auto h = static_cast<std::uint16_t>(p[0] | p[1] << 8U);
    return (h & 0x7F80U) == 0 ? static_cast<std::uint16_t>(h & 0x8000U) : h;
}

/// The rounded activations in the layout of the path that multiplies them: `pairs`
/// [rows, ldx] BF16 pairs (low half the even k) for vdpbf16ps and AMX, or `swapped`
/// [rows, kp] float32 with each pair's two values exchanged (the odd k first) for the
/// micro-GEMM. kp is k rounded up to even; an odd k's last pair has a zero. For AMX, rows
/// and pairs are padded with zeros to whole tiles (kAmxRows, kAmxBlockPairs).
struct Bf16Rows {
    std::size_t kp = 0;
    std::size_t ldx = 0;
    AlignedVector<std::uint32_t> pairs;
    AlignedVector<float> swapped;
};

Bf16Rows round_rows(
    std::span<const float> x, std::size_t rows, std::size_t k, Kernel kernel, unsigned threads) {
    Bf16Rows out;
    out.kp = k + (k & 1U);
    const bool as_pairs = kernel != Kernel::fma;
    const bool padded = kernel == Kernel::amx;
    out.ldx = padded ? round_up(out.kp / 2, kAmxBlockPairs) : out.kp / 2;
    if (as_pairs) {
        out.pairs.assign((padded ? round_up(rows, kAmxRows) : rows) * out.ldx, 0);
    } else {
        out.swapped.resize(rows * out.kp);
    }
    attn::detail::parallel_chunks(
        rows, attn::detail::rows_per_chunk(k), threads, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r) {
                const float* xr = x.data() + r * k;
                for (std::size_t i = 0; i < out.kp / 2; ++i) {
                    const std::uint16_t lo = bf16_rounded(xr[2 * i]);
                    const std::uint16_t hi = 2 * i + 1 < k ? bf16_rounded(xr[2 * i + 1]) : 0;
                    if (as_pairs) {
                        out.pairs[r * out.ldx + i] = lo | static_cast<std::uint32_t>(hi) << 16U;
                    } else {
                        out.swapped[r * out.kp + 2 * i] = bf16_value(hi);
                        out.swapped[r * out.kp + 2 * i + 1] = bf16_value(lo);
                    }
                }
            }
        });
    return out;
}

/// The panel's pairs p0 .. p0 + pc of rows `w_rows[0 .. mc]` (k values a row): as pairs
/// (kPairs), `out` [pc, 64] BF16 pairs (lane j row j, zeros past mc, and zero pairs up to a
/// multiple of kAmxBlockPairs for AMX's tiles); else `out` [2 pc, mc]
/// float32, rows 2p and 2p + 1 the pair's odd and even k (the micro-GEMM's B). One output
/// a call: g++ -O3 took the null one of two pointers for dereferenced (-Wnull-dereference).
template <bool kPairs>
void pack_chunk(const std::array<const std::uint8_t*, kPanelRows>& w_rows,
                std::size_t mc,
                std::size_t k,
                std::size_t p0,
                std::size_t pc,
                AlignedVector<std::conditional_t<kPairs, std::uint32_t, float>>& out) {
    if constexpr (kPairs) {
        out.assign(round_up(pc, kAmxBlockPairs) * kPanelRows, 0);
    }
    // Row by row, each row's chunk read front to back: one stream the prefetchers follow.
    // (Strips of 16 pairs across the 64 rows, a line of each row in turn, waited on memory:
    // 1B BF16 --activations bf16, 1 thread, Zen 5, 5 rounds: 3.99 s against 3.77 s row by
    // row on a quiet machine; 6.05 s against 4.60 s in 3 rounds while others loaded it.)
    for (std::size_t j = 0; j < mc; ++j) {
        for (std::size_t s = 0; s < pc; ++s) {
            const std::size_t e = 2 * (p0 + s); // the pair's even k
            const std::uint16_t lo = bf16_weight(w_rows[j] + 2 * e);
            const std::uint16_t hi = e + 1 < k ? bf16_weight(w_rows[j] + 2 * e + 2) : 0;
            if constexpr (kPairs) {
                out[s * kPanelRows + j] = lo | static_cast<std::uint32_t>(hi) << 16U;
            } else {
                out[2 * s * mc + j] = bf16_value(hi);
                out[(2 * s + 1) * mc + j] = bf16_value(lo);
            }
        }
    }
}

} // namespace

std::uint16_t bf16_rounded(float x) {
    const auto u = std::bit_cast<std::uint32_t>(x);
    if ((u & 0x7FFFFFFFU) > 0x7F800000U) { // NaN: the top half, quieted
        return static_cast<std::uint16_t>((u >> 16U) | 0x40U);
    }
    // To nearest, ties to even: add just under half of the dropped part's unit, plus the kept
    // part's lowest bit (a tie rounds up exactly when that bit is 1); a carry into the
    // exponent is right (up to infinity past the largest finite BF16).
    const auto h = static_cast<std::uint16_t>((u + 0x7FFFU + ((u >> 16U) & 1U)) >> 16U);
    return (h & 0x7F80U) == 0 ? static_cast<std::uint16_t>(h & 0x8000U) : h;
}

void bf16_matmul(std::span<const float> x,
                 std::size_t rows_x,
                 const StoredMatrix& w,
                 std::size_t row_bytes,
                 std::span<float> y,
                 const MatmulOptions& options) {
    const MatmulOps& ops = matmul_ops(options.simd);
    const Kernel kernel = kernel_for(ops, options.simd);
    const std::size_t m = w.rows;
    const std::size_t k = w.cols;
    const std::size_t panels = (m + kPanelRows - 1) / kPanelRows;
    const unsigned threads = attn::detail::resolve_threads(options.threads, panels);
    const Bf16Rows a = round_rows(x, rows_x, k, kernel, threads);
    const std::size_t pairs = a.kp / 2;
    std::vector<AlignedVector<std::uint32_t>> packed(threads);
    std::vector<AlignedVector<float>> packed_f32(threads);
    attn::detail::parallel_for(panels, threads, [&](unsigned worker, std::size_t task) {
        [[maybe_unused]] const FlushDenormals flush; // a no-op off x86
        const std::size_t m0 = task * kPanelRows;
        const std::size_t mc = std::min(kPanelRows, m - m0);
        const std::array<const std::uint8_t*, kPanelRows> w_rows = panel_rows(w, row_bytes, m0, mc);
        AlignedVector<std::uint32_t>& wp = packed[worker];
        AlignedVector<float>& wf = packed_f32[worker];
        for (std::size_t p0 = 0; p0 < pairs; p0 += kChunkPairs) {
            const std::size_t pc = std::min(kChunkPairs, pairs - p0);
            if (kernel != Kernel::fma) {
                pack_chunk<true>(w_rows, mc, k, p0, pc, wp);
                const DotBf16Args args{.x = a.pairs.data() + p0,
                                       .ldx = a.ldx,
                                       .w = wp.data(),
                                       .pairs = pc,
                                       .n = rows_x,
                                       .m = mc,
                                       .y = y.data() + m0,
                                       .ldy = m,
                                       .accumulate = p0 > 0};
                if (kernel == Kernel::amx) {
                    amx_dot_bf16(args);
                } else {
                    ops.dot_bf16(args);
                }
            } else {
                wf.resize(2 * kChunkPairs * kPanelRows);
                pack_chunk<false>(w_rows, mc, k, p0, pc, wf);
                // y[:, m0 .. m0 + mc] (+)= x̂[:, 2 p0 .. 2 (p0 + pc)] · wf, pairs swapped alike
                micro_gemm(options.simd,
                           rows_x,
                           mc,
                           2 * pc,
                           a.swapped.data() + 2 * p0,
                           a.kp,
                           wf.data(),
                           mc,
                           y.data() + m0,
                           m,
                           p0 > 0);
            }
        }
    });
}

} // namespace attn::model::detail

namespace attn::model {

std::string_view bf16_products(Simd simd) {
    switch (detail::kernel_for(detail::matmul_ops(simd), simd)) {
    case detail::Kernel::amx:
        return "AMX";
    case detail::Kernel::pairs:
        return "vdpbf16ps";
    case detail::Kernel::fma:
        break;
    }
    return "FMA";
}

} // namespace attn::model

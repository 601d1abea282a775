// The one entry point of the numeric core: scaled dot-product attention on rank-4
// tensors with masks, bias, causal alignment and grouped-query heads. Projections and
// head splitting live one layer up (projection.hpp, layer.hpp).
#pragma once

#include "attn/tensor.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace attn {

/// Causal alignment (the rule itself: KeyRule in visibility.hpp). With Lq queries and Lk
/// keys, query i may see key j iff
///   top_left:     j <= i                 (PyTorch `is_causal`)
///   bottom_right: j <= i + Lk - Lq       (KV-cache convention)
enum class Causal { none, top_left, bottom_right };

/// Which SIMD target the kernels run on, in Highway's names: "AVX3" (AVX-512), "AVX2",
/// "SSE4", "NEON", "SVE", ..., and "SCALAR" or "EMU128" (no SIMD). `best`, the default:
/// the best target compiled in that this CPU runs, chosen at run time. Any other value
/// names one target (from simd_target() or simd_supported()); the kernels throw
/// InputError when this CPU cannot run it. Targets agree within float32 tolerance; on one
/// target results are bit-identical for any thread count.
enum class Simd : std::int64_t { best = 0 };

/// The target called `name` (case-insensitive, as simd_name() prints it; "best" too).
/// Throws InputError unless it is compiled in and this CPU runs it.
Simd simd_target(std::string_view name);
/// Every target compiled into this build, best first.
std::vector<Simd> simd_compiled();
/// The compiled targets this CPU runs, best first: front() is what Simd::best picks.
std::vector<Simd> simd_supported();

/// Where the diagonal of a sliding window (and of ALiBi's relative positions) lies:
/// query i's diagonal key is i + s, with s = 0 (top_left) or s = Lk - Lq (bottom_right).
/// Causal::bottom_right forces bottom_right.
enum class Align { top_left, bottom_right };

/// A sliding window (FlashAttention `window_size`): query i sees key j iff
/// i + s - left <= j <= i + s + right; -1 = unbounded on that side.
struct Window {
    std::int64_t left = -1;
    std::int64_t right = -1;
    /// Whether either side is bounded (else the window lets every key through).
    bool bounded() const { return left >= 0 || right >= 0; }
};

/// Per-row diagnostics requested through AttentionSpec::want_*, each [B, H, Lq, 1]
/// (top_k: [B, H, Lq, K]); indices are stored as floats (exact below 2^24).
/// T is the element type: float (RowDiagnostics) or double (BasicRowDiagnostics<double>).
template <class T> struct BasicRowDiagnostics {
    using Tensor4 = xt::xtensor<T, 4>;
    std::optional<Tensor4> lse; ///< log-sum-exp of the row's final scores (+ sink); -inf if empty
    std::optional<Tensor4> entropy; ///< -sum_j w_j log w_j (natural log); 0 if empty
    std::optional<Tensor4> argmax;  ///< key of the largest weight (first on ties); -1 if empty
    std::optional<Tensor4> top_k_indices; ///< the K largest weights' keys, largest first; -1 pads
    std::optional<Tensor4> top_k_weights; ///< their weights; 0 pads
};
using RowDiagnostics = BasicRowDiagnostics<float>;

/// Everything about one call except the Q, K, V data. Pointers are borrowed for the
/// duration of the call; null means "absent". T is the precision of the computation:
/// float (AttentionSpec) or double (BasicAttentionSpec<double>, the `precision: f64` path); masks
/// are uint8 keep-masks in both.
/// Where a call's weights [B, H, Lq, Lk] (C order) go instead of the result (whose
/// `weights` then stays empty): the materialized kernel computes each block of query rows
/// in its worker's scratch and hands it over as `store(first, values, count)` (elements
/// [first, first + count) at `values`), e.g. to write it to a file (io::NpyFileWriter):
/// the weights never enter the process's memory. `size` must be B·H·Lq·Lk. `store` runs
/// on the kernel's worker threads, at the same time for different blocks.
template <class T> struct WeightsDestination {
    std::size_t size = 0;
    std::function<void(std::size_t first, const T* values, std::size_t count)> store{};
    /// false: the destination never reads a row's weights past its causal limit (it masks
    /// them itself), so the kernel leaves them unwritten there instead of zeroing them.
    bool zero_causal_tail = true;
};

/// One task's rows of the long view's raw material (PooledDestination), column-major: the
/// entry of row r (0 <= r < rows) and key column x (x_begin <= x < x_end) is at
/// [x * stride + r]: the largest weight and the sum of the weights of the column's keys the
/// row sees (0 where it sees none). Row r sees keys [key_begin[r], key_end[r]) (empty for a
/// row whose weights are NaN: a NaN score it sees) but for the padding: `open_before[j]`
/// real keys before key j (null: no padding). Columns outside [x_begin, x_end) hold no key
/// any of the rows sees.
struct PooledRows {
    std::size_t rows = 0, stride = 0, x_begin = 0, x_end = 0, top_k = 0;
    const float* max = nullptr;
    const float* sum = nullptr;
    const std::size_t* key_begin = nullptr;
    const std::size_t* key_end = nullptr;
    const std::uint32_t* open_before = nullptr;
    /// [rows, top_k]: the row's strongest keys, strongest first, ties to the lower key
    /// (0xffffffff: none), and their weights.
    const std::uint32_t* top_key = nullptr;
    const float* top_weight = nullptr;
};

/// Where the streaming kernel pools each query row's weights instead of making them (the
/// long heatmap view): per row and column of keys (column x holds keys [columns[x],
/// columns[x + 1]), columns from 0 to Lk), the largest weight and the sum of the row's
/// visible keys, which keys it sees, and its top_k strongest keys with their weights; a row
/// whose weights are NaN (a NaN score it sees) is given as seeing no key. Computed from the score
/// tiles while they are in cache and each row's final max and sum: no Lq x Lk buffer.
/// `store(first_row, rows)` gets rows [first_row, first_row + rows.rows) of [B, H, Lq]
/// (C order), on the kernel's worker threads, at the same time for different rows. Only
/// without keep_mask and bias (a blocked key is then the positional rule's or padding).
struct PooledDestination {
    std::vector<std::size_t> columns;
    std::size_t top_k = 0;
    std::function<void(std::size_t first_row, const PooledRows& rows)> store{};
};

template <class T> struct BasicAttentionSpec {
    std::optional<T> scale{}; ///< empty: 1/sqrt(D)
    Causal causal = Causal::none;
    const Mask* keep_mask =
        nullptr; ///< [Bm, Hm, Lqm, Lk], Bm in {1, B}, Hm in {1, H}, Lqm in {1, Lq}
    const xt::xtensor<T, 4>* bias =
        nullptr;                       ///< [Bb, Hb, Lqb, Lk] as keep_mask, added to scaled scores
    const Mask* key_padding = nullptr; ///< [Bp, 1, 1, Lk], Bp in {1, B}; 1 = real token
    bool want_weights = true;          ///< false: streaming kernel, no [Lq, Lk] matrix
    /// With want_weights: where the weights go instead of the result (borrowed; null: the
    /// result's own tensor).
    const WeightsDestination<T>* weights_to = nullptr;
    /// Without want_weights, float only, no keep_mask or bias: where the streaming kernel
    /// pools the weights it never makes (borrowed; null: nowhere).
    const PooledDestination* pooled_to = nullptr;
    unsigned threads = 0;   ///< 0: all hardware threads
    Simd simd = Simd::best; ///< instruction set of the kernels
    // Score features. All default to "off"; the order of a score's treatment is
    //   s = Q·Kᵀ·scale -> softcap -> + bias + alibi -> masks (keep, padding, causal, window).
    Window window{};               ///< sliding window; {-1, -1}: none
    Align align = Align::top_left; ///< diagonal of window and alibi (see Align)
    /// Variable-length sequences (FlashAttention's varlen functions): with key_padding,
    /// batch b's causal rule, window and ALiBi use Lk = its real keys (right-padded:
    /// every real key before the first padding key) instead of the padded Lk.
    bool varlen = false;
    std::optional<T> softcap{};    ///< s = cap·tanh(s / cap) before bias and masks; > 0
    std::vector<T> alibi_slopes{}; ///< empty or H: adds slope_h · (j - (i + s))
    std::vector<T> sinks{};        ///< empty or H: sink logits in each row's denominator
    bool want_lse = false;         ///< fill RowDiagnostics::lse
    bool want_entropy = false;     ///< fill RowDiagnostics::entropy (materialized kernel)
    bool want_argmax = false;      ///< fill RowDiagnostics::argmax
    std::size_t top_k = 0;         ///< > 0: fill top_k_* (materialized kernel)
};
using AttentionSpec = BasicAttentionSpec<float>;

/// The scale of the scores: spec.scale, else 1/sqrt(D) computed in T (1 when D = 0). The
/// kernels and `explain` both ask this, so a float64 problem's default is its double.
template <class T> T score_scale(const BasicAttentionSpec<T>& spec, std::size_t d) {
    return spec.scale ? *spec.scale : (d > 0 ? T{1} / std::sqrt(static_cast<T>(d)) : T{1});
}

/// The standard ALiBi slopes for H heads (ggml, max_bias = 8): n = 2^floor(log2 H),
/// m0 = 2^(-8/n), m1 = 2^(-4/n); head h < n gets m0^(h+1), else m1^(2(h-n)+1).
/// T = double (for BasicAttentionSpec<double>): the same slopes not rounded through float32.
template <class T = float> std::vector<T> alibi_default_slopes(std::size_t heads);

template <class T> struct BasicAttentionResult {
    xt::xtensor<T, 4> output;                 ///< [B, H, Lq, Dv]
    std::optional<xt::xtensor<T, 4>> weights; ///< [B, H, Lq, Lk] iff spec.want_weights
    std::int64_t rows_fully_masked = 0;       ///< query rows (over B and H) that saw no key
    BasicRowDiagnostics<T> diagnostics{};     ///< what spec.want_* asked for
};
using AttentionResult = BasicAttentionResult<float>;

/// attend() into a caller-owned result, as BLAS's sgemm writes into its C: the output,
/// weights and diagnostics `result` already holds keep their storage when their shapes are
/// the call's, and are (re)allocated otherwise; what the spec does not ask for is dropped.
/// A loop over calls of one shape thus allocates its [B, H, Lq, Lk] weights once instead
/// of on every call (first-touch page faults on a fresh tensor can cost as much as the
/// arithmetic). Every element is overwritten, masked weights included (exactly 0), so
/// the result is bit-identical to attend()'s whatever the buffers held. T is float or
/// double, deduced from the tensors.
///
/// Example:
///   AttentionResult r;
///   for (const auto& [q, k, v] : batches) { attend_into(q, k, v, spec, r); use(r); }
/// q, k and v are views (attn/tensor.hpp): a tensor converts to one, and an InputTensor
/// reads its caller's memory in place.
template <class T>
void attend_into(BasicTensorView<T> q,
                 BasicTensorView<T> k,
                 BasicTensorView<T> v,
                 const BasicAttentionSpec<T>& spec,
                 BasicAttentionResult<T>& result);
/// attend_into() of tensors (T deduced from them).
template <class T>
void attend_into(const BasicTensor<T>& q,
                 const BasicTensor<T>& k,
                 const BasicTensor<T>& v,
                 const BasicAttentionSpec<T>& spec,
                 BasicAttentionResult<T>& result) {
    attend_into(BasicTensorView<T>(q), BasicTensorView<T>(k), BasicTensorView<T>(v), spec, result);
}

/// Scaled dot-product attention:
///   weights = softmax(Q·Kᵀ·scale + bias, masked) over keys, output = weights·V.
///
/// Shapes:  q: [B, H, Lq, D]   k: [B, Hkv, Lk, D]   v: [B, Hkv, Lk, Dv]
/// Grouped-query attention when Hkv < H (query head h uses kv head h / (H / Hkv));
/// requires H % Hkv == 0. Masks and bias broadcast over a size-1 batch, head or query dim
/// (read in place, never copied).
/// A key is seen only where keep_mask, key_padding, causal and a finite-or-+inf bias all
/// allow it. A query row that sees no key gets zeros in output and weights, and is
/// counted in rows_fully_masked. NaN and ±inf in the inputs reach exactly the rows that see
/// them: a blocked key (keep_mask, key_padding, causal, window or a -inf bias) contributes
/// nothing, whatever its key, value or score holds; a visible one propagates as in PyTorch.
/// Every output row is computed by one thread, so results do not depend on `threads`.
///
/// Throws InputError naming the argument, the expected shape and the actual shape.
///
/// Example:
///   auto r = attend(q, k, v, {.causal = Causal::top_left, .want_weights = false});
///
/// T = double (deduced from the tensors) is the same computation entirely in float64
/// (`precision: f64`): every score, softmax, feature and diagnostic in double, with dgemm
/// per block of 64 query rows, so without weights memory stays linear in the sequence
/// length; simple rather than fast; the semantics, shapes and errors are those of float32.
template <class T>
BasicAttentionResult<T> attend(const BasicTensor<T>& q,
                               const BasicTensor<T>& k,
                               const BasicTensor<T>& v,
                               const BasicAttentionSpec<T>& spec = {}) {
    BasicAttentionResult<T> result;
    attend_into(q, k, v, spec, result);
    return result;
}

/// Throws InputError unless q, k, v and the spec's masks agree (see attend()).
template <class T>
void attend_check(BasicTensorView<T> q,
                  BasicTensorView<T> k,
                  BasicTensorView<T> v,
                  const BasicAttentionSpec<T>& spec);
/// attend_check() of tensors (T deduced from them).
template <class T>
void attend_check(const BasicTensor<T>& q,
                  const BasicTensor<T>& k,
                  const BasicTensor<T>& v,
                  const BasicAttentionSpec<T>& spec) {
    attend_check(BasicTensorView<T>(q), BasicTensorView<T>(k), BasicTensorView<T>(v), spec);
}

} // namespace attn

// Solving a decoded problem with the core, and the result document of the contract.
#pragma once

#include "attn/attention.hpp"
#include "attn/io/array.hpp"
#include "attn/problem/head_stats.hpp"
#include "attn/problem/problem.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace attn::problem {

class Rollout;
class BlockCache;

struct SolveOptions {
    bool want_weights = true;
    unsigned threads = 0; ///< 0: all cores
    /// The SIMD target of the kernels (attn::simd_target()): results bit-identical for
    /// any thread count on one target, within float32 tolerance across targets.
    Simd simd = Simd::best;
    /// Refuse (InputError, before any allocation) a problem whose estimate_memory() exceeds
    /// this; 0: memory_limit() (attn/io/limits.hpp).
    std::uint64_t max_memory = 0;
    /// Whether the results leave as JSON text (a result document), which a model run's
    /// memory estimate counts at 12 more bytes a value (the copy and its text), or as
    /// binary arrays (.npz, .npy: 4 bytes a value, the whole encoding when it goes to
    /// stdout or a device; a file is written as encoded).
    bool results_text = true;
    /// Where the weights go instead of Solution::weights (left empty): a float32 problem
    /// without average_heads only (weights_direct()). All of them in the contract's order;
    /// for a layer stack or a model run, every selected layer's in turn ([layers, ...]).
    const WeightsDestination<float>* weights_to = nullptr;
    /// With want_weights false: where the streaming kernel pools the weights it never makes
    /// (AttentionSpec::pooled_to): a float32 problem of one attention call without
    /// keep_mask, bias or anything else that needs the weights (pooled_direct()).
    const PooledDestination* pooled_to = nullptr;
    /// A model run calls this after each layer with the layers finished and the layers it
    /// runs (up to the last selected one), from the solving thread: progress for a front
    /// end. Empty: nothing is called.
    std::function<void(std::size_t done, std::size_t total)> on_layer{};
    /// "return": ["rollout"] over several layers: the accumulator each layer adds to (null:
    /// solve() rolls out its one layer itself).
    Rollout* rollout = nullptr;
    /// A model run's layer weights kept across runs of the same model (model_run.hpp; a
    /// census of many texts): each layer read once. Null: read when the layer runs, dropped
    /// after. float32 runs only.
    BlockCache* block_cache = nullptr;
};

/// True when solve() can write p's weights to SolveOptions::weights_to: the kernel's
/// weights are the contract's as they are (precision f32, no average_heads).
bool weights_direct(const Problem& p);

/// True when solve() can pool p's weights into SolveOptions::pooled_to: weights_direct(p),
/// one attention call (the caller knows: not a stack or a model run), no keep_mask or bias
/// (the kernel's blocked keys are then the positional rule's and the padding), and nothing
/// that reads the weights themselves (head_stats, rollout, entropy, top_k, select_heads,
/// query_rows).
bool pooled_direct(const Problem& p);

/// Layer `index` of `count`'s part of a destination for stacked weights: its elements and
/// `store` offset by index · size / count.
WeightsDestination<float>
weights_slot(const WeightsDestination<float>& all, std::size_t index, std::size_t count);

/// The result in the contract's shapes: output keeps the query source's leading dims;
/// weights are [B, H, Lq, Lk] with B dropped for unbatched inputs and H for one head
/// (rank-4 inputs keep it: [B, 1, Lq, Lk]); "average_heads" averages them over heads
/// into one.
/// A precision f64 problem gives Arrays holding the float64 results in values64 (and their
/// float32 rounding in values); encode_npy(Array, ...) and encode_json_array(Array) use them.
struct Solution {
    io::Array output;
    std::optional<io::Array> weights;
    std::int64_t rows_fully_masked = 0;
    /// "return" diagnostics: [B, H, Lq] (top_k: [B, H, Lq, K]), B and H dropped as weights.
    std::optional<io::Array> lse, entropy, argmax, top_k_indices, top_k_weights;
    /// A whole model's "return": ["hidden_states"]: [layers + 1, B, L, E], B dropped as above.
    std::optional<io::Array> hidden_states;
    /// "return": ["head_stats"]: each statistic [B, H] ([layers, B, H] stacked), B dropped
    /// as above, H always kept.
    std::optional<HeadStatArrays> head_stats;
    /// The same statistics' sums and row counts, one entry per layer (what a census pools).
    std::vector<HeadStatTotals> head_stat_totals;
    /// "return": ["rollout"]: [B, L, L], B dropped as above.
    std::optional<io::Array> rollout;
    /// A whole model's input ids (for --output FILE.npz), [B, L] or [L].
    std::optional<io::Array> token_ids;
};

/// One attention layer's result in problem p's contract shapes (output [B, Lq, E], B
/// dropped for unbatched inputs; weights and diagnostics as solve() gives them).
template <class T> Solution layer_solution(const Problem& p, BasicLayerResult<T> result);

/// A tensor as a result Array of `shape` (its size); float64 keeps values64.
template <class T> io::Array result_array(const BasicTensor3<T>& t, std::vector<std::size_t> shape);

/// Computes a decoded problem. First checks its memory estimate against
/// options.max_memory (check_memory() in attn/problem/checks.hpp): throws InputError naming
/// the figures when it does not fit.
Solution solve(const Problem& problem, const SolveOptions& options);

/// The warning every front end gives after solving when query rows saw no key (one line,
/// without a "warning:" prefix), or "" when none did. `stacked`: an every-layer result
/// (the count covers its layers too).
std::string fully_masked_warning(const Solution& solution, bool stacked = false);

/// The attention spec solve() hands the core for this problem in precision T (pointing
/// into it; double needs a precision f64 problem): what `explain` and the heatmap's
/// hatching ask attn::Visibility about, and what the memory estimate sizes the kernel by.
template <class T = float>
BasicAttentionSpec<T> attention_spec(const Problem& problem, const SolveOptions& options = {});

/// The result document: {"id": .., "output": .., "weights": .., "query_tokens": ..,
/// "key_tokens": ..} (id, weights and tokens only where present), one line, no
/// trailing newline. Numbers round-trip float32 (float64 for a precision f64 problem: the
/// shortest text that reads back as the same double); non-finite ones are
/// "inf"/"-inf"/"nan".
/// with_weights = false leaves the weights out (they went to a file: --weights).
std::string
result_document(const Problem& problem, const Solution& solution, bool with_weights = true);

} // namespace attn::problem

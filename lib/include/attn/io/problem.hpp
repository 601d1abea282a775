// The JSON problem document of the contract: decoding (fields, presets, relative paths,
// shapes) into tensors and specs, solving it with the core, and the result document.
// The core never sees JSON; this is where the contract's shapes meet the core's rank-4
// tensors.
#pragma once

#include "attn/attention.hpp"
#include "attn/io/array.hpp"
#include "attn/layer.hpp"

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace attn::io {

/// One array (or params file) a problem was decoded from: for --check-finite, the
/// output-path check and messages in the user's own terms.
struct ProblemSource {
    std::string field;              ///< "query", "mask", "params.w_q", "params" (a params file)
    std::filesystem::path path;     ///< the file read (resolved against base_dir); empty
                                    ///< for a JSON literal
    std::vector<std::size_t> shape; ///< as given, in the user's rank; empty for a params file
    /// The first value --check-finite refuses, as a C-order flat index: NaN or ±inf in
    /// numeric arrays, NaN or +inf in bias (-inf blocks there); never set for masks.
    std::optional<std::size_t> first_nonfinite;
    float nonfinite_value = 0.0f;
};

/// The numeric inputs of a problem in float64, never rounded through float32: NPY f8 and
/// JSON decimals as read, init weights as drawn (precision f64 only). Checkpoint tensors
/// (F32/F16/BF16) are widened exactly.
struct ExactInputs {
    BasicTensor3<double> query_src, key_src, value_src; ///< as Problem's, when !direct_heads
    BasicTensor<double> q4, k4, v4;                     ///< as Problem's, when direct_heads
    std::optional<BasicProjections<double>> projections;
    std::optional<BasicTensor<double>> bias; ///< bias + additive masks, [B|1, H|1, Lq, Lk]
    std::optional<double> scale, softcap;
    std::vector<double> alibi_slopes, sinks;
};

/// A decoded problem: every array loaded and checked, the preset applied.
struct Problem {
    bool direct_heads = false;             ///< rank-4 Q, K, V: [B, H, L, D], no projections
    bool batched = false;                  ///< the query source had a batch dim
    Tensor3 query_src, key_src, value_src; ///< rank 2/3 sources, lifted to [B, L, E]
    Tensor q4, k4, v4;                     ///< rank-4 inputs (direct_heads)
    std::optional<Projections> projections;
    std::size_t num_heads = 1;
    std::size_t num_kv_heads = 1;
    std::optional<float> scale;
    Causal causal = Causal::none;
    std::optional<Mask> mask;        ///< [B|1, H|1, Lq, Lk]
    std::optional<Tensor> bias;      ///< [B|1, H|1, Lq, Lk]
    std::optional<Mask> key_padding; ///< [B|1, 1, 1, Lk]
    std::optional<std::vector<std::string>> query_tokens, key_tokens;
    std::optional<nlohmann::json> id;
    std::size_t batch = 1, lq = 0, lk = 0;
    std::vector<ProblemSource> sources; ///< every array field and params file, in load order
    // Issue 7 (attention features); see AttentionSpec for the definitions.
    Window window{};                      ///< "window": [left, right], -1 = unbounded
    Align window_align = Align::top_left; ///< "window_align" (bottom-right forced by causal)
    std::optional<float> softcap{};       ///< "softcap"
    std::vector<float> alibi_slopes{};    ///< "alibi": true (default slopes) or H slopes
    std::vector<float> sinks{};           ///< "sinks": H logits
    bool return_lse = false;              ///< "return": [..., "lse", ...]
    bool return_entropy = false;
    bool return_argmax = false;
    std::size_t top_k = 0; ///< "return": [..., "top_k"] with "top_k": K
    /// "precision": "f32" (default) or "f64". With f64 the float fields above still hold
    /// the float32 rounding of every input (for shapes, explain, heatmaps and estimates) and
    /// `exact` holds what solve() computes with.
    Precision precision = Precision::f32;
    std::optional<ExactInputs> exact; ///< set iff precision == f64
};

/// The fields a problem document may hold (the contract's names).
const std::vector<std::string>& problem_fields();

/// Decodes a problem document. Relative array paths are resolved against `base_dir`
/// (the problem file's folder, or the working folder for stdin). Applies the "variant"
/// preset, loads arrays (JSON literals or .npy/.json paths), checks every shape, and
/// throws InputError naming the field, with expected and actual shapes. Random `init`
/// weights that would exceed memory_limit() (attn/io/limits.hpp) are refused before they
/// are allocated.
Problem decode_problem(const nlohmann::json& doc, const std::filesystem::path& base_dir);

struct SolveOptions {
    bool want_weights = true;
    unsigned threads = 0; ///< 0: all cores
    /// Refuse (InputError, before any allocation) a problem whose estimate_memory() exceeds
    /// this; 0: memory_limit() (attn/io/limits.hpp).
    std::uint64_t max_memory = 0;
};

/// The result in the contract's shapes: output keeps the query source's leading dims;
/// weights are [B, H, Lq, Lk] with B dropped for unbatched inputs and H for one head.
/// A precision f64 problem gives Arrays holding the float64 results in values64 (and their
/// float32 rounding in values); encode_npy(Array, ...) and encode_json_array(Array) use them.
struct Solution {
    Array output;
    std::optional<Array> weights;
    std::int64_t rows_fully_masked = 0;
    /// "return" diagnostics: [B, H, Lq] (top_k: [B, H, Lq, K]), B and H dropped as weights.
    std::optional<Array> lse, entropy, argmax, top_k_indices, top_k_weights;
};

/// Computes a decoded problem. First checks its memory estimate against
/// options.max_memory (check_memory() in attn/io/limits.hpp): throws InputError naming the
/// figures when it does not fit.
Solution solve(const Problem& problem, const SolveOptions& options);

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
std::string result_document(const Problem& problem, const Solution& solution);

/// Parses JSON text (a problem document) with one-line errors: "NAME: invalid JSON: ...".
/// Text nested deeper than max_json_depth is refused before parsing (check_json_depth).
nlohmann::json parse_json_text(std::string_view text, std::string_view name);

} // namespace attn::io

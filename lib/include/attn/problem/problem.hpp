// The JSON problem document of the contract decoded (fields, presets, relative paths,
// shapes) into tensors and specs. The core never sees JSON; this is where the contract's
// shapes meet the core's rank-4 tensors. Solving it: attn/problem/solve.hpp.
#pragma once

#include "attn/attention.hpp"
#include "attn/io/array.hpp"
#include "attn/io/source.hpp"
#include "attn/layer.hpp"
#include "attn/model/matmul.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/rollout.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace attn::problem {

using io::Precision;
using io::ProblemSource;

/// The numeric inputs of a problem in precision T: what solve() computes with. A Problem is
/// its float32 inputs (always: shapes, explain, heatmaps and estimates read them) and, for
/// precision f64, holds them again in float64, never rounded through float32: NPY f8 and
/// JSON decimals as read, init weights as drawn, checkpoint tensors (F32/F16/BF16) widened
/// exactly. Every field is decoded once for both (decode_detail.hpp: for_each_precision).
template <class T> struct BasicInputs {
    using value_type = T;
    BasicTensor3<T> query_src, key_src, value_src; ///< rank 2/3 sources, lifted to [B, L, E]
    /// Rank-4 inputs (direct_heads); a float32 one handed over borrowed
    /// (io::Array::borrowed) is read in place.
    BasicInputTensor<T> q4, k4, v4;
    std::optional<BasicProjections<T>> projections;
    std::optional<BasicTensor<T>> bias; ///< bias + additive masks, [B|1, H|1, Lq|1, Lk]
    std::optional<T> scale;
    std::optional<T> softcap;         ///< "softcap"
    std::vector<T> alibi_slopes;      ///< "alibi": true (default slopes) or H slopes
    std::vector<T> sinks;             ///< "sinks": H logits
    std::optional<BasicNorm<T>> norm; ///< the pre-attention norm of the sources (checkpoint)
};
using Inputs = BasicInputs<float>;

/// One setting of a model and where its value came from, for `explain`:
/// {"num_heads", "12", "config.json n_head"}.
struct Setting {
    std::string name, value, origin;
};

/// A decoded problem: every array loaded and checked, the preset applied. Its numeric
/// inputs are the float32 ones it derives from (p.query_src, p.bias, ...); inputs<T>() gives
/// those solve() computes with in precision T.
struct Problem : Inputs {
    bool direct_heads = false; ///< rank-4 Q, K, V: [B, H, L, D], no projections
    bool batched = false;      ///< the query source had a batch dim
    std::size_t num_heads = 1;
    std::size_t num_kv_heads = 1;
    Causal causal = Causal::none;
    std::optional<Mask> mask;        ///< [B|1, H|1, Lq, Lk]
    std::optional<Mask> key_padding; ///< [B|1, 1, 1, Lk]
    std::optional<std::vector<std::string>> query_tokens, key_tokens;
    /// "text": each text's vocabulary strings (the result's "tokens"); the document's
    /// token_ids, key_padding_mask and labels were made from them (decode_text.cpp).
    std::optional<std::vector<std::vector<std::string>>> text_tokens;
    bool text_batched = false; ///< "text" was a list (tokens: a list per text)
    std::optional<nlohmann::json> id;
    std::size_t batch = 1, lq = 0, lk = 0;
    std::vector<ProblemSource> sources; ///< every array field and params file, in load order
    // Score features and diagnostics; see AttentionSpec for the definitions.
    Window window{};                      ///< "window": [left, right], -1 = unbounded
    Align window_align = Align::top_left; ///< "window_align" (bottom-right forced by causal)
    bool varlen = false;     ///< "varlen": per-sequence alignment from key_padding_mask
    bool return_lse = false; ///< "return": [..., "lse", ...]
    bool return_entropy = false;
    bool return_argmax = false;
    std::size_t top_k = 0;          ///< "top_k": K (with or without "return": ["top_k"])
    bool return_head_stats = false; ///< "return": [..., "head_stats", ...] (head_stats.hpp)
    bool return_rollout = false;    ///< "return": [..., "rollout", ...] (layer_analysis.hpp)
    RolloutFusion rollout_fusion = RolloutFusion::mean; ///< "rollout_fusion"
    bool average_heads = false; ///< "average_heads": weights averaged over heads
    /// "select_heads": the query heads whose weights, diagnostics and head statistics the
    /// result keeps, ascending (attn/problem/selection.hpp); empty: every head.
    std::vector<std::size_t> select_heads;
    /// "query_rows": the query rows [A, B) the weights and diagnostics keep, resolved with
    /// Python's slice rule; empty: every row.
    std::optional<std::array<std::size_t, 2>> query_rows;
    /// "precision": "f32" (default) or "f64". With f64 the float32 inputs still hold the
    /// float32 rounding of every input and `doubles` holds what solve() computes with.
    Precision precision = Precision::f32;
    std::optional<BasicInputs<double>> doubles; ///< set iff precision == f64
    /// "weights_dtype": "f32" (default) or "f16": the element type of the weights written to
    /// an NPY or .npz file (and returned to Python), rounded to nearest-even once.
    bool weights_f16 = false;
    /// "activations": "f32" (default: exact products of the dequantized weights), "q8_0"
    /// (a whole model's Q8_0 and Q4_0 weights multiply their inputs rounded to Q8_0, as
    /// llama.cpp does; attn/model/matmul.hpp) or "q8" (those, and Q4_K, Q5_K and Q6_K
    /// weights theirs rounded to Q8_K: llama.cpp's rounding for each type) or "bf16" (BF16
    /// weights multiply their inputs rounded to BF16, in BF16 pair products as AVX512_BF16's
    /// vdpbf16ps). Each is refused where it changes nothing.
    model::Activations activations = model::Activations::f32;
    // Real models.
    std::optional<RopeSpec> rope; ///< "rope": rotary embeddings of Q and K after the head split
    RopePositions rope_positions; ///< the rows' positions, resolved for Lq and Lk
    std::optional<model::ParamsLayout> layout; ///< a checkpoint's layout
    std::string prefix;                        ///< and its attention prefix
    std::vector<Setting> settings;             ///< heads, RoPE, norm: values and their origins
    /// Likely mistakes noticed while decoding (heads left at 1 with a state dict, a mask of
    /// the opposite polarity), one line each without the "warning:" prefix; the result is
    /// computed as given. The caller prints them unless told to be quiet.
    std::vector<std::string> warnings;

    /// The inputs solve() computes with in precision T: the float32 ones, or (precision f64
    /// only) the float64 ones.
    template <class T> const BasicInputs<T>& inputs() const {
        if constexpr (std::is_same_v<T, float>) {
            return *this;
        } else {
            ATTN_ASSERT(doubles.has_value());
            return *doubles;
        }
    }
};

/// Arrays handed to decode_problem() already read, by field name ("query", "mask", ...).
using ArrayValues = std::map<std::string, io::Array>;

/// The fields a problem document may hold (the contract's names).
const std::vector<std::string>& problem_fields();

/// The fields an array may be handed over for, already read (decode_problem's `given`,
/// a front end's arrays): query, key, value, input, context, mask, bias,
/// key_padding_mask, token_ids, and hidden_states, which only decode_layer_stack takes
/// (attn/problem/layers.hpp). Weights go as "params.NAME".
const std::vector<std::string>& array_fields();

/// Decodes a problem document. Relative array paths are resolved against `base_dir`
/// (the problem file's folder, or the working folder for stdin). Applies the "variant"
/// preset, loads arrays (JSON literals or .npy/.json paths), checks every shape, and
/// throws InputError naming the field, with expected and actual shapes. Random `init`
/// weights that would exceed memory_limit() (attn/io/limits.hpp) are refused before they
/// are allocated.
/// `given` holds array fields already read (an array from stdin, say), by field name: they
/// are taken as they are, as if the document held them as JSON literals.
Problem decode_problem(const nlohmann::json& doc,
                       const std::filesystem::path& base_dir,
                       ArrayValues given = {});

} // namespace attn::problem

// Internal to decode_problem(): the decoding context and the field-group decoders it calls,
// shared by decode.cpp (context, presets, sources, heads), decode_arrays.cpp (array
// fields), decode_params.cpp (params and init) and decode_fields.cpp (scale, causal,
// masks, bias, padding, score features, labels). A numeric field is decoded once for both
// precisions (decode_precision.hpp).
#pragma once

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/model/hf_config.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/problem/problem.hpp"
#include "decode_precision.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace attn::problem::detail {

// The names every field group uses.
namespace fs = std::filesystem;
using io::Array;
using io::ArrayKind;
using nlohmann::json;

/// What every field group reads: the document (with its preset defaults filled in), the
/// directory relative paths start from, the arrays handed over already read, the variant
/// and the precision the arrays are read in.
struct DecodeContext {
    nlohmann::json doc = nlohmann::json::object();
    std::filesystem::path base;
    ArrayValues given;
    std::string variant;
    Precision precision = Precision::f32;
    std::optional<model::HfConfig> config;             ///< a checkpoint's config.json
    std::optional<model::CheckpointParams> checkpoint; ///< loaded early for token_ids
    bool heads_known = false;                          ///< num_heads given or in the config
    bool kv_heads_known = false;                       ///< num_kv_heads given or in the config

    /// Whether a field is given (a JSON null counts as absent).
    bool has(const char* field);
    /// An array field: handed over already read (stdin), or loaded from the document;
    /// records its source in p.sources. A borrowed array (io::Array::borrowed) stays
    /// borrowed for the sources (query, key, value, input, context: to_tensor4 reads it in
    /// place, to_tensor3 copies it once); any other field gets its values copied.
    io::Array load(Problem& p, const char* field, io::ArrayKind kind, std::optional<Tensor>* rank4);
};

// Messages (decode.cpp).
std::string type_name(const nlohmann::json& j);
/// A value quoted in a message: one line, and short whatever the input holds.
std::string shown(const nlohmann::json& j);
/// A key or string quoted in a message.
std::string shown(const std::string& s);
std::size_t positive_int(const nlohmann::json& j, const char* name);
bool boolean(const nlohmann::json& j, const char* name);

// Array fields (decode_arrays.cpp).
void record_source(std::vector<ProblemSource>& sources,
                   const std::string& name,
                   const std::filesystem::path& path,
                   const std::vector<std::size_t>& shape,
                   std::span<const float> values,
                   io::ArrayKind kind);
void record_source(std::vector<ProblemSource>& sources,
                   const std::string& name,
                   const std::filesystem::path& path,
                   const io::Array& a,
                   io::ArrayKind kind);
io::Array load_array(const nlohmann::json& j,
                     const std::string& name,
                     io::ArrayKind kind,
                     const std::filesystem::path& base,
                     std::vector<ProblemSource>& sources,
                     Precision precision = Precision::f32,
                     std::optional<Tensor>* rank4 = nullptr);
/// An array handed over (DecodeContext::given) in the problem's precision: for precision
/// f64, one without float64 values gets its float32 values widened (exact), so that every
/// numeric field has both.
io::Array handed_over(io::Array a, Precision precision);
/// [L, E] or [B, L, E] -> [B, L, E] in T; `a`'s values in T are released.
template <class T>
BasicTensor3<T> to_tensor3(io::Array& a, const std::string& name, const char* dims);
/// [B, H, L, D] in T; `a`'s values in T are released. A float32 .npy input read straight
/// into its tensor (`sunk`, load()'s rank4) is taken as it is, and a borrowed one
/// (io::Array::borrowed) is read in place.
template <class T> BasicInputTensor<T> to_tensor4(io::Array& a, std::optional<Tensor>& sunk);
/// A mask's or bias's shape checked and broadcast against [B, H, Lq, Lk] (rank 3 is
/// [B, Lq, Lk]); returns [B|1, H|1, Lq|1, Lk], growing a size-1 key dim of `a` to Lk.
Shape pair_shape(io::Array& a,
                 const std::string& name,
                 std::size_t b,
                 std::size_t h,
                 std::size_t lq,
                 std::size_t lk);

/// Refuses arrays handed over (cx.given) under a name that is not an array field or a
/// params weight ("params.w_q"), or that the document gives too (decode.cpp).
void check_given(const DecodeContext& cx);

// Field groups, in the order decode_problem() calls them.
// decode.cpp: presets, id and precision, and the sources and heads (which go on with
// decode_projections for rank-2/3 sources).
void decode_presets(DecodeContext& cx);
void decode_id_and_precision(DecodeContext& cx, Problem& p);
void decode_sources(DecodeContext& cx, Problem& p);
// decode_params.cpp: params or init.
void decode_projections(DecodeContext& cx, Problem& p);
// decode_model.cpp: a checkpoint's config.json (before the sources), token_ids (as the
// query source), and after the sources its norm and the "rope"/"norm" fields.
void decode_config(DecodeContext& cx, Problem& p);
void decode_token_ids(DecodeContext& cx, Problem& p);
// decode_text.cpp: "text" tokenized into the document's token_ids (before the sources).
void decode_text(DecodeContext& cx, Problem& p);
/// A whole model's "text" (with "special_tokens"): tokenized as decode_text does and put
/// in `doc` as "token_ids" (with "key_padding_mask" for a list of texts and "tokens" as
/// labels) in their place; returns the decoded text part (tokens, settings). Nothing
/// changes without "text".
Problem text_to_token_ids(nlohmann::json& doc, const std::filesystem::path& base);
void decode_model(DecodeContext& cx, Problem& p);
/// The checkpoint a "params" value names, loaded once (cx.checkpoint).
const model::CheckpointParams& checkpoint_params(DecodeContext& cx, Problem& p);
// decode_fields.cpp.
void decode_scale_and_causal(DecodeContext& cx, Problem& p);
void decode_masks(DecodeContext& cx, Problem& p);
void decode_score_features(DecodeContext& cx, Problem& p);
void decode_labels(DecodeContext& cx, Problem& p);
// selection.cpp: "select_heads", "query_rows" (after the heads and lengths are known).
void decode_selection(DecodeContext& cx, Problem& p);

} // namespace attn::problem::detail

// Reading back what attn wrote: a result document (result_document() in solve.hpp) or a
// bare array (--output/--weights as .npy or .json). The one reader behind `attn diff`,
// `attn heatmap WEIGHTS` and any other front end that takes a result as input.
#pragma once

#include "attn/io/array.hpp"

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::problem {

/// What the leading axes of weights [B?, H?, Lq, Lk] are (a stacked result's layers come
/// before them). Whoever knows says: solve()'s rule for a problem's weights (weights_axes()
/// in solve.hpp), the contract's reading of a bare array (axes_of_rank()), or a front end's
/// flag (`heatmap --batch` on a rank-3 file: its first axis is the batch).
struct WeightsAxes {
    bool batch = false;
    bool heads = false;
    /// The rank these axes give weights (2, 3 or 4).
    std::size_t rank() const { return 2 + (batch ? 1U : 0U) + (heads ? 1U : 0U); }
    bool operator==(const WeightsAxes&) const = default;
};

struct Problem;

/// The axes of p's weights as solve() shapes them (Solution::weights): B for batched
/// inputs, H unless one head is dropped (rank-4 inputs keep it; "average_heads" leaves
/// one). The rule solve() applies, defined beside it (solve.cpp).
WeightsAxes weights_axes(const Problem& p);

/// The contract's reading of weights of `rank` dims (besides a stacked result's layers):
/// [Lq, Lk], [H, Lq, Lk], [B, H, Lq, Lk]; other ranks: no leading axes (the shape check is
/// the reader's).
WeightsAxes axes_of_rank(std::size_t rank);

/// Leading axes a front end names (`attn heatmap --axes layers,heads`): whether the first
/// is a stack's layers, then what the rest are.
struct NamedAxes {
    bool layers = false;
    WeightsAxes axes;
    /// The rank these axes give weights (2 to 5).
    std::size_t rank() const { return axes.rank() + (layers ? 1U : 0U); }
};

/// Reads option axes: "layers", "batch", "heads" joined by commas, each at most once and
/// in that order (the order of a stacked result's [layers, B, H, Lq, Lk]); "none": [Lq,
/// Lk]. Throws InputError naming the option.
NamedAxes parse_named_axes(std::string_view text);

/// A result file as read: a bare array, or the arrays and labels of a result document.
struct ResultFile {
    std::string name;                 ///< for messages: the path, or "<stdin>"
    bool document = false;            ///< a result document (else `array` holds the bare array)
    std::optional<io::Array> array;   ///< a bare array (NPY or a JSON array literal)
    std::optional<io::Array> output;  ///< the document's "output"
    std::optional<io::Array> weights; ///< the document's "weights" (rank <= 5: stacked)
    /// The document's labels; "tokens" (the vocabulary strings of a "text" problem) fills
    /// whichever of the two is absent.
    std::vector<std::string> query_tokens, key_tokens;
    std::vector<std::size_t> layers; ///< a stacked result's "layers": its leading axis
};

/// How to read the arrays: `kind` (mask also takes booleans) and `precision` (f64 keeps
/// the values exactly as written, Array::values64).
struct ResultReadOptions {
    io::ArrayKind kind = io::ArrayKind::numeric;
    io::Precision precision = io::Precision::f32;
};

/// Reads a result document already parsed as JSON (an object). Throws InputError naming
/// `name`: an error document ("error"), a document with neither "output" nor "weights",
/// token lists that are not lists of strings, "layers" that is not a list of layer numbers.
ResultFile read_result_document(const nlohmann::json& doc,
                                const std::string& name,
                                const ResultReadOptions& options = {});

/// Reads `bytes`: NPY (by its magic, or when `format` says npy), else JSON, which is an
/// array literal or a result document. `format`: the format the file's name gives, if any
/// (a .json file is read as JSON whatever it starts with). Throws InputError naming `name`.
ResultFile read_result_bytes(std::span<const std::uint8_t> bytes,
                             const std::string& name,
                             const ResultReadOptions& options = {},
                             std::optional<io::ArrayFormat> format = std::nullopt);

} // namespace attn::problem

// Every layer of a checkpoint in one problem: "hidden_states" [layers + 1, B, L, E] (or
// [layers + 1, L, E]), as Hugging Face's output_hidden_states=True returns them stacked,
// and "layers" (default: all). Layer l is the one-layer problem of the same document with
// hidden state l as its input and layer l's prefix of the checkpoint; the layers are
// decoded and solved one at a time, and the results stacked along a leading layer axis.
#pragma once

#include "attn/io/array.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace attn::problem {

/// A decoded multi-layer problem: the hidden states, the checkpoint's layers, the
/// selection, and the document every layer's problem is made from.
struct LayerStack {
    io::Array hidden_states;           ///< [N + 1, B, L, E] or [N + 1, L, E]
    std::vector<std::string> prefixes; ///< the checkpoint's layer prefixes, by number
    std::string layout;                ///< their layout's name
    std::vector<std::size_t> layers;   ///< the selected layers, in the order given
    nlohmann::json layer_doc;          ///< the document without hidden_states and layers
    std::filesystem::path base;
    ArrayValues given;
    /// The first selected layer's problem, decoded: what explain, the heatmap's hatching
    /// and the result document's tokens and id come from (every layer shares its masks
    /// and shapes). Its sources include hidden_states.
    Problem first;
};

/// Appends `part` (one layer's result) to `stack` along a new leading axis (`count`: the
/// layers to come, for the reservation). Nothing when `part` is empty.
void append_layer(std::optional<io::Array>& stack,
                  const std::optional<io::Array>& part,
                  std::size_t count);

/// Appends one layer's solution `r` to the stacked `stack` (every result array along a new
/// leading axis, the fully-masked rows summed); its output goes to `output` until the last
/// layer is in. `count`: the layers to come, as for append_layer.
void append_solution(Solution& stack,
                     std::optional<io::Array>& output,
                     const Solution& r,
                     std::size_t count);

/// The "layers" field: "0,3,5-7" or a list of non-negative integers, none twice.
/// Throws InputError("layers: ...").
std::vector<std::size_t> layer_selection(const nlohmann::json& j);

/// Whether a problem document is a multi-layer one (it has "hidden_states").
bool is_layer_stack(const nlohmann::json& doc);

/// Decodes a multi-layer document: reads hidden_states (its .npz member defaults to
/// "hidden_states"), finds the checkpoint's layers in "params" (a .safetensors path or
/// {"file", "prefix", "layout"}; prefix, if given, is where the layer prefixes start),
/// checks hidden_states' first dimension against them and "layers" ("0,3,5-7" or a list
/// of numbers) against their count, and decodes the first selected layer. Throws
/// InputError naming the field.
LayerStack decode_layer_stack(const nlohmann::json& doc,
                              const std::filesystem::path& base,
                              ArrayValues given = {});

/// Layer `layer`'s own problem: the document with "input" = hidden state `layer` and
/// "params" at the layer's prefix, decoded by decode_problem().
Problem decode_stack_layer(const LayerStack& stack, std::size_t layer);

/// Solves the selected layers one at a time (decode_stack_layer(), then solve()) and
/// stacks their results: output [layers, B, L, E], weights [layers, B, H, Lq, Lk],
/// diagnostics [layers, B, H, Lq] (B and H dropped as solve() drops them). Only one
/// layer's kernel memory is held at a time; without weights no Lq × Lk matrix is kept.
/// `check_finite`: --check-finite on every layer's inputs. The memory check counts the
/// stacked results and one layer's working memory.
Solution
solve_layer_stack(const LayerStack& stack, const SolveOptions& options, bool check_finite = false);

/// The stack's result document: as result_document() with every array stacked, plus
/// "layers": the layer numbers of the leading axis.
std::string
stack_result_document(const LayerStack& stack, const Solution& solution, bool with_weights = true);

} // namespace attn::problem

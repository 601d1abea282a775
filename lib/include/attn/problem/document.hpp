// A problem document as every front end takes it: one problem, every layer of a checkpoint
// ("hidden_states"), or a whole model's forward pass ("params" a model folder or .gguf),
// decoded once and solved by the right function. `attn compute` and attn.compute are this.
#pragma once

#include "attn/io/array.hpp"
#include "attn/problem/layers.hpp"
#include "attn/problem/model_run.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace attn::problem {

/// A decoded document: exactly one of a problem, a layer stack, a model run.
struct DecodedDocument {
    std::variant<Problem, LayerStack, ModelRun> decoded;

    /// The problem, or the stack's first layer: what the result document's tokens and id,
    /// explain, the heatmap and the output checks read.
    const Problem& first() const;
    /// The stack of an every-layer or model-run document, else null.
    const LayerStack* stack() const;
    /// The stacked layers (the leading axis of the weights), 0 for one problem.
    std::size_t layers() const;
    /// A model run that asked for "return": ["hidden_states"].
    bool wants_hidden_states() const;
    /// True for a whole model's forward pass.
    bool is_model_run() const;
};

/// PROBLEM's bytes as a JSON object: InputError "NAME: expected a JSON object (a problem),
/// got TYPE" for any other JSON value; an array file given where a problem is expected (the
/// -q forgotten: NPY, or a zip archive such as .npz) is named as such. Every front end's
/// reader of a problem file.
nlohmann::json problem_json(std::span<const std::uint8_t> bytes, const std::string& name);

/// The precision in which an array handed over with `doc` is read (stdin, the Python
/// module's arrays): f64 when the problem is computed in f64, so float64 values are not
/// rounded through float32 on the way. `given` (a front end's own setting of the field,
/// empty: none) wins over the document's "precision".
io::Precision array_precision(const nlohmann::json& doc, std::string_view given = {});

/// Decodes `doc` as the front ends do, in this order: a whole model (is_model_run), every
/// layer of a checkpoint (is_layer_stack; `given` holding "hidden_states" counts as the
/// field), else one problem (decode_problem). `every_layer` false (batch lines): a
/// document of every layer goes to decode_problem, which refuses it. Throws InputError.
DecodedDocument decode_document(nlohmann::json doc,
                                const std::filesystem::path& base,
                                ArrayValues given = {},
                                bool every_layer = true);

/// check_finite before solving: the problem's inputs, or a stack's first layer (the
/// others are checked as they are solved). Nothing for a model run. Throws InputError.
void check_document_finite(const DecodedDocument& d);

/// Solves a decoded document: solve, solve_layer_stack or solve_model_run. `check_finite`:
/// NaN/inf inputs refused (check_document_finite before any work, then each layer's inputs
/// as it is solved); the front ends' one call for it.
Solution solve_document(const DecodedDocument& d, const SolveOptions& options, bool check_finite);

/// The result document of a solved one (result_document, or stack_result_document for a
/// stack): one line, no trailing newline.
std::string
document_result(const DecodedDocument& d, const Solution& solution, bool with_weights = true);

/// The decoder's warnings, then the fully-masked warning when query rows saw no key: every
/// warning a front end gives for this solution.
std::vector<std::string> document_warnings(const DecodedDocument& d, const Solution& solution);

} // namespace attn::problem

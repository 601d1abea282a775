// `explain`: what a problem resolves to, without computing it: every tensor's shape from
// the sources through projections and heads to output and weights, head grouping, scale,
// the combined mask as a grid of which query sees which key, and the memory a run needs
// with and without weights. Rows of (label, text) that a front end prints.
#pragma once

#include "attn/problem/document.hpp"
#include "attn/problem/layers.hpp"
#include "attn/problem/model_run.hpp"
#include "attn/problem/problem.hpp"
#include "attn/visibility.hpp"

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace attn::problem {

/// One row of an explanation; an empty label continues the row above.
struct ExplainRow {
    std::string label;
    std::string text;
};

/// An explanation: its rows, in order.
struct Explanation {
    std::vector<ExplainRow> rows;

    void row(const std::string& label, const std::string& text) { rows.push_back({label, text}); }
    void more(const std::string& text) { rows.push_back({"", text}); }
    /// The rows as text: each label in a 13-character column, then its text; continuation
    /// rows indented to the text; one line each. Options are named by attn::option_name
    /// (the CLI prints them as flags).
    std::string str() const;
};

/// The plan of one problem. `doc` is the problem document it was decoded from (which of
/// query/input, key/context, params/init the user gave), `name` its name for the title.
/// Throws InputError when the problem's shapes do not fit (plan_problem).
Explanation explain(const nlohmann::json& doc, const std::string& name, const Problem& p);

/// A checkpoint's every layer: the stack, then the first layer's plan (the others differ
/// only in their weights).
Explanation explain(const nlohmann::json& doc, const std::string& name, const LayerStack& stack);

/// A whole model's forward pass: where each value came from, and the block every layer
/// repeats.
Explanation explain(const ModelRun& run);

/// The plan of a decoded document, whatever it holds (decode_document's dispatch): a whole
/// model, every layer of a checkpoint, or one problem. `doc` is the document it was decoded
/// from, `name` its name. What `attn explain` prints.
Explanation explain(const nlohmann::json& doc, const std::string& name, const DecodedDocument& d);

/// The query rows (over every batch and head) that see no key, as compute would warn; no
/// count (nullopt) when the problem has more than `cell_limit` cells, too many to visit.
std::optional<std::size_t>
fully_masked_rows(const Problem& p, const Visibility& vis, double cell_limit = 5e7);

} // namespace attn::problem

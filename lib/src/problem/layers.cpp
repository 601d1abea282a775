// Every layer of a checkpoint in one problem (attn/problem/layers.hpp): hidden_states and
// layers decoded, each layer's own problem made from the same document, and the loop that
// solves them one at a time and stacks the results along a leading layer axis.
#include "attn/problem/layers.hpp"

#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/model/checkpoint_layers.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/layer_analysis.hpp"
#include "attn/problem/selection.hpp"
#include "decode_detail.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

namespace attn::problem {

namespace fs = std::filesystem;
using io::Array;
using io::ArrayKind;
using nlohmann::json;

namespace {

/// The fields a multi-layer document cannot hold: hidden_states gives every layer's input.
constexpr const char* kSourceFields[] = {"input", "query", "key", "value", "context", "init"};

/// The checkpoint named by "params": its file (as written), the prefix the layers start
/// with and the layout asked for.
struct CheckpointRef {
    std::string file;
    std::string under;
    std::optional<std::string> layout;
};

CheckpointRef checkpoint_ref(const json& params) {
    if (!model::is_checkpoint_params(params)) {
        throw InputError("hidden_states: \"params\" must name a .safetensors checkpoint "
                         "(every layer's weights)");
    }
    CheckpointRef r;
    if (params.is_string()) {
        r.file = params.get<std::string>();
        return r;
    }
    const auto text = [&params](const char* key) -> std::optional<std::string> {
        if (!params.contains(key) || params[key].is_null()) {
            return std::nullopt;
        }
        if (!params[key].is_string()) {
            throw InputError(std::string("params.") + key + ": expected a string, got " +
                             detail::type_name(params[key]));
        }
        return params[key].get<std::string>();
    };
    r.file = text("file").value_or("");
    r.under = text("prefix").value_or("");
    r.layout = text("layout");
    return r;
}

/// Hidden state `l` of [N + 1, B, L, E] (or [N + 1, L, E]) as an array of its own.
Array hidden_state(const Array& hs, std::size_t l) {
    Array a;
    a.shape.assign(hs.shape.begin() + 1, hs.shape.end());
    a.dtype = hs.dtype;
    const std::size_t n = hs.shape[0] == 0 ? 0 : hs.values.size() / hs.shape[0];
    a.values.assign(hs.values.begin() + static_cast<std::ptrdiff_t>(l * n),
                    hs.values.begin() + static_cast<std::ptrdiff_t>((l + 1) * n));
    if (!hs.values64.empty()) {
        a.values64.assign(hs.values64.begin() + static_cast<std::ptrdiff_t>(l * n),
                          hs.values64.begin() + static_cast<std::ptrdiff_t>((l + 1) * n));
    }
    return a;
}

/// Refuses a stack whose results (every selected layer's) and one layer's working memory
/// would not fit max_bytes.
void check_stack_memory(const LayerStack& s,
                        bool want_weights,
                        std::uint64_t max_bytes,
                        unsigned threads,
                        bool weights_streamed) {
    const std::uint64_t n = s.layers.size();
    const auto total = [&](bool weights) {
        const MemoryEstimate m = estimate_memory(s.first, weights, threads, weights_streamed);
        const std::uint64_t hidden = io::saturating_mul(
            s.first.precision == Precision::f64 ? 12 : 4, s.hidden_states.values.size());
        return io::saturating_add(
            io::saturating_add(m.total, hidden),
            io::saturating_mul(n - 1, io::saturating_add(m.output, m.weights)));
    };
    const std::uint64_t need = total(want_weights);
    if (need <= max_bytes) {
        return;
    }
    std::string message = option_name("max_memory") + ": these " + std::to_string(n) +
                          " layers need about " + io::format_size(need) +
                          ", more than the limit of " + io::format_size(max_bytes);
    if (want_weights && total(false) <= max_bytes) {
        message += "; without weights (" + option_name("no_weights") + ") they need " +
                   io::format_size(total(false)) + ", which fits";
    }
    throw InputError(message);
}

} // namespace

std::vector<std::size_t> layer_selection(const json& j) {
    return index_selection(j, "layers", "layer");
}

/// Appends `part` (one layer's result) to `stack` along a new leading axis.
void append_layer(std::optional<Array>& stack,
                  const std::optional<Array>& part,
                  std::size_t count) {
    if (!part) {
        return;
    }
    if (!stack) {
        stack.emplace();
        stack->shape.reserve(part->shape.size() + 1);
        stack->shape.push_back(0);
        stack->shape.insert(stack->shape.end(), part->shape.begin(), part->shape.end());
        stack->dtype = part->dtype;
        stack->values.reserve(io::saturating_mul(count, part->values.size()));
        if (!part->values64.empty()) {
            stack->values64.reserve(io::saturating_mul(count, part->values64.size()));
        }
    }
    ATTN_ASSERT(std::equal(
        stack->shape.begin() + 1, stack->shape.end(), part->shape.begin(), part->shape.end()));
    stack->values.insert(stack->values.end(), part->values.begin(), part->values.end());
    stack->values64.insert(stack->values64.end(), part->values64.begin(), part->values64.end());
    ++stack->shape[0];
}

void append_solution(Solution& stack,
                     std::optional<Array>& output,
                     const Solution& r,
                     std::size_t count) {
    append_layer(output, r.output, count);
    append_layer(stack.weights, r.weights, count);
    append_layer(stack.lse, r.lse, count);
    append_layer(stack.entropy, r.entropy, count);
    append_layer(stack.argmax, r.argmax, count);
    append_layer(stack.top_k_indices, r.top_k_indices, count);
    append_layer(stack.top_k_weights, r.top_k_weights, count);
    stack.head_stat_totals.insert(
        stack.head_stat_totals.end(), r.head_stat_totals.begin(), r.head_stat_totals.end());
    if (r.head_stats) { // each statistic stacked as the diagnostics are
        const bool first = !stack.head_stats;
        if (first) {
            stack.head_stats.emplace(r.head_stats->size());
        }
        for (std::size_t i = 0; i < r.head_stats->size(); ++i) {
            auto& [name, stacked] = (*stack.head_stats)[i];
            std::optional<Array> acc;
            if (!first) {
                acc = std::move(stacked);
            }
            append_layer(acc, (*r.head_stats)[i].second, count);
            name = (*r.head_stats)[i].first;
            stacked = std::move(*acc);
        }
    }
    stack.rows_fully_masked += r.rows_fully_masked;
}

bool is_layer_stack(const json& doc) {
    return doc.is_object() && doc.contains("hidden_states") && !doc["hidden_states"].is_null();
}

LayerStack decode_layer_stack(const json& doc, const fs::path& base, ArrayValues given) {
    ATTN_ASSERT(is_layer_stack(doc));
    for (const char* field : kSourceFields) {
        if ((doc.contains(field) && !doc[field].is_null()) || given.count(field) != 0) {
            throw InputError(std::string("hidden_states: gives every layer's input; drop ") +
                             field);
        }
    }
    if (!doc.contains("params") || doc["params"].is_null()) {
        throw InputError("hidden_states: needs \"params\": the .safetensors checkpoint whose "
                         "layers to compute");
    }
    LayerStack s;
    s.base = base;
    s.layer_doc = doc;
    s.layer_doc.erase("hidden_states");
    s.layer_doc.erase("layers");

    // The checkpoint's layers, from its header alone.
    const CheckpointRef ref = checkpoint_ref(doc["params"]);
    const fs::path file = fs::path(ref.file).is_absolute() ? fs::path(ref.file) : base / ref.file;
    std::vector<std::string> names;
    std::string shown;
    try {
        const model::SafetensorsFile st(file);
        shown = st.shown();
        for (const model::SafetensorsEntry& e : st.header().tensors) {
            names.push_back(e.name);
        }
    } catch (const InputError& e) {
        throw InputError(std::string("params: ") + e.marked());
    }
    const std::vector<model::CheckpointLayer> found = model::checkpoint_layers(
        names,
        "params: " + shown,
        ref.layout ? std::optional<std::string_view>(*ref.layout) : std::nullopt,
        ref.under);
    for (const model::CheckpointLayer& l : found) {
        s.prefixes.push_back(l.prefix);
    }
    s.layout = std::string(model::layout_name(found.front().layout));
    const std::size_t n_layers = found.size();

    // hidden_states: [N + 1, B, L, E] or [N + 1, L, E].
    const bool f64 = doc.contains("precision") && doc["precision"] == "f64";
    std::vector<ProblemSource> sources;
    if (const auto it = given.find("hidden_states"); it != given.end()) {
        s.hidden_states = std::move(it->second);
        s.hidden_states.copy_borrowed(); // sliced per layer below
        given.erase(it);
    } else {
        s.hidden_states = detail::load_array(doc["hidden_states"],
                                             "hidden_states",
                                             ArrayKind::numeric,
                                             base,
                                             sources,
                                             f64 ? io::Precision::f64 : io::Precision::f32);
    }
    const auto& hs = s.hidden_states.shape;
    if ((hs.size() != 3 && hs.size() != 4) || hs[0] != n_layers + 1) {
        const std::string dims = hs.size() == 3 ? "[layers + 1, L, E]" : "[layers + 1, B, L, E]";
        std::vector<std::size_t> want = {n_layers + 1, kAnyDim, kAnyDim};
        if (hs.size() != 3) {
            want.push_back(kAnyDim);
        }
        throw InputError(InputError::shape("hidden_states", want, hs).what() + std::string(" = ") +
                         dims + " (the checkpoint has " + std::to_string(n_layers) + " layers)");
    }

    // layers: default all of them.
    if (doc.contains("layers") && !doc["layers"].is_null()) {
        s.layers = layer_selection(doc["layers"]);
        for (const std::size_t l : s.layers) {
            if (l >= n_layers) {
                throw InputError("layers: layer " + std::to_string(l) + " does not exist: the " +
                                 "checkpoint has " + std::to_string(n_layers) + " layers (0 to " +
                                 std::to_string(n_layers - 1) + ")");
            }
        }
    } else {
        for (std::size_t l = 0; l < n_layers; ++l) {
            s.layers.push_back(l);
        }
    }
    s.given = std::move(given);
    s.first = decode_stack_layer(s, s.layers.front());
    for (ProblemSource& src : sources) {
        s.first.sources.push_back(std::move(src));
    }
    return s;
}

Problem decode_stack_layer(const LayerStack& s, std::size_t layer) {
    ATTN_ASSERT(layer < s.prefixes.size());
    json doc = s.layer_doc;
    json params = doc["params"].is_object() ? doc["params"] : json{{"file", doc["params"]}};
    params["prefix"] = s.prefixes[layer];
    params["layout"] = s.layout;
    doc["params"] = std::move(params);
    ArrayValues given = s.given;
    given["input"] = hidden_state(s.hidden_states, layer);
    return decode_problem(doc, s.base, std::move(given));
}

Solution solve_layer_stack(const LayerStack& s, const SolveOptions& options, bool finite_check) {
    check_stack_memory(s,
                       options.want_weights,
                       options.max_memory != 0 ? options.max_memory : io::memory_limit(),
                       options.threads,
                       options.weights_to != nullptr && weights_direct(s.first));
    Solution out;
    std::optional<Array> output;
    const std::size_t n = s.layers.size();
    // "rollout" goes through the layers in ascending order: they are solved in that order
    // and stacked in the order selected.
    std::optional<Rollout> rollout;
    if (s.first.return_rollout) {
        rollout.emplace(s.first.rollout_fusion, s.first.batch, s.first.lq);
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&s](std::size_t a, std::size_t b) {
        return s.layers[a] < s.layers[b];
    });
    std::map<std::size_t, Solution> solved;
    for (const std::size_t i : order) {
        const std::size_t l = s.layers[i];
        const Problem p = i == 0 ? Problem{} : decode_stack_layer(s, l);
        const Problem& layer = i == 0 ? s.first : p;
        if (finite_check) {
            check_finite(layer);
        }
        // Each layer's weights straight to their part of the caller's destination.
        SolveOptions layer_options = options;
        layer_options.rollout = rollout ? &*rollout : nullptr;
        std::optional<WeightsDestination<float>> slot;
        if (options.weights_to != nullptr) {
            slot = weights_slot(*options.weights_to, i, n);
            layer_options.weights_to = &*slot;
        }
        solved.emplace(i, solve(layer, layer_options));
    }
    for (const auto& [i, r] : solved) {
        append_solution(out, output, r, n);
    }
    out.output = std::move(*output);
    if (rollout) {
        out.rollout = rollout->result(s.first.batched, s.first.precision == Precision::f64);
    }
    return out;
}

std::string
stack_result_document(const LayerStack& s, const Solution& solution, bool with_weights) {
    std::string doc = result_document(s.first, solution, with_weights);
    ATTN_ASSERT(!doc.empty() && doc.back() == '}');
    doc.pop_back();
    doc += ",\"layers\":" + json(s.layers).dump() + "}";
    return doc;
}

} // namespace attn::problem

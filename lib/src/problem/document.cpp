// One dispatch for every front end: a whole model, every layer, or one problem.
#include "attn/problem/document.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_text.hpp"
#include "attn/model/matmul.hpp"
#include "attn/problem/checks.hpp"

#include <utility>

namespace attn::problem {

namespace fs = std::filesystem;
using nlohmann::json;

const Problem& DecodedDocument::first() const {
    if (const LayerStack* s = stack()) {
        return s->first;
    }
    return std::get<Problem>(decoded);
}

const LayerStack* DecodedDocument::stack() const {
    if (const auto* run = std::get_if<ModelRun>(&decoded)) {
        return &run->stack;
    }
    return std::get_if<LayerStack>(&decoded);
}

std::size_t DecodedDocument::layers() const {
    const LayerStack* s = stack();
    return s != nullptr ? s->layers.size() : 0;
}

bool DecodedDocument::wants_hidden_states() const {
    const auto* run = std::get_if<ModelRun>(&decoded);
    return run != nullptr && run->want_hidden_states;
}

bool DecodedDocument::is_model_run() const {
    return std::holds_alternative<ModelRun>(decoded);
}

json problem_json(std::span<const std::uint8_t> bytes, const std::string& name) {
    if (io::looks_like_npy(bytes)) {
        throw InputError(name + ": this is an array (NPY), not a problem; did you mean -q " + name +
                         " (or -k, -v, -x)?");
    }
    if (bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' && bytes[2] == 3 && bytes[3] == 4) {
        throw InputError(name + ": this is a zip archive (.npz?), not a problem; did you mean -q " +
                         name + ":query (or -k, -v, -x)?");
    }
    json doc = io::parse_json_text(io::as_text(bytes), name);
    if (!doc.is_object()) {
        throw InputError(name + ": expected a JSON object (a problem), got " +
                         std::string(doc.type_name()));
    }
    return doc;
}

io::Precision array_precision(const json& doc, std::string_view given) {
    if (!given.empty()) {
        return given == "f64" ? io::Precision::f64 : io::Precision::f32;
    }
    const auto it = doc.find("precision");
    return it != doc.end() && *it == "f64" ? io::Precision::f64 : io::Precision::f32;
}

DecodedDocument
decode_document(json doc, const fs::path& base, ArrayValues given, bool every_layer) {
    if (problem::is_model_run(doc, base, given.count("token_ids") != 0)) {
        return {decode_model_run(doc, base, std::move(given))};
    }
    // Every other problem (one problem, a layer stack) reads no quantized weights: "q8_0"
    // would change nothing, so it is refused here, for all of them (a bad value is
    // decode_problem's to name).
    const std::optional<model::Activations> a =
        doc.is_object() && doc.contains("activations") && doc["activations"].is_string()
            ? model::activations_named(doc["activations"].get<std::string>())
            : std::nullopt;
    if (a && *a != model::Activations::f32) {
        throw InputError(
            option_name("activations") + " " + std::string(model::activations_name(*a)) +
            ": applies to a whole model's " + std::string(model::activations_types(*a)) +
            " weights (a model file or folder run on token ids or text); this "
            "problem reads no quantized weights");
    }
    if (!every_layer) {
        return {decode_problem(doc, base, std::move(given))};
    }
    if (given.count("hidden_states") != 0 && doc.is_object() && !doc.contains("hidden_states")) {
        // The every-layer document is recognised by its field; the array itself is given.
        doc["hidden_states"] = "<array>";
    }
    if (is_layer_stack(doc)) {
        return {decode_layer_stack(doc, base, std::move(given))};
    }
    return {decode_problem(doc, base, std::move(given))};
}

void check_document_finite(const DecodedDocument& d) {
    if (!d.is_model_run()) {
        check_finite(d.first());
    }
}

Solution solve_document(const DecodedDocument& d, const SolveOptions& options, bool check_finite) {
    if (check_finite) {
        check_document_finite(d); // before any work, the first layer's too
    }
    if (const auto* run = std::get_if<ModelRun>(&d.decoded)) {
        return solve_model_run(*run, options);
    }
    if (const auto* stack = std::get_if<LayerStack>(&d.decoded)) {
        return solve_layer_stack(*stack, options, check_finite);
    }
    return solve(std::get<Problem>(d.decoded), options);
}

std::string document_result(const DecodedDocument& d, const Solution& solution, bool with_weights) {
    if (const LayerStack* s = d.stack()) {
        return stack_result_document(*s, solution, with_weights);
    }
    return result_document(d.first(), solution, with_weights);
}

std::vector<std::string> document_warnings(const DecodedDocument& d, const Solution& solution) {
    std::vector<std::string> out = d.first().warnings;
    if (std::string w = fully_masked_warning(solution, d.stack() != nullptr); !w.empty()) {
        out.push_back(std::move(w));
    }
    return out;
}

} // namespace attn::problem

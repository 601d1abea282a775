// Reading back a result document or a bare array: see attn/problem/result_read.hpp.
#include "attn/problem/result_read.hpp"

#include "attn/error.hpp"
#include "attn/io/json_text.hpp"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

namespace attn::problem {

namespace {

using nlohmann::json;

std::vector<std::string> token_list(const json& doc, const char* field, const std::string& name) {
    std::vector<std::string> out;
    if (!doc.contains(field) || doc[field].is_null()) {
        return out;
    }
    const auto& v = doc[field];
    if (!v.is_array()) {
        throw InputError::string_list(name + ": " + field, v.type_name());
    }
    for (const auto& t : v) {
        if (!t.is_string()) {
            throw InputError::string_list_item(name + ": " + field, out.size(), t.type_name());
        }
        out.push_back(t.get<std::string>());
    }
    return out;
}

/// A stacked result's "layers" (the layer numbers of its leading axis), or empty.
std::vector<std::size_t> layer_list(const json& doc, const std::string& name) {
    std::vector<std::size_t> out;
    if (!doc.contains("layers") || doc["layers"].is_null()) {
        return out;
    }
    if (!doc["layers"].is_array() || doc["layers"].empty()) {
        throw InputError(name + ": layers: expected a list of layer numbers");
    }
    for (const auto& v : doc["layers"]) {
        if (!v.is_number_unsigned()) {
            throw InputError(name + ": layers: expected a list of layer numbers, got " +
                             std::string(v.type_name()));
        }
        out.push_back(v.get<std::size_t>());
    }
    return out;
}

} // namespace

ResultFile
read_result_document(const json& doc, const std::string& name, const ResultReadOptions& options) {
    if (const auto it = doc.find("error"); it != doc.end()) {
        throw InputError(name + ": a result document with an error: " +
                         (it->is_string() ? it->get<std::string>() : it->dump()));
    }
    ResultFile r;
    r.name = name;
    r.document = true;
    // A stacked result's weights are [layers, B, H, Lq, Lk]: rank 5.
    constexpr std::size_t stacked_rank = 5;
    if (const auto it = doc.find("output"); it != doc.end()) {
        r.output = io::parse_json_array(*it, name + ": output", options.kind, options.precision);
    }
    if (const auto it = doc.find("weights"); it != doc.end()) {
        r.weights = io::parse_json_array(
            *it, name + ": weights", options.kind, options.precision, stacked_rank);
    }
    if (!r.output && !r.weights) {
        throw InputError(name + ": expected an array or a result document with \"output\" or "
                                "\"weights\"");
    }
    r.query_tokens = token_list(doc, "query_tokens", name);
    r.layers = layer_list(doc, name);
    r.key_tokens = token_list(doc, "key_tokens", name);
    // A result of "text" holds its vocabulary strings in "tokens" (a list per text for a
    // batch) beside the readable labels: the labels win.
    if (doc.contains("tokens") && (r.query_tokens.empty() || r.key_tokens.empty())) {
        const auto both = token_list(doc, "tokens", name);
        if (r.query_tokens.empty()) {
            r.query_tokens = both;
        }
        if (r.key_tokens.empty()) {
            r.key_tokens = both;
        }
    }
    return r;
}

ResultFile read_result_bytes(std::span<const std::uint8_t> bytes,
                             const std::string& name,
                             const ResultReadOptions& options,
                             std::optional<io::ArrayFormat> format) {
    ResultFile r;
    r.name = name;
    if (format == io::ArrayFormat::npy || (!format && io::looks_like_npy(bytes))) {
        r.array = io::parse_npy(bytes, name, options.precision);
        return r;
    }
    const json doc = io::parse_json_text(io::as_text(bytes), name);
    if (doc.is_object()) {
        return read_result_document(doc, name, options);
    }
    if (!doc.is_array()) {
        throw InputError(name + ": expected an array or a result document, got " +
                         std::string(doc.type_name()));
    }
    r.array = io::parse_json_array(doc, name, options.kind, options.precision);
    return r;
}

WeightsAxes axes_of_rank(std::size_t rank) {
    return {.batch = rank == 4, .heads = rank == 3 || rank == 4};
}

NamedAxes parse_named_axes(std::string_view text) {
    static constexpr std::string_view names[] = {"layers", "batch", "heads"};
    const auto refuse = [text](const std::string& why) {
        return InputError(option_name("axes") + " " + std::string(text) + ": " + why +
                          " (expected layers, batch and heads in that order, joined by commas, "
                          "e.g. layers,heads; none for [Lq, Lk])");
    };
    NamedAxes out;
    if (text == "none") {
        return out;
    }
    std::size_t next = 0; // the first name still allowed: the order of [layers, B, H, ...]
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t comma = std::min(text.find(',', at), text.size());
        const std::string_view name = text.substr(at, comma - at);
        const auto* it = std::find(std::begin(names), std::end(names), name);
        if (it == std::end(names)) {
            throw refuse("unknown axis \"" + std::string(name) + "\"");
        }
        const auto k = static_cast<std::size_t>(it - std::begin(names));
        if (k < next) {
            throw refuse("\"" + std::string(name) + "\" repeated or out of order");
        }
        next = k + 1;
        out.layers = out.layers || k == 0;
        out.axes.batch = out.axes.batch || k == 1;
        out.axes.heads = out.axes.heads || k == 2;
        at = comma + 1;
    }
    return out;
}

} // namespace attn::problem

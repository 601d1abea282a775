// The problem flags' values -> the problem document (problem_flags.hpp). The flags
// themselves are declared by the front end (app/compute_options.cpp).
#include "attn/cli/problem_flags.hpp"

#include "attn/cli/flags.hpp"
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/stdin_read.hpp"
#include "attn/io/token_list.hpp"
#include "attn/model/store.hpp"
#include "attn/problem/document.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <tuple>
#include <utility>

namespace attn::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// A flag's path, made absolute so it resolves against the working folder.
std::string flag_path(const std::string& p) {
    return fs::path(p).is_absolute() ? p : (fs::current_path() / p).string();
}

} // namespace

/// "a,b,c" -> {"a", "b", "c"} (empty items kept, so "1,,2" is refused by the caller).
std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma - start));
        if (comma == std::string::npos) {
            return out;
        }
        start = comma + 1;
    }
}

/// A finite number, or InputError naming the flag.
double flag_number(const std::string& s, const char* flag, const char* what) {
    std::size_t used = 0;
    double x = 0.0;
    try {
        x = std::stod(s, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (s.empty() || used != s.size() || !std::isfinite(x)) {
        throw InputError(std::string(flag) + ": expected " + what + ", got '" + s + "'");
    }
    return x;
}

/// An integer >= -1, or InputError naming the flag.
std::int64_t flag_window_side(const std::string& s) {
    std::size_t used = 0;
    long long x = -2;
    try {
        x = std::stoll(s, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (s.empty() || used != s.size() || x < -1) {
        throw InputError::window("--window", "L,R", "'" + s + "'");
    }
    return x;
}

/// A comma-separated list of finite numbers (--alibi slopes), or also -inf (--sinks: a
/// sink that takes nothing), given on as the field's "-inf".
json flag_numbers(const std::string& s, const char* flag, bool neg_inf) {
    json out = json::array();
    for (const std::string& item : split_commas(s)) {
        if (neg_inf && item == "-inf") {
            out.push_back("-inf");
            continue;
        }
        out.push_back(flag_number(item, flag, "comma-separated numbers, one per head"));
    }
    return out;
}

bool is_off(const std::string& s) {
    return s == "none" || s == "off" || s == "false";
}

namespace {

/// --rope, --rope-style, --rope-dim, --rope-offset into the "rope" field (each flag
/// overrides its key of the field), --no-norm into "norm".
void apply_model_flags(const ProblemFlags& a, json& doc) {
    if (a.no_norm) {
        doc["norm"] = false;
    }
    if (!a.rope.empty() && is_off(a.rope)) {
        doc["rope"] = false;
        return;
    }
    const bool keys = !a.rope_style.empty() || a.rope_dim > 0 || a.rope_offset.has_value();
    if (a.rope.empty() && !keys) {
        return;
    }
    json rope = doc.contains("rope") ? doc["rope"] : json(true);
    if (rope.is_number()) {
        rope = json{{"theta", rope}};
    } else if (!rope.is_object()) {
        rope = json::object(); // true, false or absent: the flags turn it on
    }
    if (!a.rope.empty() && a.rope != "true") {
        rope["theta"] = flag_number(a.rope, "--rope", "a theta > 0, or 'off'");
    }
    if (!a.rope_style.empty()) {
        rope["style"] = a.rope_style;
    }
    if (a.rope_dim > 0) {
        rope["dim"] = a.rope_dim;
    }
    if (a.rope_offset) {
        rope["offset"] = *a.rope_offset;
        rope.erase("positions");
    }
    doc["rope"] = std::move(rope);
}

} // namespace

void apply_feature_flags(const ProblemFlags& a, json& doc) {
    if (!a.prefix.empty() || !a.layout.empty() || !a.config.empty()) {
        // Checkpoint params: "model.safetensors" becomes {"file": .., "prefix": .., "layout": ..}.
        const char* flag = !a.prefix.empty()   ? "--prefix"
                           : !a.layout.empty() ? "--layout"
                                               : "--config";
        json& params = doc["params"];
        if (params.is_string()) {
            params = json{{"file", params}};
        }
        if (!params.is_object() || !params.contains("file")) {
            throw InputError(std::string(flag) +
                             ": needs --params FILE.safetensors (or a problem whose params is "
                             "a .safetensors file)");
        }
        if (!a.prefix.empty()) {
            params["prefix"] = a.prefix;
        }
        if (!a.layout.empty()) {
            params["layout"] = a.layout;
        }
        if (!a.config.empty()) {
            params["config"] = flag_path(a.config);
        }
    }
    apply_model_flags(a, doc);
    if (!a.window.empty()) {
        const auto sides = split_commas(a.window);
        if (sides.size() != 2) {
            throw InputError::window("--window", "L,R", "'" + a.window + "'");
        }
        doc["window"] = {flag_window_side(sides[0]), flag_window_side(sides[1])};
    }
    if (!a.window_align.empty()) {
        doc["window_align"] = a.window_align;
    }
    if (a.varlen) {
        doc["varlen"] = true;
    }
    if (!a.softcap.empty()) {
        doc["softcap"] = is_off(a.softcap)
                             ? json(nullptr)
                             : json(flag_number(a.softcap, "--softcap", "a number > 0 or 'none'"));
    }
    if (!a.alibi.empty()) {
        if (a.alibi == "default" || a.alibi == "true") {
            doc["alibi"] = true;
        } else if (is_off(a.alibi)) {
            doc["alibi"] = false;
        } else {
            doc["alibi"] = flag_numbers(a.alibi, "--alibi");
        }
    }
    if (!a.sinks.empty()) {
        doc["sinks"] = is_off(a.sinks) ? json(nullptr) : flag_numbers(a.sinks, "--sinks", true);
    }
    if (!a.mask_convention.empty()) {
        doc["mask_convention"] = a.mask_convention;
    }
    if (!a.returns.empty()) {
        json list = json::array();
        for (const std::string& item : split_commas(a.returns)) {
            list.push_back(item); // decode_problem names anything unknown
        }
        doc["return"] = std::move(list);
    }
    if (!a.rollout_fusion.empty()) {
        doc["rollout_fusion"] = a.rollout_fusion; // decode_problem names a bad one
    }
    if (a.top_k > 0) {
        doc["top_k"] = a.top_k;
        if (!doc.contains("return") || !doc["return"].is_array()) {
            doc["return"] = json::array();
        }
        if (std::find(doc["return"].begin(), doc["return"].end(), json("top_k")) ==
            doc["return"].end()) {
            doc["return"].push_back("top_k");
        }
    }
    if (!a.tokens.empty()) {
        doc.erase("query_tokens"); // the flag overrides every token field
        doc.erase("key_tokens");
        doc["tokens"] = io::parse_token_list(a.tokens, "--tokens");
    }
    if (a.average_heads) {
        doc["average_heads"] = true;
    }
}

void apply_common_flags(const CommonProblemFlags& f, json& doc) {
    for (const auto& [field, text] : {std::pair{"variant", &f.variant},
                                      std::pair{"causal", &f.causal},
                                      std::pair{"precision", &f.precision}}) {
        if (!text->empty()) {
            doc[field] = *text;
        }
    }
    if (!f.scale.empty()) {
        doc["scale"] = parse_scale_flag(f.scale);
    }
    if (f.heads > 0) {
        doc["num_heads"] = f.heads;
    }
    if (f.kv_heads > 0) {
        doc["num_kv_heads"] = f.kv_heads;
    }
}

ProblemInput
problem_input(const ProblemFlags& a, std::string_view command, const StdinReader& stdin_reader) {
    const StdinReader read_stdin = stdin_reader ? stdin_reader : StdinReader(io::read_stdin);
    ProblemInput in{json::object(), fs::current_path(), "flags", {}};
    if (!a.problem.empty()) {
        if (a.problem == "-") {
            in.name = "<stdin>";
            in.doc = problem::problem_json(read_stdin("PROBLEM"), in.name);
        } else {
            in.name = a.problem;
            in.doc = problem::problem_json(io::read_file(a.problem), a.problem);
            in.base = fs::absolute(fs::path(a.problem)).parent_path();
        }
    }
    json& doc = in.doc;
    // An array read from stdin is handed over as read: with its float64 values too when the
    // problem is computed in f64 (so it is not rounded through float32 on the way).
    const io::Precision stdin_precision = problem::array_precision(doc, a.precision);
    // Flags override the problem's fields; "-" reads the array from stdin.
    const std::tuple<const std::string*, const char*, const char*, io::ArrayKind> arrays[] = {
        {&a.query, "query", "--query", io::ArrayKind::numeric},
        {&a.key, "key", "--key", io::ArrayKind::numeric},
        {&a.value, "value", "--value", io::ArrayKind::numeric},
        {&a.input, "input", "--input", io::ArrayKind::numeric},
        {&a.context, "context", "--context", io::ArrayKind::numeric},
        {&a.mask, "mask", "--mask", io::ArrayKind::mask},
        {&a.bias, "bias", "--bias", io::ArrayKind::numeric},
        {&a.key_padding, "key_padding_mask", "--key-padding", io::ArrayKind::mask},
        {&a.token_ids, "token_ids", "--token-ids", io::ArrayKind::numeric},
        {&a.hidden_states, "hidden_states", "--hidden-states", io::ArrayKind::numeric}};
    for (const auto& [value, field, flag, kind] : arrays) {
        if (value->empty()) {
            continue;
        }
        if (*value == "-") {
            const auto bytes = read_stdin(flag);
            in.arrays[field] = io::parse_array_bytes(
                bytes, std::string(field) + ": <stdin>", kind, stdin_precision);
            doc.erase(field);
        } else {
            doc[field] = flag_path(*value);
            in.arrays.erase(field);
        }
    }
    if (!a.params.empty()) {
        if (a.params == "-") {
            const auto bytes = read_stdin("--params");
            doc["params"] = io::parse_json_text(io::as_text(bytes), "params: <stdin>");
        } else {
            // A model by name (the Hugging Face cache, Ollama's store) stays a name.
            std::error_code ec;
            const bool by_name = model::is_store_name(a.params) && !fs::exists(a.params, ec);
            doc["params"] = by_name ? a.params : flag_path(a.params);
        }
    }
    if (!a.layers.empty()) {
        doc["layers"] = a.layers;
    }
    // The fields take the flags' text as it is ("0,3,8-11", "A:B"); decode_problem reads it.
    if (a.select_heads) {
        doc["select_heads"] = *a.select_heads;
    }
    if (a.query_rows) {
        doc["query_rows"] = *a.query_rows;
    }
    if (a.weights_dtype) {
        doc["weights_dtype"] = *a.weights_dtype;
    }
    if (a.activations) {
        doc["activations"] = *a.activations;
    }
    if (!a.text.empty() || !a.text_file.empty()) {
        json texts(a.text);
        for (const std::string& file : a.text_file) {
            const std::vector<std::uint8_t> bytes =
                file == "-" ? read_stdin("--text-file") : io::read_file(file);
            texts.push_back(std::string(bytes.begin(), bytes.end()));
        }
        doc["text"] = texts.size() == 1 ? texts[0] : texts;
    }
    if (a.no_special_tokens) {
        doc["special_tokens"] = false;
    }
    apply_common_flags(a, doc);
    if (a.seed >= 0) {
        if (!doc.contains("init") || !doc["init"].is_object()) {
            doc["init"] = json::object();
        }
        doc["init"]["seed"] = a.seed;
    }
    apply_feature_flags(a, doc);
    if (doc.empty() && in.arrays.empty()) {
        throw InputError(std::string(command) +
                         ": no problem: give a PROBLEM file (or - for stdin), or "
                         "--query/--key/--value or --input (see 'attn " +
                         std::string(command) + " --help')");
    }
    return in;
}

nlohmann::json parse_scale_flag(const std::string& s) {
    if (s == "default" || s == "none" || s == "null") {
        return nullptr;
    }
    return flag_number(s, "--scale", "a finite number or 'default'");
}

problem::BatchPlan plan_batch(const BatchFlags& flags, const fs::path& base) {
    const unsigned cores = problem::usable_cores();
    problem::BatchPlan plan;
    plan.jobs = flags.jobs > 0 ? flags.jobs : cores;
    plan.lines.base = base;
    apply_common_flags(flags, plan.lines.defaults);
    plan.lines.solve.want_weights = !flags.no_weights;
    plan.lines.check_finite = flags.check_finite;
    // Parallel lines, one thread each, rather than parallel rows inside one small problem.
    plan.lines.solve.threads = flags.threads > 0 ? flags.threads : std::max(1u, cores / plan.jobs);
    plan.lines.solve.simd = flags.simd;
    plan.lines.error_text = error_text;
    return plan;
}

} // namespace attn::cli

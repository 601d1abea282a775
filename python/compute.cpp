// attn.compute: keyword arguments (or one dict, or a problem file's path) into the problem
// document and its arrays, decoded and solved by attn_problem with the GIL released, and
// the result's arrays handed to numpy without a copy. The document's fields are the CLI's
// JSON problem; `returns` is the field "return" (a Python keyword).
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/problem/document.hpp"
#include "attn/problem/model_run.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "module.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn::python {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Whether an array-like value of `field` is handed over as memory (the library's list).
bool is_array_field(const std::string& field) {
    const std::vector<std::string>& fields = problem::array_fields();
    return std::find(fields.begin(), fields.end(), field) != fields.end();
}

/// A problem as the library takes it: the document, its folder, the arrays handed over.
struct ProblemIn {
    json doc = json::object();
    fs::path base = ".";
    problem::ArrayValues given;
};

/// params: a path (as in the document), or a mapping whose array-likes are handed over as
/// "params.NAME" (a state dict straight from module.state_dict()).
void add_params(ProblemIn& in, py::handle params, io::Precision precision) {
    if (!py::isinstance<py::dict>(params) && !py::hasattr(params, "items")) {
        in.doc["params"] = json_of(params, "params");
        return;
    }
    in.doc["params"] = json::object();
    for (const py::handle item : params.attr("items")()) {
        const py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
        const std::string key = py::str(kv[0]);
        if (is_array_like(kv[1])) {
            in.given["params." + key] = array_in(kv[1], "params." + key, precision);
        } else {
            in.doc["params"][key] = json_of(kv[1], "params." + key);
        }
    }
}

/// The problem of attn.compute's arguments: fields from `problem` (a dict, or the path of a
/// JSON problem file, whose folder relative paths then start from), overridden by keywords.
ProblemIn problem_of(const py::object& problem, const py::dict& kwargs) {
    ProblemIn in;
    py::dict fields;
    if (py::isinstance<py::str>(problem) || py::hasattr(problem, "__fspath__")) {
        const fs::path path = py::str(problem).cast<std::string>();
        in.doc = problem::problem_json(io::read_file(path), path.string());
        in.base = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    } else if (py::isinstance<py::dict>(problem) || py::hasattr(problem, "items")) {
        for (const py::handle item : problem.attr("items")()) {
            const py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
            fields[kv[0]] = kv[1];
        }
    } else if (!problem.is_none()) {
        throw InputError("problem: expected a dict of fields or the path of a JSON problem file, "
                         "got a Python " +
                         std::string(py::str(problem.get_type().attr("__name__"))));
    }
    for (const auto& [k, v] : kwargs) {
        const std::string key = py::str(k);
        fields[py::str(key == "returns" ? "return" : key)] = v; // keywords win
    }
    // How the arrays are read (the library's rule): a keyword's precision (None: the field
    // absent, so f32) wins over the file's.
    std::string given;
    if (fields.contains("precision")) {
        const py::object p = fields["precision"];
        given = py::isinstance<py::str>(p) ? p.cast<std::string>() : "f32";
    }
    const io::Precision precision = problem::array_precision(in.doc, given);
    for (const auto& [k, v] : fields) {
        const std::string key = py::str(k);
        in.doc.erase(key);
        if (v.is_none()) {
            continue; // absent, as a JSON null is
        }
        if (key == "params") {
            add_params(in, v, precision);
        } else if (is_array_field(key) && is_array_like(v)) {
            // Borrowed: the library reads what it can in place and copies the rest.
            in.given[key] = array_in(v, key, precision, true);
        } else {
            in.doc[key] = json_of(v, key);
        }
    }
    return in;
}

/// attn.Result: the solution's arrays as numpy, the labels and the warnings.
struct Result {
    py::object output = py::none(), weights = py::none(), lse = py::none(), entropy = py::none(),
               argmax = py::none(), top_k_indices = py::none(), top_k_weights = py::none(),
               hidden_states = py::none(), token_ids = py::none(), head_stats = py::none(),
               rollout = py::none();
    py::object query_tokens = py::none(), key_tokens = py::none(), layers = py::none(),
               id = py::none();
    py::object text_tokens = py::none(); ///< "text": the vocabulary strings (the CLI's "tokens")
    std::int64_t rows_fully_masked = 0;
    std::vector<std::string> warnings;
    bool batched = false; ///< the inputs had a batch dim: rank-3 weights are [B, Lq, Lk]

    /// The CLI's "tokens" (the vocabulary strings of "text"), else the labels of both axes
    /// when they are the same (self-attention), else None.
    py::object tokens() const {
        if (!text_tokens.is_none()) {
            return text_tokens;
        }
        if (!query_tokens.is_none() && query_tokens.equal(key_tokens)) {
            return query_tokens;
        }
        return py::none();
    }
};

py::object optional_array(std::optional<io::Array>& a) {
    if (!a) {
        return py::none();
    }
    return array_out(std::move(*a));
}

/// What the library hands back, before it becomes Python objects (no GIL needed).
struct Solved {
    problem::Solution solution;
    std::optional<std::vector<std::string>> query_tokens, key_tokens;
    std::optional<json> id;
    std::optional<std::vector<std::vector<std::string>>> text_tokens; ///< a list per text
    bool text_batched = false; ///< "text" was a list: text_tokens stays a list of lists
    std::vector<std::size_t> layers;
    bool stacked = false;
    bool batched = false;
    bool weights_f16 = false; ///< "weights_dtype": "f16"
    std::vector<std::string> warnings;
};

Solved solve_problem(ProblemIn& in, const problem::SolveOptions& options, bool check_finite) {
    // The CLI's dispatch (problem::decode_document): a whole model, every layer, one problem.
    const problem::DecodedDocument d =
        problem::decode_document(std::move(in.doc), in.base, std::move(in.given));
    Solved out;
    const problem::Problem& p = d.first();
    out.query_tokens = p.query_tokens;
    out.key_tokens = p.key_tokens;
    out.id = p.id;
    out.batched = p.batched;
    out.text_tokens = p.text_tokens;
    out.text_batched = p.text_batched;
    out.weights_f16 = p.weights_f16;
    out.solution = problem::solve_document(d, options, check_finite);
    if (const problem::LayerStack* stack = d.stack()) {
        out.layers = stack->layers;
        out.stacked = true;
    }
    out.warnings = problem::document_warnings(d, out.solution);
    return out;
}

Result compute(const py::object& problem,
               unsigned threads,
               bool no_weights,
               bool check_finite,
               const std::string& simd,
               std::uint64_t max_memory,
               const py::object& progress,
               const py::dict& kwargs) {
    ProblemIn in = problem_of(problem, kwargs);
    problem::SolveOptions options;
    options.want_weights = !no_weights;
    options.threads = threads;
    options.simd = simd_target(simd);
    options.max_memory = max_memory;
    options.results_text = false; // numpy arrays
    // A model run, after each layer: the caller's progress.
    const py::object bar = progress_callable(progress, "layer");
    if (!bar.is_none()) {
        options.on_layer = [&bar](std::size_t done, std::size_t total) {
            const py::gil_scoped_acquire gil;
            bar(done, total);
        };
    }
    Solved s = released([&] { return solve_problem(in, options, check_finite); });
    const py::module_ warnings = py::module_::import("warnings");
    for (const std::string& w : s.warnings) {
        warnings.attr("warn")(w, py::module_::import("builtins").attr("UserWarning"), 1);
    }
    Result r;
    r.output = array_out(std::move(s.solution.output));
    r.weights = optional_array(s.solution.weights);
    if (s.weights_f16 && !r.weights.is_none()) {
        // numpy's rounding to nearest-even, once (from float64 with precision f64)
        r.weights = r.weights.attr("astype")("float16");
    }
    r.lse = optional_array(s.solution.lse);
    r.entropy = optional_array(s.solution.entropy);
    r.argmax = optional_array(s.solution.argmax);
    r.top_k_indices = optional_array(s.solution.top_k_indices);
    r.top_k_weights = optional_array(s.solution.top_k_weights);
    r.hidden_states = optional_array(s.solution.hidden_states);
    r.token_ids = optional_array(s.solution.token_ids);
    r.rollout = optional_array(s.solution.rollout);
    if (s.solution.head_stats) {
        py::dict stats; // {name: array}, as the CLI's "head_stats" object
        for (auto& [name, a] : *s.solution.head_stats) {
            stats[py::str(name)] = array_out(std::move(a));
        }
        r.head_stats = std::move(stats);
    }
    r.query_tokens = string_list(s.query_tokens);
    r.key_tokens = string_list(s.key_tokens);
    if (s.stacked) {
        r.layers = py::cast(s.layers);
    }
    if (s.id) {
        r.id = py::module_::import("json").attr("loads")(s.id->dump());
    }
    if (s.text_tokens && !s.text_tokens->empty()) {
        r.text_tokens =
            s.text_batched ? py::cast(*s.text_tokens) : py::cast(s.text_tokens->front());
    }
    r.rows_fully_masked = s.solution.rows_fully_masked;
    r.warnings = std::move(s.warnings);
    r.batched = s.batched;
    return r;
}

/// attn.run_model: compute() of a whole model, params = path (the CLI's
/// `attn compute --params MODEL --text ...`).
Result run_model(const py::object& path,
                 const py::object& text,
                 const py::object& token_ids,
                 const py::object& layers,
                 unsigned threads,
                 bool no_weights,
                 const std::string& simd,
                 std::uint64_t max_memory,
                 const py::object& progress,
                 const py::kwargs& kwargs) {
    const std::string model = py::str(path);
    if (!problem::is_model_run(json{{"params", model}}, ".", true)) {
        throw InputError(model + ": not a model (a folder with config.json, a .safetensors file "
                                 "with config.json beside it, or a .gguf file)");
    }
    if (text.is_none() == token_ids.is_none()) {
        throw InputError("run_model: give text=... or token_ids=... (one of them)");
    }
    py::dict fields;
    for (const auto& [k, v] : kwargs) {
        fields[k] = v;
    }
    fields["params"] = model;
    fields["text"] = text;
    fields["token_ids"] = token_ids;
    fields["layers"] = layers;
    return compute(py::none(), threads, no_weights, false, simd, max_memory, progress, fields);
}

std::string shape_text(const py::object& a) {
    return a.is_none() ? "None" : std::string(py::str(a.attr("shape")));
}

std::string repr(const Result& r) {
    std::string out = "attn.Result(output=" + shape_text(r.output);
    const std::pair<const char*, const py::object*> parts[] = {{"weights", &r.weights},
                                                               {"lse", &r.lse},
                                                               {"entropy", &r.entropy},
                                                               {"argmax", &r.argmax},
                                                               {"top_k_indices", &r.top_k_indices},
                                                               {"top_k_weights", &r.top_k_weights},
                                                               {"hidden_states", &r.hidden_states},
                                                               {"rollout", &r.rollout}};
    for (const auto& [name, a] : parts) {
        if (!a->is_none()) {
            out += std::string(", ") + name + "=" + shape_text(*a);
        }
    }
    if (!r.layers.is_none()) {
        out += ", layers=" + std::string(py::str(r.layers));
    }
    return out + ")";
}

/// attn.Result: its arrays, labels and warnings, as attributes.
void register_result(py::module_& m) {
    py::class_<Result>(m,
                       "Result",
                       "The result of attn.compute: numpy arrays in the shapes of the CLI's result "
                       "document (None where not asked for), the labels, and the warnings.")
        .def_readonly("output", &Result::output, "the attention output")
        .def_readonly("weights",
                      &Result::weights,
                      "[B, H, Lq, Lk] weights (B, H dropped as the "
                      "CLI drops them); None with no_weights=True")
        .def_readonly("lse", &Result::lse, "returns=['lse']: log-sum-exp per query row")
        .def_readonly("entropy", &Result::entropy, "returns=['entropy']")
        .def_readonly("argmax", &Result::argmax, "returns=['argmax'] (float: exact below 2^24)")
        .def_readonly(
            "top_k_indices", &Result::top_k_indices, "top_k=K: the K largest weights' keys")
        .def_readonly("top_k_weights", &Result::top_k_weights, "top_k=K: their weights")
        .def_readonly("hidden_states",
                      &Result::hidden_states,
                      "a whole model's returns=['hidden_states']: [layers + 1, B, L, E]")
        .def_readonly("token_ids", &Result::token_ids, "a whole model's input ids, or None")
        .def_readonly("head_stats",
                      &Result::head_stats,
                      "returns=['head_stats']: {name: [layers, B, H] array} (entropy, "
                      "first_token, previous_token, self, distance, duplicate_token, induction)")
        .def_readonly("rollout", &Result::rollout, "returns=['rollout']: [B, L, L]")
        .def_readonly("query_tokens", &Result::query_tokens, "the query labels, or None")
        .def_readonly("key_tokens", &Result::key_tokens, "the key labels, or None")
        .def_property_readonly("tokens",
                               &Result::tokens,
                               "text=...: the vocabulary strings (the CLI's \"tokens\"); else "
                               "the labels when queries and keys share them")
        .def_readonly(
            "layers", &Result::layers, "the layers of an every-layer result's leading axis")
        .def_readonly("id", &Result::id, "the problem's id, or None")
        .def_readonly("rows_fully_masked", &Result::rows_fully_masked, "query rows that saw no key")
        .def_readonly(
            "warnings", &Result::warnings, "the warnings given (also through warnings.warn)")
        .def_readonly("_rank3_is_batch", &Result::batched)
        .def("__repr__", &repr);
}

} // namespace

void register_compute(py::module_& m) {
    register_result(m);

    m.def(
        "compute",
        [](const py::object& problem,
           unsigned threads,
           bool no_weights,
           bool check_finite,
           const std::string& simd,
           std::uint64_t max_memory,
           const py::object& progress,
           const py::kwargs& kwargs) {
            return compute(
                problem, threads, no_weights, check_finite, simd, max_memory, progress, kwargs);
        },
        py::arg("problem") = py::none(),
        py::kw_only(),
        py::arg("threads") = 0U,
        py::arg("no_weights") = false,
        py::arg("check_finite") = false,
        py::arg("simd") = "best",
        py::arg("max_memory") = std::uint64_t{0},
        py::arg("progress") = py::none(),
        R"doc(Computes attention for one problem, as `attn compute` does.

The problem is the CLI's JSON problem document: a dict of its fields, the path of a JSON
problem file (relative paths in it start from its folder), and/or every field as a
keyword (a keyword overrides the same field of `problem`):

  query, key, value      [L, E], [B, L, E] or [B, H, L, D] arrays
  input, context         sources of projections: [L, E] or [B, L, E]
  params                 a dict of weights (w_q, w_k, w_v, w_o, b_q, ..., or an
                         nn.MultiheadAttention state dict: module.state_dict()), or a
                         path (.json, .safetensors checkpoint; a model folder or .gguf
                         runs the whole model: see attn.run_model)
  init                   {"seed": N, "dim": D}: random projections
  num_heads, num_kv_heads, scale, causal (False, True, "top-left", "bottom-right"),
  mask, bias, key_padding_mask (True = real token), window, window_align, softcap,
  alibi, sinks, returns (= "return": ["lse", "entropy", "argmax", "top_k"]), top_k,
  average_heads, select_heads ([0, 3] or "0,3,8-11": the heads whose weights,
  per-row results and head_stats are returned), query_rows ([A, B] or "A:B", a Python
  slice: the query rows of the weights and per-row results returned), varlen,
  precision ("f32" or "f64"), rope, norm, token_ids, text,
  special_tokens, hidden_states, layers, variant, mask_convention, tokens,
  query_tokens, key_tokens, id.

Arrays are anything numpy accepts (numpy arrays of any dtype NPY files hold, torch
tensors, nested lists); they are read as a .npy file of the same data would be; a
float32 C-contiguous [B, H, L, D] query, key or value is read in place, not copied. A
value of None is an absent field.

Options (not problem fields):
  threads       worker threads (0: every core); results are identical for any count
  no_weights    no [Lq, Lk] weights kept (the streaming kernel, for long sequences)
  check_finite  refuse NaN/inf inputs (the CLI's --check-finite)
  simd          the kernels' SIMD target ("best", "AVX3", "AVX2", ...)
  max_memory    refuse problems that need more bytes than this (0: the default limit)
  progress      a whole model: called as progress(layers done, layers run) after each
                layer, or True for a progress bar (tqdm's when installed, else a line of
                text)

Ctrl-C raises KeyboardInterrupt within a fraction of a second, also inside a layer or one
long problem (the run stops where its threads next check; nothing is left half-written).

Returns an attn.Result with .output, .weights, .lse, ... as numpy arrays (float64 for
precision="f64"). Raises attn.InputError (a ValueError) with the CLI's message for bad
input; the problem's warnings go through the warnings module. The GIL is released while
the problem is decoded and solved.

Example:
  r = attn.compute(query=q, key=k, value=v, causal=True, returns=["lse"])
  r.output, r.weights, r.lse)doc");

    m.def("run_model",
          &run_model,
          py::arg("path"),
          py::arg("text") = py::none(),
          py::arg("token_ids") = py::none(),
          py::arg("layers") = py::none(),
          py::kw_only(),
          py::arg("threads") = 0U,
          py::arg("no_weights") = false,
          py::arg("simd") = "best",
          py::arg("max_memory") = std::uint64_t{0},
          py::arg("progress") = py::none(),
          R"doc(Runs a whole model's forward pass, as `attn compute --params MODEL --text ...`.

  path       a model folder as Hugging Face writes it (config.json, model.safetensors or
             its shards, tokenizer.json or tokenizer.model) or a .gguf file
  text       a string, or a list of strings (one per batch row, padded on the right),
             tokenized by the model's own tokenizer; or
  token_ids  [L] or [B, L] integer ids
  layers     which layers' attention to return (default all), e.g. [0, 5]

select_heads=[0, 3] (or "0,3,8-11") and query_rows=[A, B] (or "A:B", a Python slice)
return only those heads' and query rows' weights and per-row results (every head is
computed; the H axis stays, ascending).

Other problem fields as keywords: returns=["hidden_states"], special_tokens=False,
key_padding_mask, precision, select_heads, query_rows, weights_dtype ("f16": float16
weights), activations ("q8_0": Q8_0 and Q4_0 weights multiply their inputs rounded to
Q8_0, as llama.cpp does; "q8": those, and Q4_K, Q5_K and Q6_K weights theirs rounded to
Q8_K; "bf16": BF16 weights theirs rounded to BF16, pair products as AVX512_BF16's), ...; threads, no_weights, simd,
max_memory and progress (progress(layers done, layers run) after each layer, or True for a
progress bar) as for attn.compute; Ctrl-C raises KeyboardInterrupt within a fraction of a
second, inside a layer too.

Returns an attn.Result: .weights [layers, B, H, L, L] (B dropped for one text), .output,
.layers (the layers of the leading axis), .hidden_states [layers + 1, B, L, E] with
returns=["hidden_states"], .token_ids, .tokens (the vocabulary strings of text) and
.query_tokens (the same as readable labels, for heatmaps).

Example:
  r = attn.run_model("gpt2/", text="The cat sat", layers=[0, 11])
  attn.heatmap(r.weights[0, 0], tokens=r.query_tokens))doc");
}

} // namespace attn::python

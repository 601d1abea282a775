// attn.compare: two models on the same text or token ids, or two weights arrays (paths or
// array-likes) of one shape, compared per layer and head as `attn compare A B` compares
// them (problem::compare_models, problem::compare_weights): a dict of numpy arrays.
#include "attn/error.hpp"
#include "attn/problem/attention_compare.hpp"
#include "module.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace attn::python {

namespace {

/// One side's weights: a path as `attn compare` reads it, or an array-like (its leading
/// axes the grid, as a bare .npy file's).
problem::LoadedWeights compare_operand(const py::object& obj, const char* side) {
    if (!is_array_like(obj)) {
        const std::string path = py::str(obj);
        return problem::read_weights(path, []() -> std::vector<std::uint8_t> {
            throw InputError("compare: '-' (stdin) is the command line's");
        });
    }
    problem::LoadedWeights w;
    w.name = side;
    w.array = array_in(obj, side, io::Precision::f32);
    const std::size_t rank = w.array.shape.size();
    w.axes = problem::axes_of_rank(rank == 5 ? 4 : rank);
    return w;
}

py::dict comparison_dict(const problem::AttentionComparison& c) {
    py::dict out;
    std::vector<py::ssize_t> shape(c.grid.begin(), c.grid.end());
    for (std::size_t m = 0; m < problem::kCompareMetrics; ++m) {
        py::array_t<double> a(shape);
        std::copy(c.values[m].begin(), c.values[m].end(), a.mutable_data());
        out[problem::compare_metric_names()[m]] = std::move(a);
    }
    out["top_k"] = c.top_k;
    out["rows"] = c.rows;
    return out;
}

py::dict compare(const py::object& a,
                 const py::object& b,
                 const py::object& text,
                 const py::object& token_ids,
                 std::size_t top_k,
                 bool special_tokens,
                 unsigned threads) {
    if (text.is_none() && token_ids.is_none()) {
        const problem::LoadedWeights wa = compare_operand(a, "a");
        const problem::LoadedWeights wb = compare_operand(b, "b");
        return comparison_dict(released([&] { return problem::compare_weights(wa, wb, top_k); }));
    }
    if (!text.is_none() && !token_ids.is_none()) {
        throw InputError("compare: give text=... or token_ids=... (one of them)");
    }
    problem::ModelCompareRequest r;
    r.a = nlohmann::json::object();
    if (!text.is_none()) {
        r.a["text"] = json_of(text, "text");
    } else {
        r.a["token_ids"] = json_of(token_ids, "token_ids");
    }
    if (!special_tokens) {
        r.a["special_tokens"] = false;
    }
    r.b = r.a;
    r.a["params"] = std::string(py::str(a));
    r.b["params"] = std::string(py::str(b));
    r.base = std::filesystem::current_path();
    r.top_k = top_k;
    r.solve.threads = threads;
    r.temp_dir = std::filesystem::temp_directory_path();
    return comparison_dict(released([&] { return problem::compare_models(r); }));
}

} // namespace

void register_compare(py::module_& m) {
    m.def("compare",
          &compare,
          py::arg("a"),
          py::arg("b"),
          py::arg("text") = py::none(),
          py::arg("token_ids") = py::none(),
          py::kw_only(),
          py::arg("top_k") = std::size_t{5},
          py::arg("special_tokens") = true,
          py::arg("threads") = 0U,
          R"doc(Compares two models on the same text (or two weights arrays) per layer and head,
as `attn compare A B` does.

  a, b       two models (folders, .safetensors with config.json, .gguf) run on `text` (a
             string or a list of strings) or `token_ids` ([L] or [B, L]); or, with neither,
             two weights arrays of one shape: paths (.npy/.npz/.json) or array-likes, whose
             leading axes are the grid ([H, L, L] -> [H])
  top_k      k of the topk overlap (min(top_k, Lk) per row)

Returns {"js", "tv", "max_abs", "top1", "topk": float64 arrays of the grid's shape
([layers, H] for models), "top_k": K, "rows": query rows per cell}. Padding query rows of
a batch of texts are not compared; ties go to the lowest key. Raises attn.InputError.

Example:
  d = attn.compare("model-f16.gguf", "model-q4_0.gguf", text="The cat sat on the mat")
  d["js"].argmax())doc");
}

} // namespace attn::python

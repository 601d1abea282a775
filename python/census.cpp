// attn.census and attn.Census: a head census (problem/census.hpp) from Python, with the
// texts as a list (strings, or lists of token ids) or a TEXTS file, the pooled statistics
// as numpy arrays, a table shown by Jupyter (_repr_html_), .save() to the CLI's files and
// html= for the census page (plot/census_view.hpp). The GIL is released while the model
// runs; progress is reported after each group of texts, Ctrl-C within the run (released).
#include "attn/problem/census.hpp"

#include "attn/error.hpp"
#include "attn/io/atomic_file.hpp"
#include "attn/io/file_read.hpp"
#include "attn/plot/census_view.hpp"
#include "attn/problem/census_files.hpp"
#include "attn/problem/census_texts.hpp"
#include "module.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace attn::python {

namespace {

namespace fs = std::filesystem;
using problem::kHeadStats;

/// attn.Census: the census and how many texts and probes went into it.
struct PyCensus {
    problem::Census c;
    std::size_t texts = 0;

    /// Statistic `stat` as a [layers, H] array: means (what = 0), sums (1) or rows (2).
    py::array grid(std::size_t stat, int what) const {
        const std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(c.layers),
                                             static_cast<py::ssize_t>(c.heads)};
        if (what == 2) {
            py::array_t<std::int64_t> a(shape);
            std::copy(c.rows[stat].begin(), c.rows[stat].end(), a.mutable_data());
            return a;
        }
        py::array_t<double> a(shape);
        for (std::size_t x = 0; x < c.layers * c.heads; ++x) {
            a.mutable_data()[x] = what == 0 ? c.mean(stat, x) : c.sum[stat][x];
        }
        return a;
    }
    py::dict stats(int what) const {
        py::dict d;
        for (std::size_t s = 0; s < kHeadStats; ++s) {
            d[problem::head_stat_names()[s]] = grid(s, what);
        }
        return d;
    }
    py::array sink() const {
        py::array_t<bool> a(
            {static_cast<py::ssize_t>(c.layers), static_cast<py::ssize_t>(c.heads)});
        for (std::size_t x = 0; x < c.layers * c.heads; ++x) {
            a.mutable_data()[x] = c.sink(x);
        }
        return a;
    }
    py::array get(const std::string& name) const {
        for (std::size_t s = 0; s < kHeadStats; ++s) {
            if (name == problem::head_stat_names()[s]) {
                return grid(s, 0);
            }
        }
        if (name == "sink") {
            return sink();
        }
        throw py::key_error(name);
    }
    void save(const std::string& path) const {
        if (io::has_extension(path, ".npz")) {
            io::write_file_atomic(path, problem::census_npz(c));
        } else if (io::has_extension(path, ".csv")) {
            io::write_file_atomic(path, problem::census_csv(c));
        } else if (io::has_extension(path, ".json")) {
            io::write_file_atomic(path, problem::census_json(c) + "\n");
        } else {
            throw InputError("path: expected a .json, .csv or .npz file, got '" + path + "'");
        }
    }
    std::string repr() const {
        return "attn.Census(" + std::to_string(c.layers) + " layers x " + std::to_string(c.heads) +
               " heads, " + std::to_string(texts) + " texts and probes)";
    }
    /// Every head a row: layer, head, each statistic's pooled mean, sink.
    std::string repr_html() const {
        std::string h = "<table><thead><tr><th>layer</th><th>head</th>";
        for (const char* name : problem::head_stat_names()) {
            h += std::string("<th>") + name + "</th>";
        }
        h += "<th>sink</th></tr></thead><tbody>";
        for (std::size_t x = 0; x < c.layers * c.heads; ++x) {
            h += "<tr><td>" + std::to_string(x / c.heads) + "</td><td>" +
                 std::to_string(x % c.heads) + "</td>";
            for (std::size_t s = 0; s < kHeadStats; ++s) {
                const double v = c.mean(s, x);
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.4f", v);
                h += std::string("<td>") + (std::isnan(v) ? "nan" : buf) + "</td>";
            }
            h += std::string("<td>") + (c.sink(x) ? "yes" : "") + "</td></tr>";
        }
        return h + "</tbody></table>";
    }
};

/// texts=: a path of a TEXTS file, or a list of strings and lists of ids ("line" = index + 1).
void add_texts(problem::CensusRequest& r, const py::object& texts) {
    if (texts.is_none()) {
        return;
    }
    if (py::isinstance<py::str>(texts) || py::hasattr(texts, "__fspath__")) {
        const std::string path = py::str(texts);
        r.texts_name = path;
        const std::vector<std::uint8_t> bytes = io::read_file(path);
        r.texts = problem::read_census_texts(
            std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
        return;
    }
    r.texts_name = "texts";
    std::size_t i = 0;
    for (const py::handle t : texts) {
        problem::CensusText ct;
        ct.line = ++i;
        if (py::isinstance<py::str>(t)) {
            ct.text = t.cast<std::string>();
        } else {
            const nlohmann::json ids = json_of(t, "texts[" + std::to_string(i - 1) + "]");
            if (!ids.is_array() || ids.empty()) {
                throw InputError("texts[" + std::to_string(i - 1) +
                                 "]: expected a string or a non-empty list of token ids");
            }
            for (const auto& id : ids) {
                if (!id.is_number_integer() || id.get<std::int64_t>() < 0) {
                    throw InputError("texts[" + std::to_string(i - 1) +
                                     "]: expected token ids (integers >= 0)");
                }
                ct.token_ids.push_back(id.get<std::int64_t>());
            }
        }
        r.texts.push_back(std::move(ct));
    }
}

PyCensus census(const std::string& model,
                const py::object& texts,
                const py::object& probe,
                std::size_t probes,
                std::uint64_t seed,
                double sink_threshold,
                unsigned threads,
                unsigned jobs,
                const py::object& html,
                const py::object& progress) {
    problem::CensusRequest r;
    r.params = model;
    r.base = fs::current_path();
    add_texts(r, texts);
    if (!probe.is_none()) {
        r.probe = problem::parse_probe(py::str(probe).cast<std::string>());
    }
    if (r.texts.empty() && !r.probe) {
        throw InputError("texts: give texts (a list, or a TEXTS file) or a probe");
    }
    if (!(sink_threshold >= 0.0 && sink_threshold <= 1.0)) {
        throw InputError("sink_threshold: expected a number from 0 to 1");
    }
    r.probes = std::max<std::size_t>(1, probes);
    r.seed = seed;
    r.sink_threshold = sink_threshold;
    r.solve.threads = threads;
    r.jobs = std::max(1U, jobs);
    // After each group of texts: the caller's progress.
    const py::object bar = progress_callable(progress, "text");
    if (!bar.is_none()) {
        r.progress = [&bar](std::size_t done, std::size_t total) {
            const py::gil_scoped_acquire gil;
            bar(done, total);
        };
    }
    problem::CensusBest best;
    const std::string html_path = html.is_none() ? "" : std::string(py::str(html));
    if (!html_path.empty()) {
        if (!io::has_extension(html_path, ".html")) {
            throw InputError("html: expected an .html file, got '" + html_path + "'");
        }
        r.on_text = [&best](std::size_t i, const auto& stats) { best.add(i, stats); };
    }
    PyCensus out;
    released([&] {
        out.c = problem::run_census(r);
        if (!html_path.empty()) {
            io::write_file_atomic(html_path, plot::census_html(out.c, best, r, {}));
        }
    });
    out.texts = r.texts.size() + (r.probe ? r.probes : 0);
    return out;
}

} // namespace

void register_census(py::module_& m) {
    py::class_<PyCensus>(m,
                         "Census",
                         "A head census: every layer's and head's statistics pooled "
                         "over texts (attn.census).")
        .def_property_readonly("layers", [](const PyCensus& p) { return p.c.layers; })
        .def_property_readonly("heads", [](const PyCensus& p) { return p.c.heads; })
        .def_property_readonly("texts", [](const PyCensus& p) { return p.texts; })
        .def_property_readonly("sink_threshold",
                               [](const PyCensus& p) { return p.c.sink_threshold; })
        .def_property_readonly("stats",
                               [](const PyCensus&) {
                                   std::vector<std::string> names;
                                   for (const char* n : problem::head_stat_names()) {
                                       names.emplace_back(n);
                                   }
                                   return names;
                               })
        .def_property_readonly(
            "means",
            [](const PyCensus& p) { return p.stats(0); },
            "{statistic: [layers, H] float64}: Σ values / Σ rows (NaN: no row)")
        .def_property_readonly("sums", [](const PyCensus& p) { return p.stats(1); })
        .def_property_readonly("rows", [](const PyCensus& p) { return p.stats(2); })
        .def_property_readonly(
            "sink", &PyCensus::sink, "[layers, H] bool: first_token >= sink_threshold")
        .def("__getitem__", &PyCensus::get, py::arg("name"))
        .def("save",
             &PyCensus::save,
             py::arg("path"),
             "Writes the census as `attn census --output` does: .json, .csv or .npz (atomically).")
        .def("_repr_html_", &PyCensus::repr_html)
        .def("__repr__", &PyCensus::repr);

    m.def("census",
          &census,
          py::arg("model"),
          py::arg("texts") = py::none(),
          py::kw_only(),
          py::arg("probe") = py::none(),
          py::arg("probes") = std::size_t{1},
          py::arg("seed") = std::uint64_t{0},
          py::arg("sink_threshold") = 0.3,
          py::arg("threads") = 0U,
          py::arg("jobs") = 1U,
          py::arg("html") = py::none(),
          py::arg("progress") = py::none(),
          R"doc(A head census, as `attn census MODEL TEXTS`: every layer's and head's statistics
(entropy, first_token, previous_token, self, distance, duplicate_token, induction) pooled
over the texts (Σ values / Σ rows), and sink.

  model           a model folder or .gguf file
  texts           a list of strings (tokenized as text= is) and lists of token ids (used
                  as given), or the path of a TEXTS file (JSON Lines or one text per line)
  probe           "induction:N:R": seeded sequences of N random ids repeated R times
  probes, seed    how many probes, and their seed
  sink_threshold  a head is a sink when its pooled first_token is at least this
  threads, jobs   the kernels' threads; texts run at once (the census is the same)
  html            a path: also writes the census page (`attn census --html`)
  progress        called as progress(done, total) after each group of texts, or True for
                  a progress bar (tqdm's when installed, else a line of text)

Returns an attn.Census: .means / .sums / .rows ({statistic: [layers, H] array}),
.sink, census["induction"], .save("census.npz"); Jupyter shows it as a table.
Ctrl-C stops it with KeyboardInterrupt within a fraction of a second; nothing is written.

Example:
  c = attn.census("gpt2/", ["The cat sat on the mat."], probe="induction:20:2")
  c["induction"].argmax())doc");
}

} // namespace attn::python

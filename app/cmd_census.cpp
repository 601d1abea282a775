// `attn census MODEL [TEXTS]` and `attn census merge A.npz B.npz ... -o ALL.npz`: the flags,
// the texts read, problem::run_census, and the census written by extension (.json, .csv,
// .npz) or printed as JSON. The statistics and files are the library's (problem/census*).
#include "attn/error.hpp"
#include "attn/io/atomic_file.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/limits.hpp"
#include "attn/plot/census_view.hpp"
#include "attn/problem/census.hpp"
#include "attn/problem/census_files.hpp"
#include "attn/problem/census_texts.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace attn::app {

namespace {

struct CensusArgs {
    std::string model;
    std::string texts;
    std::string probe;
    std::size_t probes = 1;
    std::uint64_t seed = 0;
    double sink_threshold = 0.3;
    std::string output;
    std::string html;
    unsigned threads = 0;
    unsigned jobs = 1;
    bool quiet = false;
    // merge
    std::vector<std::string> parts;
    std::string merged;
};

void write_census(const problem::Census& c, const std::string& path) {
    write_table(path,
                {[&c] { return problem::census_json(c); },
                 [&c] { return problem::census_csv(c); },
                 [&c] { return problem::census_npz(c); }});
}

void run_census(const CensusArgs& a) {
    if (a.model.empty()) {
        throw InputError("census: give MODEL (a model folder, .safetensors or .gguf file)");
    }
    table_format(a.output); // a bad extension before any work
    if (!a.html.empty() && !io::has_extension(a.html, ".html")) {
        throw InputError("--html " + io::message_text(a.html, 80) + ": expected an .html file");
    }
    if (!(a.sink_threshold >= 0.0 && a.sink_threshold <= 1.0)) {
        throw InputError("--sink-threshold: expected a number from 0 to 1");
    }
    problem::CensusRequest r;
    r.params = a.model;
    r.base = std::filesystem::current_path();
    const bool from_stdin = a.texts.empty() || a.texts == "-";
    r.texts_name = from_stdin ? "<stdin>" : a.texts;
    if (!a.probe.empty()) {
        r.probe = problem::parse_probe(a.probe);
    }
    if (!from_stdin || a.probe.empty()) { // probes alone read no texts
        const std::vector<std::uint8_t> bytes =
            from_stdin ? read_stdin("TEXTS") : io::read_file(a.texts);
        r.texts = problem::read_census_texts(
            std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
            r.texts_name);
    }
    r.probes = a.probes;
    r.seed = a.seed;
    r.sink_threshold = a.sink_threshold;
    r.solve.threads = a.threads;
    r.jobs = a.jobs;
    // "attn census: 120 done, 35/s, 3.4 s [####....] 40%" on a terminal, texts as the bar.
    ProgressLine progress(
        progress_wanted(a.quiet), "attn census", r.texts.size() + (r.probe ? r.probes : 0));
    r.progress = [&progress](std::size_t done, std::size_t) { progress.update(done, 0, done); };
    problem::CensusBest best;
    if (!a.html.empty()) {
        r.on_text = [&best](std::size_t i, const auto& stats) { best.add(i, stats); };
    }
    const problem::Census census = problem::run_census(r);
    progress.clear();
    write_census(census, a.output);
    if (!a.html.empty()) {
        io::write_file_atomic(a.html, plot::census_html(census, best, r, {}));
    }
}

void run_merge(const CensusArgs& a) {
    if (a.parts.size() < 2) {
        throw InputError("census merge: give at least two census .npz files");
    }
    if (!io::has_extension(a.merged, ".npz")) {
        throw InputError("-o/--output: expected the merged census's .npz file, got '" +
                         io::message_text(a.merged, 80) + "'");
    }
    problem::Census all = problem::read_census_npz(a.parts.front());
    for (std::size_t i = 1; i < a.parts.size(); ++i) {
        all.add(problem::read_census_npz(a.parts[i]), a.parts[i]);
    }
    io::write_file_atomic(a.merged, problem::census_npz(all));
}

void census_options(CLI::App& cmd, CensusArgs& a) {
    cmd.add_option("MODEL", a.model, "a model folder, .safetensors or .gguf file");
    cmd.add_option("TEXTS",
                   a.texts,
                   "JSON Lines ({\"text\": ...} or {\"token_ids\": [...]}) or plain text, one "
                   "text per line; - or absent: stdin");
    cmd.add_option("--probe",
                   a.probe,
                   "induction:N:R adds seeded sequences of N random vocabulary ids repeated R "
                   "times");
    cmd.add_option("--probes", a.probes, "how many probe sequences (default 1)")
        ->check(positive_count());
    cmd.add_option("--seed", a.seed, "the probes' seed (default 0)");
    cmd.add_option("--sink-threshold",
                   a.sink_threshold,
                   "a head is a sink when its pooled first_token is at least this (default 0.3)");
    cmd.add_option(
        "-o,--output", a.output, "FILE.json, FILE.csv or FILE.npz (default: stdout JSON)");
    cmd.add_option("--html",
                   a.html,
                   "FILE.html: the layers x heads grid by a statistic chosen in the page, a "
                   "sortable table, and each head's attention on the text it scored highest");
    cmd.add_option("--threads", a.threads, "threads of the attention kernels (default: all)");
    cmd.add_option("--jobs", a.jobs, "texts run at once (default 1); the census is the same")
        ->check(positive_count());
    cmd.add_flag("--quiet", a.quiet, "no progress line on stderr");
}

} // namespace

void add_census(CLI::App& app) {
    auto args = std::make_shared<CensusArgs>();
    CLI::App* cmd =
        add_command(app,
                    {"census",
                     "Every layer's and head's statistics (entropy, first_token, previous_token, "
                     "self, distance, duplicate_token, induction, sink) pooled over a corpus",
                     "Pooled means are sums over texts divided by qualifying rows; both are "
                     "written,\nso `attn census merge` adds partial censuses exactly."});
    cmd->require_subcommand(0, 1);
    CLI::App* merge = add_command(
        *cmd, {"merge", "Add partial censuses (.npz) exactly: sums and row counts", ""});
    if (declares_flags(cmd->get_name().c_str())) { // census's flags and merge's
        census_options(*cmd, *args);
        merge->add_option("PARTS", args->parts, "census .npz files")->required();
        merge->add_option("-o,--output", args->merged, "the merged census (.npz)")->required();
    }
    merge->callback([args] { run_merge(*args); });
    cmd->callback([args, merge] {
        if (!merge->parsed()) {
            run_census(*args);
        }
    });
}

} // namespace attn::app

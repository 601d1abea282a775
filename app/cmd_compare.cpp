// `attn compare A B`: two models run on the same --text/--token-ids, or two weights files or
// result documents of one shape, compared per layer and head (problem::compare_models,
// problem::compare_weights); the comparison written by extension (.json, .csv, .npz) or
// printed as JSON, the page with --html, one summary line on stderr. The metrics and files
// are the library's (problem/attention_compare*, plot/compare_figure).
#include "attn/error.hpp"
#include "attn/io/atomic_file.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/model/folder.hpp"
#include "attn/model/gguf.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/plot/compare_figure.hpp"
#include "attn/problem/attention_compare.hpp"
#include "attn/problem/attention_compare_files.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace attn::app {

namespace {

struct CompareArgs {
    std::string a, b;
    cli::ProblemFlags input; ///< --text, --text-file, --token-ids, --no-special-tokens
    std::size_t top_k = 5;
    std::string output, html;
    unsigned threads = 0;
    bool quiet = false;
};

void write_comparison(const problem::AttentionComparison& c, const std::string& path) {
    write_table(path,
                {[&c] { return problem::compare_json(c); },
                 [&c] { return problem::compare_csv(c); },
                 [&c] { return problem::compare_npz(c); }});
}

bool runs_models(const CompareArgs& a) {
    return !a.input.text.empty() || !a.input.text_file.empty() || !a.input.token_ids.empty();
}

/// A path that only a model run can read (a folder, .gguf, .safetensors).
bool looks_like_model(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec) || model::is_gguf_path(path) ||
           model::is_safetensors_path(path);
}

/// Two models on the same input; `maps` kept for --html.
problem::AttentionComparison compare_two_models(const CompareArgs& a, problem::ComparedMaps* maps) {
    cli::ProblemFlags fa = a.input;
    fa.params = a.a;
    const cli::ProblemInput in = cli::problem_input(fa, "compare");
    cli::ProblemFlags fb;
    fb.params = a.b;
    problem::ModelCompareRequest r;
    r.a = in.doc;
    r.b = in.doc;
    r.b["params"] = cli::problem_input(fb, "compare").doc["params"];
    if (!in.arrays.empty()) {
        throw InputError("compare: --token-ids - (stdin) is not supported; give a file");
    }
    r.base = in.base;
    r.top_k = a.top_k;
    r.solve.threads = a.threads;
    r.temp_dir = std::filesystem::temp_directory_path();
    r.keep_maps = maps != nullptr;
    DelayedSpinner spinner(progress_wanted(a.quiet), "comparing");
    if (!a.quiet) {
        r.progress = LayerProgress(&spinner, false, 0, cli::stderr_sink());
    }
    problem::AttentionComparison c = problem::compare_models(r, maps);
    spinner.stop();
    return c;
}

void run_compare(const CompareArgs& a) {
    table_format(a.output); // a bad extension before any work
    if (!a.html.empty() && !io::has_extension(a.html, ".html") &&
        !io::has_extension(a.html, ".htm")) {
        throw InputError("--html " + io::message_text(a.html, 80) + ": expected an .html file");
    }
    if (a.a == "-" && a.b == "-") {
        throw InputError("compare: only one of A and B can be - (stdin)");
    }
    std::optional<problem::AttentionComparison> c;
    std::optional<plot::CompareFigureInput> figure;
    problem::ComparedMaps maps;
    problem::LoadedWeights wa, wb;
    if (runs_models(a)) {
        c = compare_two_models(a, a.html.empty() ? nullptr : &maps);
        if (!a.html.empty()) {
            figure = plot::CompareFigureInput{
                maps.a->values(), maps.b->values(), maps.layout, maps.tokens, a.a, a.b};
        }
    } else {
        if (looks_like_model(a.a) || looks_like_model(a.b)) {
            throw InputError("compare: two models run on --text or --token-ids (give one)");
        }
        wa = problem::read_weights(a.a, [] { return read_stdin("A"); });
        wb = problem::read_weights(a.b, [] { return read_stdin("B"); });
        c = problem::compare_weights(wa, wb, a.top_k);
        if (!a.html.empty()) {
            figure = plot::CompareFigureInput{
                wa.values(), wb.values(), problem::weights_layout(wa), wa.query_tokens, a.a, a.b};
            if (wa.key_tokens != wa.query_tokens) {
                figure->tokens.clear(); // one list labels both axes
            }
        }
    }
    if (figure) {
        io::write_file_atomic(a.html, plot::compare_html(*c, *figure, a.threads));
    }
    write_comparison(*c, a.output);
    if (!a.quiet) {
        std::cerr << "attn compare: " << problem::compare_summary(*c) << '\n';
    }
}

void compare_options(CLI::App& cmd, CompareArgs& a) {
    cmd.add_option("A",
                   a.a,
                   "a model (folder, .safetensors, .gguf), or weights (.npy/.npz/.json "
                   "array or result document, - for stdin)")
        ->required();
    cmd.add_option("B", a.b, "the other model, or weights of A's shape")->required();
    cmd.add_option("--text",
                   a.input.text,
                   "text both models' tokenizers turn into the same ids; repeat for a "
                   "right-padded batch (padding query rows are not compared)")
        ->allow_extra_args(false);
    cmd.add_option("--text-file", a.input.text_file, "a file whose bytes are the text, as --text");
    cmd.add_option("--token-ids", a.input.token_ids, "integer token ids [L] or [B,L] (.npy/.json)");
    cmd.add_flag("--no-special-tokens",
                 a.input.no_special_tokens,
                 "with --text: leave out the tokenizer's special tokens");
    cmd.add_option("--top-k", a.top_k, "k of the topk overlap (default 5; min(K, Lk) per row)")
        ->check(positive_count());
    cmd.add_option(
        "-o,--output", a.output, "FILE.json, FILE.csv or FILE.npz (default: stdout JSON)");
    cmd.add_option("--html", a.html, "FILE.html: the js grid and, per head, A, B and |A - B|");
    cmd.add_option("--threads", a.threads, "threads of the attention kernels (default: all)");
    cmd.add_flag("--quiet", a.quiet, "no progress and no summary line on stderr");
}

} // namespace

void add_compare(CLI::App& app) {
    add_command<CompareArgs>(
        app,
        {"compare",
         "Compare two models on the same text (or two weights files) per layer and head: js, "
         "tv, max_abs, top1, topk",
         "js: mean Jensen-Shannon divergence (nats); tv: mean total variation; max_abs: the "
         "largest |A - B|;\ntop1: the fraction of query rows with the same argmax key; topk: "
         "the mean top-k overlap.\nTies go to the lowest key index. Exit 0 when it ran, 2 on bad "
         "input."},
        compare_options,
        run_compare);
}

} // namespace attn::app

// What `compute`, `explain`, `batch`, `diff` and `info` share: the problem flags and the
// problem document they build, the output options and the writing of one solved problem,
// and reading "-" (stdin) wherever a file is read. No subcommand is registered here.
#pragma once

#include "attn/io/array.hpp"
#include "attn/problem/layers.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::app {

// --- the problem: a PROBLEM file (or -) and a flag per field -------------------------------

/// The problem flags `batch` shares with `compute` (batch: defaults for every line); empty
/// or 0 = not given.
struct CommonProblemFlags {
    std::string variant;      ///< --variant
    std::string causal;       ///< --causal, --causal=bottom-right
    std::string scale;        ///< --scale X|default
    std::size_t heads = 0;    ///< --heads
    std::size_t kv_heads = 0; ///< --kv-heads
    std::string precision;    ///< --precision f32|f64
};

/// Sets the field of each flag given in `f` (a flag overrides its field). Throws
/// InputError for a malformed --scale.
void apply_common_flags(const CommonProblemFlags& f, nlohmann::json& doc);

/// The command-line form of a problem (shared by `compute` and `explain`).
struct ProblemArgs : CommonProblemFlags {
    std::string problem; ///< PROBLEM file, "-" for stdin, empty for flags only
    std::string query, key, value, input, context, params, mask, bias, key_padding;
    std::int64_t seed = -1;
    // Score features and diagnostics; empty/0 = not given (the problem's field, if any, stays).
    std::string prefix, layout;       ///< --prefix, --layout (checkpoint params)
    std::string hidden_states;        ///< --hidden-states FILE (every layer of the checkpoint)
    std::string layers;               ///< --layers 0,3,5-7
    std::string window, window_align; ///< --window L,R; --window-align
    bool varlen = false;              ///< --varlen
    std::string softcap;              ///< --softcap X
    std::string alibi;                ///< --alibi (default slopes) or --alibi=S0,S1,..
    std::string sinks;                ///< --sinks S0,S1,..
    std::string mask_convention;      ///< --mask-convention keep|torch-mha|additive
    std::string returns;              ///< --return lse,entropy,argmax,top_k
    std::size_t top_k = 0;            ///< --top-k K (also asks for top_k)
    std::string tokens;               ///< --tokens a,b,c|FILE (the "tokens" field)
    // Real models.
    std::string rope;                        ///< --rope (true), --rope=THETA or --rope=off
    std::string rope_style;                  ///< --rope-style neox|interleaved
    std::size_t rope_dim = 0;                ///< --rope-dim DR
    std::optional<std::int64_t> rope_offset; ///< --rope-offset N
    bool no_norm = false;                    ///< --no-norm
    std::string config;                      ///< --config FILE (a checkpoint's config.json)
    std::string token_ids;                   ///< --token-ids FILE
    std::vector<std::string> text;           ///< --text S (repeated: a batch)
    std::vector<std::string> text_file;      ///< --text-file F (its bytes; - for stdin)
    bool no_special_tokens = false;          ///< --no-special-tokens
    bool average_heads = false;              ///< --average-heads
};

/// Registers the positional PROBLEM and the field flags (--query/-q, ..., --variant).
void add_problem_options(CLI::App& cmd, ProblemArgs& args);

/// A problem document ready for problem::decode_problem.
struct ProblemInput {
    nlohmann::json doc;          ///< PROBLEM's fields overlaid with the flags
    std::filesystem::path base;  ///< the folder PROBLEM's relative paths resolve against
    std::string name;            ///< PROBLEM as given ("<stdin>" for -), or "flags"
    problem::ArrayValues arrays; ///< array flags given as "-": read from stdin, by field
};

/// Reads PROBLEM (a file or stdin) and overlays the flags: a flag overrides the same field.
/// Array flags given as "-" read the array from stdin (NPY or JSON, sniffed) into `arrays`
/// (handed to decode_problem as values); `--params -` reads a params object. Throws InputError (no
/// problem at all, invalid JSON, stdin used twice, ...).
ProblemInput problem_input(const ProblemArgs& args, std::string_view command);

/// Overlays the score-feature flags of `a` (--window, --softcap, --alibi, --sinks,
/// --mask-convention, --return, --top-k, --average-heads, --prefix,
/// --layout) on `doc`.
/// Throws InputError naming the flag for a malformed value.
void apply_feature_flags(const ProblemArgs& a, nlohmann::json& doc);

/// "0.125", "1", "default"/"none" (-> null). Throws InputError for anything else.
nlohmann::json parse_scale_flag(const std::string& s);

// --- stdin ------------------------------------------------------------------------------------

/// All of stdin. `what` names the argument that asked, for errors. stdin can be consumed
/// once per process: a second call throws InputError naming both uses.
std::vector<std::uint8_t> read_stdin(std::string_view what);

/// io::read_array_file, except that "-" reads stdin (format sniffed, see
/// io::parse_array_bytes). Throws InputError naming the file ("<stdin>" for -).
io::Array read_array_arg(const std::string& path, io::ArrayKind kind);

// --- outputs ----------------------------------------------------------------------------------

struct OutputOptions {
    std::string output;  ///< --output FILE (.npy/.json, or - for stdout); empty: the result
                         ///< document on stdout
    std::string weights; ///< --weights FILE (.npy/.json, or -)
    std::string heatmap; ///< --heatmap FILE.png|.svg|.html
    std::string format;  ///< --format npy|json; empty: by extension, json for -
    std::string dtype = "f32";
    bool no_weights = false;
    bool quiet = false;
    unsigned threads = 0;
    Simd simd = Simd::best;    ///< --simd TARGET
    std::string max_memory;    ///< --max-memory SIZE; empty: io::default_memory_limit()
    bool check_finite = false; ///< --check-finite
    double font_size = 10.0;   ///< --font-size PT (of --heatmap)
    std::size_t cols = 0;      ///< --cols N (of --heatmap); 0: automatic
    std::string name; ///< the problem's file name (not a flag): --heatmap's title, unless an id

    problem::SolveOptions solve_options() const;
};

/// Registers --output, --weights, --heatmap, --format, --no-weights, --dtype, --threads,
/// --simd, --quiet, --max-memory, --check-finite.
void add_output_options(CLI::App& cmd, OutputOptions& out);

/// Registers --max-memory SIZE and --check-finite (compute registers them through
/// add_output_options; batch on its own).
void add_limit_options(CLI::App& cmd, std::string& max_memory, bool& check_finite);

/// Registers --simd TARGET (compute registers it through add_output_options; batch on its
/// own): "best" or a target `attn --version` names, case-insensitive, read into `simd` while
/// the command line is parsed. A target this CPU does not run is an InputError listing
/// the ones it does.
CLI::Option* add_simd_option(CLI::App& cmd, Simd& simd);

/// Sets the process-wide memory limit from --max-memory (nothing when it is empty).
/// Call it before anything is read. Throws InputError for a bad SIZE.
void apply_memory_limit(const std::string& max_memory);

/// Refuses outputs that would overwrite one of the problem's inputs (its arrays, params
/// files and the PROBLEM file itself) or each other: --output, --weights, --heatmap.
/// Also refuses an --output that cannot hold every requested result ("never drop one"):
/// an .npy file with --return arrays (`hidden_states`: a model run asked for them) is
/// exit 2 naming what can (.npz, .json, stdout).
void check_outputs(const problem::Problem& problem,
                   const ProblemArgs& args,
                   const OutputOptions& o,
                   bool hidden_states = false);

/// --weights FILE.npy written by the kernel itself, row block by row block, into the file
/// (io::NpyFileWriter): the destination solve() gets (SolveOptions::weights_to)
/// and the file emit_solution() commits.
struct WeightsFile {
    io::NpyFileWriter file;
    WeightsDestination<float> to;
    WeightsFile(const std::string& path, const std::vector<std::size_t>& shape);
};

/// The mapped --weights file for this problem's weights (`layers` > 0: a stack of that
/// many layers' weights), or null where they take today's path: no --weights, a format
/// other than float32 .npy, stdout or a device, --heatmap (which needs them in memory), a
/// problem whose weights are not the kernel's as they are (problem::weights_direct).
/// Call after check_outputs(). Throws SystemError when the file cannot be made (a full
/// disk, RLIMIT_FSIZE): before any work.
std::unique_ptr<WeightsFile>
map_weights_file(const problem::Problem& problem, const OutputOptions& o, std::size_t layers = 0);

/// Writes the requested files (atomically; "-" is stdout) or the result document on
/// stdout, and warns about fully masked rows on stderr. At most one output may be "-";
/// when one is, the result document is not printed. Throws InputError for conflicting
/// options, SystemError when a write fails.
/// `stack`: the solution is a stacked every-layer result of this stack (problem is its
/// first layer's): the result document gains "layers", the heatmap is the model view.
void emit_solution(const problem::Problem& problem,
                   const problem::Solution& solution,
                   const OutputOptions& o,
                   const problem::LayerStack* stack = nullptr,
                   WeightsFile* weights_file = nullptr);

/// Renders weights [.., Lq, Lk] as a PNG, SVG or HTML heatmap at `path` with the
/// problem's tokens and `options`' --font-size, --cols, --quiet (heatmap_render.cpp).
/// `layers`: the layer numbers of a stacked result's leading axis (the model view: rows
/// are layers, columns heads); empty for one layer.
void write_heatmap_file(const std::string& path,
                        const io::Array& weights,
                        const problem::Problem* problem,
                        const OutputOptions& options,
                        const std::vector<std::size_t>& layers = {});

} // namespace attn::app

// A command line's problem flags as plain values, and their translation into the problem
// document: each flag sets the field of the same meaning (a flag overrides its field).
// The front end declares the flags (app/: CLI11) and fills these structs; everything the
// values mean is here, under unit tests. The library below names fields; this layer names
// flags.
#pragma once

#include "attn/problem/batch.hpp"
#include "attn/problem/problem.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::cli {

using problem::ArrayValues;

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

/// The command-line form of a problem (shared by `compute` and `explain`).
struct ProblemFlags : CommonProblemFlags {
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
    std::string returns;              ///< --return lse,entropy,argmax,top_k,head_stats,rollout
    std::string rollout_fusion;       ///< --rollout-fusion mean|max|min
    std::size_t top_k = 0;            ///< --top-k K (also asks for top_k)
    std::optional<std::string> select_heads;  ///< --select-heads 0,3,8-11 ("" is refused)
    std::optional<std::string> query_rows;    ///< --query-rows A:B
    std::optional<std::string> weights_dtype; ///< --weights-dtype f32|f16
    std::optional<std::string> activations;   ///< --activations f32|q8_0|q8|bf16
    std::string tokens;                       ///< --tokens a,b,c|FILE (the "tokens" field)
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

/// Sets the field of each flag given in `f` (a flag overrides its field). Throws
/// InputError for a malformed --scale.
void apply_common_flags(const CommonProblemFlags& f, nlohmann::json& doc);

/// Overlays the score-feature and model flags of `a` (--window, --softcap, --alibi,
/// --sinks, --mask-convention, --return, --top-k, --tokens, --average-heads, --prefix,
/// --layout, --config, --rope*, --no-norm) on `doc`. Throws InputError naming the flag for
/// a malformed value.
void apply_feature_flags(const ProblemFlags& a, nlohmann::json& doc);

/// A problem document ready for decode_problem (or decode_document).
struct ProblemInput {
    nlohmann::json doc;         ///< PROBLEM's fields overlaid with the flags
    std::filesystem::path base; ///< the folder PROBLEM's relative paths resolve against
    std::string name;           ///< PROBLEM as given ("<stdin>" for -), or "flags"
    ArrayValues arrays;         ///< array flags given as "-": read from stdin, by field
};

/// What reads "-": all of stdin, `what` naming the argument that asked (io::read_stdin).
using StdinReader = std::function<std::vector<std::uint8_t>(std::string_view what)>;

/// Reads PROBLEM (a file or stdin) and overlays the flags: a flag overrides the same field,
/// and a flag's path is made absolute (it resolves against the working folder, a path
/// inside PROBLEM against PROBLEM's folder). Array flags given as "-" read the array from
/// stdin (NPY or JSON, sniffed; float64 kept for precision f64) into `arrays`; `--params -`
/// reads a params object. `command` names the subcommand in the "no problem" error. Throws
/// InputError (no problem at all, invalid JSON, stdin used twice, ...).
ProblemInput problem_input(const ProblemFlags& args,
                           std::string_view command,
                           const StdinReader& read_stdin = {});

// --- the flags' values ------------------------------------------------------------------

/// "0.125", "1", "default"/"none"/"null" (-> null). Throws InputError for anything else.
nlohmann::json parse_scale_flag(const std::string& s);

/// "a,b,c" -> {"a", "b", "c"} (empty items kept, so "1,,2" is refused by the caller).
std::vector<std::string> split_commas(const std::string& s);

/// A finite number, all of `s`, or InputError "FLAG: expected WHAT, got 'S'".
double flag_number(const std::string& s, const char* flag, const char* what);

/// One side of --window: an integer >= -1, or the window's InputError.
std::int64_t flag_window_side(const std::string& s);

/// A comma-separated list of finite numbers (--alibi slopes), or also -inf when `neg_inf`
/// (--sinks: a sink that takes nothing), given on as the field's "-inf".
nlohmann::json flag_numbers(const std::string& s, const char* flag, bool neg_inf = false);

/// "none", "off" or "false": the flag turns its feature off.
bool is_off(const std::string& s);

// --- batch --------------------------------------------------------------------------------

/// A batch run's flags; empty/0 = not given.
struct BatchFlags : CommonProblemFlags {
    unsigned jobs = 0;    ///< --jobs: lines in parallel; 0: all usable cores
    unsigned threads = 0; ///< --threads per problem; 0: cores / jobs (at least 1)
    Simd simd = Simd::best;
    bool no_weights = false;
    bool check_finite = false;
};

/// The run of `flags` over an input whose relative paths resolve against `base`: the
/// common flags as every line's defaults, parallel lines of one thread each rather than
/// parallel rows inside one small problem, error lines worded with flags (error_text).
/// Throws InputError for a malformed --scale.
problem::BatchPlan plan_batch(const BatchFlags& flags, const std::filesystem::path& base);

} // namespace attn::cli

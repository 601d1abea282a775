// `attn batch`'s work, over the JSON Lines pipeline of attn/io/line_pipeline.hpp: one line
// parsed, decoded, solved and formatted (a failure becomes its error line), the run's
// settings from its flags, and the warnings after the run. The front end opens the input,
// shows progress and prints.
#pragma once

#include "attn/error.hpp"
#include "attn/io/line_pipeline.hpp"
#include "attn/problem/solve.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::problem {

/// What every line shares.
struct LineContext {
    std::filesystem::path base; ///< relative paths in lines resolve against this folder
    nlohmann::json defaults = nlohmann::json::object(); ///< fields set on every line that
                                                        ///< does not set them itself
    SolveOptions solve;                                 ///< weights or not, threads per problem
    bool check_finite = false; ///< check_finite: NaN/inf inputs fail the line
    /// An InputError's text in its error line (null: what(); the CLI: its flags).
    std::function<std::string(const InputError&)> error_text;
};

/// A batch run: the workers and what every line shares.
struct BatchPlan {
    unsigned jobs = 1;
    LineContext lines;
};

/// Parses, decodes, solves and formats one line (a document as attn compute takes it,
/// decode_document, except every layer of a checkpoint: refused). Never throws for a bad line: the
/// per-line catch of the design rules, turning any failure into an error line {"id": .., "error":
/// ..} (id null until the line shows one).
io::LineResult process_line(const std::string& line, std::uint64_t line_no, const LineContext& ctx);

/// Every line of `reader` through process_line, written in order by `writer`
/// (io::run_lines with plan.jobs workers).
void run_batch(io::LineReader& reader, io::LineWriter& writer, const BatchPlan& plan);

/// The warnings after a run, in order: the lines' warnings (likely mistakes, line by
/// line, the first LineWriter::max_warnings), how many more were not shown, the lines
/// with fully masked rows, the lines that failed.
std::vector<std::string> batch_warnings(const io::LineWriter& writer);

/// The CPUs this process may run on (its affinity mask, as `taskset` or a container's
/// cpuset sets it), else the hardware's thread count; at least 1.
unsigned usable_cores();

} // namespace attn::problem

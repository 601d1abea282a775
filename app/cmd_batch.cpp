// `attn batch [FILE]`: JSON Lines in, JSON Lines out, in input order. A line that fails
// becomes {"id": .., "error": ".."} and the run goes on; exit 1 if any line failed.
// Streaming: lines are read as they arrive, computed by --jobs workers, and written in
// order as soon as each is ready; at most a fixed window of lines is in flight, so memory
// stays bounded however long the input is. It never reads the whole input into memory.
#include "attn/error.hpp"
#include "attn/io/json_lines.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/line_pipeline.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/model_run.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <new>
#include <sched.h>
#include <thread>
#include <unistd.h>

namespace attn::app {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct BatchArgs : CommonProblemFlags {
    std::string file;
    unsigned jobs = 0;    ///< 0: all cores
    unsigned threads = 0; ///< per problem; 0: cores / jobs (at least 1)
    Simd simd = Simd::best;
    bool no_weights = false;
    bool quiet = false;
    std::string max_memory;
    bool check_finite = false;
};

/// What every line shares.
struct LineContext {
    fs::path base;                  ///< relative paths in lines resolve against this folder
    json defaults = json::object(); ///< fields set on every line that does not set them itself
    problem::SolveOptions solve;    ///< weights or not, threads per problem
    std::uint64_t max_line = 0;     ///< longer lines are skipped (the memory limit)
    bool check_finite = false;      ///< --check-finite: NaN/inf inputs fail the line
};

io::LineResult error_line(const json& id, std::uint64_t line_no, const std::string& message) {
    return {io::json_error_line(id, message) + "\n", line_no, true, false};
}

/// Parses, decodes, solves and formats one line. Never throws for a bad line: this is the
/// per-line catch of the design rules, turning any failure into an error line.
io::LineResult
process_line(const std::string& line, std::uint64_t line_no, const LineContext& ctx) {
    json id; // null until the line shows one
    try {
        json doc = io::parse_json_line(line, line_no);
        if (doc.is_object()) {
            if (const auto it = doc.find("id"); it != doc.end()) {
                id = *it;
            }
            for (const auto& [field, value] : ctx.defaults.items()) {
                if (!doc.contains(field)) {
                    doc[field] = value;
                }
            }
        }
        if (problem::is_model_run(doc, ctx.base)) { // a whole model from token ids
            const problem::ModelRun run = problem::decode_model_run(doc, ctx.base);
            const problem::Solution s = problem::solve_model_run(run, ctx.solve);
            return {problem::stack_result_document(run.stack, s) + "\n",
                    line_no,
                    false,
                    s.rows_fully_masked > 0,
                    run.stack.first.warnings};
        }
        const problem::Problem prob = problem::decode_problem(doc, ctx.base);
        if (ctx.check_finite) {
            problem::check_finite(prob);
        }
        const problem::Solution s = problem::solve(prob, ctx.solve);
        return {problem::result_document(prob, s) + "\n",
                line_no,
                false,
                s.rows_fully_masked > 0,
                prob.warnings};
    } catch (const std::bad_alloc&) {
        return error_line(id, line_no, "out of memory");
    } catch (const std::exception& e) {
        return error_line(id, line_no, e.what());
    } catch (...) {
        return error_line(id, line_no, "internal error: unknown exception");
    }
}

/// The CPUs this process may run on (its affinity mask, as `taskset` or a container's
/// cpuset sets it), else the hardware's thread count.
unsigned usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) {
            return static_cast<unsigned>(n);
        }
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

/// The exit code: 0 when every line succeeded, 1 when any failed.
int run_batch(const BatchArgs& a) {
    const unsigned cores = usable_cores();
    const unsigned jobs = a.jobs > 0 ? a.jobs : cores;

    apply_memory_limit(a.max_memory); // per line: each line's problem must fit
    const io::LineInput input(a.file);
    LineContext ctx;
    ctx.base = input.base;
    apply_common_flags(a, ctx.defaults);
    ctx.solve.want_weights = !a.no_weights;
    ctx.check_finite = a.check_finite;
    // Parallel lines, one thread each, rather than parallel rows inside one small problem.
    ctx.solve.threads = a.threads > 0 ? a.threads : std::max(1u, cores / jobs);
    ctx.solve.simd = a.simd;

    // A line longer than the memory limit could not be decoded anyway: skip it unread.
    ctx.max_line = io::memory_limit();
    io::LineReader reader(input.fd, input.name, ctx.max_line);
    // With stdout on the terminal too, the result lines themselves show progress.
    ProgressLine progress(
        progress_wanted(a.quiet) && ::isatty(STDOUT_FILENO) == 0, "attn batch", input.size);
    io::LineWriter writer([&progress, &reader](std::uint64_t done, std::uint64_t failed) {
        progress.update(done, failed, reader.bytes_read());
    });
    io::run_lines(reader, writer, jobs, [&ctx](const std::string& line, std::uint64_t line_no) {
        return process_line(line, line_no, ctx);
    });
    progress.clear();

    if (!a.quiet) {
        // The decoder's warnings (likely mistakes), after the results, in line order.
        for (const std::string& w : writer.warnings()) {
            warn(w);
        }
        if (writer.warning_count() > writer.warnings().size()) {
            warn(std::to_string(writer.warning_count() - writer.warnings().size()) +
                 " more warning(s) not shown");
        }
    }
    if (!a.quiet && writer.noted() > 0) {
        warn(fully_masked_text(std::to_string(writer.noted()) + " problem(s) have query rows that",
                               "the first on line " + std::to_string(writer.first_noted_line())));
    }
    if (!a.quiet && writer.failed() > 0) {
        warn(std::to_string(writer.failed()) + " of " + std::to_string(writer.done()) +
             " problem(s) failed: see their \"error\" lines");
    }
    return writer.failed() > 0 ? 1 : 0;
}

void batch_options(CLI::App& cmd, BatchArgs& a) {
    cmd.add_option("file", a.file, "JSON Lines file, or - for stdin");
    cmd.add_option("-j,--jobs", a.jobs, "problems computed in parallel (default: all cores)")
        ->check(positive_count());
    cmd.add_flag("--no-weights", a.no_weights, "leave the weights out of every result");
    cmd.add_option(
           "--threads", a.threads, "threads per problem (default: cores / jobs, at least 1)")
        ->check(positive_count());
    add_simd_option(cmd, a.simd);
    cmd.add_flag("--quiet", a.quiet, "no warnings and no progress on stderr");
    add_limit_options(cmd, a.max_memory, a.check_finite);
    auto* g = "Defaults for every line (a line's own fields win)";
    cmd.add_option(
           "--variant", a.variant, "preset: dot, scaled, self, masked-self, cross, multihead")
        ->group(g);
    cmd.add_option("--heads", a.heads, "num_heads")->check(positive_count())->group(g);
    cmd.add_option("--kv-heads", a.kv_heads, "num_kv_heads")->check(positive_count())->group(g);
    cmd.add_option("--scale", a.scale, "score scale (a number, or 'default')")->group(g);
    cmd.add_option("--precision",
                   a.precision,
                   "f32 or f64: the whole computation in float64, results printed as "
                   "shortest round-trip doubles")
        ->check(precision_name())
        ->group(g);
    cmd.add_flag("--causal{top-left}",
                 a.causal,
                 "causal mask: --causal (top-left) or --causal=bottom-right")
        ->group(g);
}

} // namespace

void add_batch(CLI::App& app) {
    add_command<BatchArgs>(
        app,
        {"batch",
         "JSON Lines in (one problem per line; - or absent = stdin), results out, in order",
         "One result line per problem line, in input order, written as soon as it is ready;\n"
         "a line that fails gives {\"id\": .., \"error\": ..} and the run goes on. Exit 0 "
         "when every\nline succeeded, 1 when any failed. Progress shows on stderr when it "
         "is a terminal."},
        batch_options,
        run_batch);
}

} // namespace attn::app

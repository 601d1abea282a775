// `attn batch [FILE]`: JSON Lines in, JSON Lines out, in input order. A line that fails
// becomes {"id": .., "error": ".."} and the run goes on; exit 1 if any line failed.
// Streaming: lines are read as they arrive, computed by --jobs workers, and written in
// order as soon as each is ready; at most a fixed window of lines is in flight, so memory
// stays bounded however long the input is. It never reads the whole input into memory.
#include "attn/io/limits.hpp"
#include "attn/io/line_pipeline.hpp"
#include "attn/problem/batch.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <string>
#include <unistd.h>

namespace attn::app {

namespace {

struct BatchArgs : cli::BatchFlags {
    std::string file;
    bool quiet = false;
    std::string max_memory;
};

/// The exit code: 0 when every line succeeded, 1 when any failed.
int run_batch(const BatchArgs& a) {
    apply_memory_limit(a.max_memory); // per line: each line's problem must fit
    const io::LineInput input(a.file);
    const problem::BatchPlan plan = cli::plan_batch(a, input.base);
    // A line longer than the memory limit could not be decoded anyway: skip it unread.
    io::LineReader reader(input.fd, input.name, io::memory_limit());
    // With stdout on the terminal too, the result lines themselves show progress.
    ProgressLine progress(
        progress_wanted(a.quiet) && ::isatty(STDOUT_FILENO) == 0, "attn batch", input.size);
    io::LineWriter writer([&progress, &reader](std::uint64_t done, std::uint64_t failed) {
        progress.update(done, failed, reader.bytes_read());
    });
    problem::run_batch(reader, writer, plan);
    progress.clear();
    if (!a.quiet) {
        for (const std::string& w : problem::batch_warnings(writer)) {
            warn(w);
        }
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

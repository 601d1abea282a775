// Progress on stderr for long runs: a status line redrawn in place (batch) and a delayed
// spinner (compute). Both draw only when stderr is a terminal and --quiet is off, so they
// never reach pipelines, log files or CI. Nothing here writes to stdout. What they draw goes
// to a sink (stderr by default; a string in the tests).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace attn::cli {

/// Where progress is drawn: each call writes these bytes and flushes.
using ProgressSink = std::function<void(std::string_view)>;

/// Writes to stderr and flushes it.
ProgressSink stderr_sink();

/// True when progress may be drawn: stderr is a terminal (isatty), TERM is not "dumb",
/// and `quiet` is false.
bool progress_wanted(bool quiet);

/// One drawing of the batch status line, from "\r" to the erase-to-end "\033[K":
/// "\rLABEL: DONE done[, FAILED failed], RATE/s, ELAPSED s[ [###.....] PCT%]\033[K". The rate
/// is left out when `elapsed_seconds` is 0; the bar when `total_bytes` is 0 (unknown).
std::string progress_line_text(std::string_view label,
                               std::uint64_t done,
                               std::uint64_t failed,
                               double elapsed_seconds,
                               std::uint64_t bytes_read,
                               std::uint64_t total_bytes);

/// One frame of the spinner: "\rattn: LABEL F ELAPSED s\033[K", F cycling through | / - \.
std::string spinner_text(std::string_view label, std::size_t frame, double elapsed_seconds);

/// A model run's progress after `done` of `total` layers, `tokens` (B·L) through each, in
/// `elapsed_seconds`: "layer 3 of 16, 512 tokens, 1234 tokens/s, 4.1 s, about 17 s left"
/// (tokens/s: tokens × done / total per second, a whole forward's rate; the rate and the
/// time left are left out until a layer has taken measurable time).
std::string layer_progress_text(std::size_t done,
                                std::size_t total,
                                std::uint64_t tokens,
                                double elapsed_seconds);

/// Erases a drawn line: "\r\033[K".
inline constexpr std::string_view kEraseLine = "\r\033[K";

/// The status line of `attn batch`:
///   "attn batch: 1234 done, 2 failed, 812/s, 1.5 s [#######.............] 35%"
/// The bar and percentage appear when the input size is known (a regular file). First drawn
/// once the run has lasted a second (a quick run shows nothing), then redrawn at most every
/// 100 ms; thread-compatible (call from one thread at a time).
class ProgressLine {
  public:
    /// `enabled`: draw at all (see progress_wanted); `total_bytes`: 0 when unknown.
    ProgressLine(bool enabled,
                 std::string label,
                 std::uint64_t total_bytes,
                 ProgressSink sink = stderr_sink());
    ~ProgressLine();
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    /// Records the counts; redraws when the last redraw is older than 100 ms.
    void update(std::uint64_t done, std::uint64_t failed, std::uint64_t bytes_read);
    /// Erases the line (before a warning, and at the end). Idempotent.
    void clear();

  private:
    void draw();

    bool enabled_;
    bool shown_ = false;
    std::string label_;
    std::uint64_t total_bytes_;
    std::uint64_t done_ = 0, failed_ = 0, bytes_read_ = 0;
    std::chrono::steady_clock::time_point start_, last_draw_;
    ProgressSink sink_;
};

/// Shows "attn: LABEL... 2.3 s" on stderr once `delay` has passed, updated a few times a
/// second, and erases it when destroyed or stopped. Starts no thread when disabled, so a
/// quick run costs nothing.
class DelayedSpinner {
  public:
    DelayedSpinner(bool enabled,
                   std::string label,
                   std::chrono::milliseconds delay = std::chrono::milliseconds(1000),
                   ProgressSink sink = stderr_sink());
    ~DelayedSpinner();
    DelayedSpinner(const DelayedSpinner&) = delete;
    DelayedSpinner& operator=(const DelayedSpinner&) = delete;

    /// Stops the ticker and erases the line (call before writing to stdout).
    void stop();
    /// Replaces the label (from any thread); the next frame shows it.
    void set_label(std::string label);

  private:
    void run();

    std::string label_;
    std::chrono::steady_clock::time_point start_;
    ProgressSink sink_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

/// A model run's progress on stderr, after each layer (the solver's on_layer): on a
/// terminal the spinner's label (redrawn in place); forced (`--progress`) where stderr is
/// not a terminal, one line per layer ("attn: layer 3 of 16, ..."), for log files; neither
/// with `quiet`. Thread-compatible: the solver calls it from its own thread.
class LayerProgress {
  public:
    LayerProgress(DelayedSpinner* spinner, bool lines, std::uint64_t tokens, ProgressSink sink);
    /// `done` of `total` layers are finished.
    void operator()(std::size_t done, std::size_t total);

  private:
    DelayedSpinner* spinner_;
    bool lines_;
    std::uint64_t tokens_;
    std::chrono::steady_clock::time_point start_;
    ProgressSink sink_;
};

} // namespace attn::cli

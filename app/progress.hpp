// Progress on stderr for long runs: a status line redrawn in place (batch) and a delayed
// spinner (compute). Both draw only when stderr is a terminal and --quiet is off, so they
// never reach pipelines, log files or CI. Nothing here writes to stdout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace attn::app {

/// True when progress may be drawn: stderr is a terminal (isatty), TERM is not "dumb",
/// and `quiet` is false.
bool progress_wanted(bool quiet);

/// The status line of `attn batch`:
///   "attn batch: 1234 done, 2 failed, 812/s, 1.5 s [#######.............] 35%"
/// The bar and percentage appear when the input size is known (a regular file). First drawn
/// once the run has lasted a second (a quick run shows nothing), then redrawn at most every
/// 100 ms; thread-compatible (call from one thread at a time).
class ProgressLine {
  public:
    /// `enabled`: draw at all (see progress_wanted); `total_bytes`: 0 when unknown.
    ProgressLine(bool enabled, std::string label, std::uint64_t total_bytes);
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
};

/// Shows "attn: LABEL... 2.3 s" on stderr once `delay` has passed, updated a few times a
/// second, and erases it when destroyed or stopped. Starts no thread when disabled, so a
/// quick run costs nothing.
class DelayedSpinner {
  public:
    DelayedSpinner(bool enabled,
                   std::string label,
                   std::chrono::milliseconds delay = std::chrono::milliseconds(1000));
    ~DelayedSpinner();
    DelayedSpinner(const DelayedSpinner&) = delete;
    DelayedSpinner& operator=(const DelayedSpinner&) = delete;

    /// Stops the ticker and erases the line (call before writing to stdout).
    void stop();

  private:
    void run();

    std::string label_;
    std::chrono::steady_clock::time_point start_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace attn::app

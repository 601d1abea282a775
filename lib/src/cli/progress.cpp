// Progress on stderr: the batch status line and the delayed compute spinner. Lines are
// redrawn with "\r" and erased with "\r\033[K" (the VT100 erase-to-end-of-line that every
// terminal emulator understands); they are only drawn when stderr is a terminal.
#include "attn/cli/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace attn::cli {

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kFirstDrawAfter = std::chrono::seconds(1); // a quick run never shows one
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);
constexpr int kBarWidth = 20;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string fixed1(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", x);
    return buf;
}

} // namespace

ProgressSink stderr_sink() {
    return [](std::string_view s) {
        std::fwrite(s.data(), 1, s.size(), stderr);
        std::fflush(stderr);
    };
}

std::string progress_line_text(std::string_view label,
                               std::uint64_t done,
                               std::uint64_t failed,
                               double elapsed_seconds,
                               std::uint64_t bytes_read,
                               std::uint64_t total_bytes) {
    // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for a literal + string
    // (cmake/gcc12_false_positives.cmake).
    std::string line = "\r";
    line.append(label).append(": ").append(std::to_string(done)).append(" done");
    if (failed > 0) {
        line += ", " + std::to_string(failed) + " failed";
    }
    if (elapsed_seconds > 0.0) {
        line += ", " +
                std::to_string(
                    static_cast<std::uint64_t>(static_cast<double>(done) / elapsed_seconds)) +
                "/s";
    }
    line += ", " + fixed1(elapsed_seconds) + " s";
    if (total_bytes > 0) {
        const double frac =
            std::min(1.0, static_cast<double>(bytes_read) / static_cast<double>(total_bytes));
        const int filled = static_cast<int>(frac * kBarWidth);
        line += " [" + std::string(static_cast<std::size_t>(filled), '#') +
                std::string(static_cast<std::size_t>(kBarWidth - filled), '.') + "] " +
                std::to_string(static_cast<int>(frac * 100.0)) + "%";
    }
    return line + "\033[K";
}

std::string spinner_text(std::string_view label, std::size_t frame, double elapsed_seconds) {
    static constexpr char frames[] = {'|', '/', '-', '\\'};
    std::string line = "\rattn: ";
    line.append(label).append(1, ' ').append(1, frames[frame % 4]).append(1, ' ');
    return line.append(fixed1(elapsed_seconds)).append(" s\033[K");
}

std::string layer_progress_text(std::size_t done,
                                std::size_t total,
                                std::uint64_t tokens,
                                double elapsed_seconds) {
    std::string text = "layer " + std::to_string(done) + " of " + std::to_string(total) + ", " +
                       std::to_string(tokens) + " tokens";
    if (done > 0 && elapsed_seconds > 0.0) {
        const double per_layer = elapsed_seconds / static_cast<double>(done);
        const double rate = static_cast<double>(tokens) / (per_layer * static_cast<double>(total));
        text += ", " + std::to_string(std::llround(rate)) + " tokens/s, " +
                fixed1(elapsed_seconds) + " s";
        if (done < total) {
            text += ", about " + fixed1(per_layer * static_cast<double>(total - done)) + " s left";
        }
    }
    return text;
}

bool progress_wanted(bool quiet) {
    if (quiet || ::isatty(STDERR_FILENO) == 0) {
        return false;
    }
    const char* term = std::getenv("TERM");
    return term == nullptr || std::strcmp(term, "dumb") != 0;
}

// --- ProgressLine --------------------------------------------------------------------------

ProgressLine::ProgressLine(bool enabled,
                           std::string label,
                           std::uint64_t total_bytes,
                           ProgressSink sink)
    : enabled_(enabled), label_(std::move(label)), total_bytes_(total_bytes), start_(Clock::now()),
      last_draw_(start_), sink_(std::move(sink)) {}

ProgressLine::~ProgressLine() {
    clear();
}

void ProgressLine::update(std::uint64_t done, std::uint64_t failed, std::uint64_t bytes_read) {
    done_ = done;
    failed_ = failed;
    bytes_read_ = bytes_read;
    if (!enabled_) {
        return;
    }
    const auto now = Clock::now();
    if (now - start_ < kFirstDrawAfter || now - last_draw_ < kRedrawEvery) {
        return;
    }
    last_draw_ = now;
    draw();
}

void ProgressLine::draw() {
    sink_(progress_line_text(
        label_, done_, failed_, seconds_since(start_), bytes_read_, total_bytes_));
    shown_ = true;
}

void ProgressLine::clear() {
    if (shown_) {
        sink_(kEraseLine);
        shown_ = false;
    }
}

// --- DelayedSpinner ------------------------------------------------------------------------

DelayedSpinner::DelayedSpinner(bool enabled,
                               std::string label,
                               std::chrono::milliseconds delay,
                               ProgressSink sink)
    : label_(std::move(label)), start_(Clock::now()), sink_(std::move(sink)) {
    if (enabled) {
        thread_ = std::thread([this, delay] {
            {
                std::unique_lock<std::mutex> lock(mutex_);
                if (wake_.wait_for(lock, delay, [this] { return stopping_; })) {
                    return;
                }
            }
            run();
        });
    }
}

DelayedSpinner::~DelayedSpinner() {
    stop();
}

void DelayedSpinner::run() {
    std::size_t frame = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
        sink_(spinner_text(label_, frame, seconds_since(start_)));
        ++frame;
        wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_; });
    }
    sink_(kEraseLine);
}

void DelayedSpinner::set_label(std::string label) {
    const std::lock_guard<std::mutex> lock(mutex_);
    label_ = std::move(label);
}

void DelayedSpinner::stop() {
    if (!thread_.joinable()) {
        return;
    }
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

// --- LayerProgress -------------------------------------------------------------------------

LayerProgress::LayerProgress(DelayedSpinner* spinner,
                             bool lines,
                             std::uint64_t tokens,
                             ProgressSink sink)
    : spinner_(spinner), lines_(lines), tokens_(tokens), start_(Clock::now()),
      sink_(std::move(sink)) {}

void LayerProgress::operator()(std::size_t done, std::size_t total) {
    const std::string text = layer_progress_text(done, total, tokens_, seconds_since(start_));
    if (lines_) {
        sink_("attn: " + text + "\n");
    } else if (spinner_ != nullptr) {
        spinner_->set_label(text);
    }
}

} // namespace attn::cli

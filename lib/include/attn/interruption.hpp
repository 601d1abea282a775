// Stopping a long run from outside, at the points where the library can stop cleanly (the
// start of every parallel_for task, the row blocks of long serial loops): a front end that
// can be interrupted (the Python module: Ctrl-C is KeyboardInterrupt) opens a scope on the
// thread that runs the call; its check runs on that thread, at most once per `every`, and
// every thread working for the call stops at its next point once the check said so.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

namespace attn::detail {

class InterruptionScope {
  public:
    /// `stop` is asked, on the constructing thread only, whether to stop the run; it must
    /// not throw. Scopes nest: the innermost one of a thread is the current one.
    explicit InterruptionScope(std::function<bool()> stop,
                               std::chrono::milliseconds every = std::chrono::milliseconds(50));
    ~InterruptionScope();
    InterruptionScope(const InterruptionScope&) = delete;
    InterruptionScope& operator=(const InterruptionScope&) = delete;
    InterruptionScope(InterruptionScope&&) = delete;
    InterruptionScope& operator=(InterruptionScope&&) = delete;

    /// Whether the check has said to stop (then every point of the call throws).
    bool stopped() const noexcept { return stopped_.load(std::memory_order_acquire); }

  private:
    friend void interruption_point();
    std::function<bool()> stop_;
    std::chrono::steady_clock::duration every_;
    std::chrono::steady_clock::time_point last_;
    std::thread::id owner_;
    std::atomic<bool> stopped_{false};
    InterruptionScope* outer_;
};

/// The scope the calling thread works for (its own, or the one parallel_for handed it),
/// or null.
InterruptionScope* current_interruption_scope() noexcept;

/// Makes `scope` the current one of this thread while it lives (parallel_for's workers
/// work for their caller's scope).
class InterruptionBinding {
  public:
    explicit InterruptionBinding(InterruptionScope* scope) noexcept;
    ~InterruptionBinding();
    InterruptionBinding(const InterruptionBinding&) = delete;
    InterruptionBinding& operator=(const InterruptionBinding&) = delete;
    InterruptionBinding(InterruptionBinding&&) = delete;
    InterruptionBinding& operator=(InterruptionBinding&&) = delete;

  private:
    InterruptionScope* outer_;
};

/// Throws Interrupted when the current scope has stopped, or when its check (run here if
/// this is its thread and `every` has passed) says to stop. Without a scope: nothing (a
/// thread-local load).
void interruption_point();

} // namespace attn::detail

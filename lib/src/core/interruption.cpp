// The current scope is thread-local: a run's own thread holds it, parallel_for's workers
// borrow it for the length of their loop.
#include "attn/interruption.hpp"

#include "attn/error.hpp"

#include <utility>

namespace attn::detail {

namespace {
thread_local InterruptionScope* current_scope = nullptr;
} // namespace

InterruptionScope::InterruptionScope(std::function<bool()> stop, std::chrono::milliseconds every)
    : stop_(std::move(stop)), every_(every), last_(std::chrono::steady_clock::now()),
      owner_(std::this_thread::get_id()), outer_(current_scope) {
    current_scope = this;
}

InterruptionScope::~InterruptionScope() {
    current_scope = outer_;
}

InterruptionScope* current_interruption_scope() noexcept {
    return current_scope;
}

InterruptionBinding::InterruptionBinding(InterruptionScope* scope) noexcept
    : outer_(current_scope) {
    current_scope = scope;
}

InterruptionBinding::~InterruptionBinding() {
    current_scope = outer_;
}

void interruption_point() {
    InterruptionScope* s = current_scope;
    if (s == nullptr) {
        return;
    }
    if (s->stopped()) {
        throw Interrupted();
    }
    if (std::this_thread::get_id() != s->owner_) {
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - s->last_ < s->every_) {
        return;
    }
    s->last_ = now;
    if (s->stop_ && s->stop_()) {
        s->stopped_.store(true, std::memory_order_release);
        throw Interrupted();
    }
}

} // namespace attn::detail

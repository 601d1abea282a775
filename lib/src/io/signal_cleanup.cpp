// Signal cleanup of temp files: SIGINT, SIGTERM and SIGHUP remove the temp files of the
// AtomicWriters in progress, then take their default action.
#include "signal_cleanup.hpp"

#include "attn/io/atomic_file.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <pthread.h>
#include <unistd.h>

namespace attn::io {
namespace detail {
namespace {

/// Temp files in progress, for the signal handlers. A slot is free (0), being filled (1),
/// armed (2) or taken by a handler (3). Writers claim a free slot with a CAS, copy the path
/// and arm it; handlers take armed slots with a CAS and unlink them; writers disarm with a
/// CAS that fails harmlessly when a handler got there first. Lock-free and static: a
/// handler allocates nothing and never waits.
constexpr std::size_t temp_slot_count = 64;
constexpr std::size_t temp_path_max = 4096;
struct TempSlot {
    std::atomic<int> state{0};
    std::array<char, temp_path_max> path{};
};
static_assert(std::atomic<int>::is_always_lock_free);
std::array<TempSlot, temp_slot_count> temp_slots;

constexpr std::array<int, 3> cleanup_signals = {SIGINT, SIGTERM, SIGHUP};

/// The handler: unlink every armed temp file, then let the signal's default action run
/// (SA_RESETHAND restored it on entry; the raised signal is delivered when we return).
void remove_temps_and_reraise(int sig) {
    const int saved_errno = errno;
    for (TempSlot& slot : temp_slots) {
        int expected = 2;
        if (slot.state.compare_exchange_strong(expected, 3)) {
            ::unlink(slot.path.data());
        }
    }
    errno = saved_errno;
    ::raise(sig);
}

} // namespace

int arm_temp(const std::string& path) {
    if (path.size() >= temp_path_max) {
        return -1;
    }
    for (std::size_t i = 0; i < temp_slots.size(); ++i) {
        int expected = 0;
        if (temp_slots[i].state.compare_exchange_strong(expected, 1)) {
            std::memcpy(temp_slots[i].path.data(), path.c_str(), path.size() + 1);
            temp_slots[i].state.store(2, std::memory_order_release);
            return static_cast<int>(i);
        }
    }
    return -1;
}

void disarm_temp(int slot) {
    if (slot >= 0) {
        int expected = 2;
        temp_slots[static_cast<std::size_t>(slot)].state.compare_exchange_strong(expected, 0);
    }
}

CleanupSignalsBlocked::CleanupSignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : cleanup_signals) {
        sigaddset(&set, sig);
    }
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
}

CleanupSignalsBlocked::~CleanupSignalsBlocked() {
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

} // namespace detail

using namespace detail;

void install_signal_cleanup() {
    for (const int sig : cleanup_signals) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) {
            continue; // nohup and friends: stay ignored
        }
        struct sigaction action {};
        action.sa_handler = remove_temps_and_reraise;
        sigemptyset(&action.sa_mask);
        action.sa_flags = static_cast<int>(SA_RESETHAND);
        ::sigaction(sig, &action, nullptr);
    }
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGXFSZ, &ignore, nullptr);
}

} // namespace attn::io

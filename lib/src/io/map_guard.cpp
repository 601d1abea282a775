// The SIGBUS guard of mapped files (see map_guard.hpp). A read of a mapped page past the
// file's end (another process truncated it) raises SIGBUS; for a guarded mapping the
// handler maps a zero page over the faulting one, flags the mapping and returns, so the
// read goes on over zeros and the reader, checking the flag, throws InputError instead of
// trusting them. Any other SIGBUS gets the action that was there before. Not a jump out of
// the reading code (no destructors skipped): readers only have to check the flag.
#include "map_guard.hpp"

#include <array>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace attn::io::detail {
namespace {

/// A slot is free (0), being filled (1) or armed (2); the handler reads armed slots only.
struct MapSlot {
    std::atomic<int> state{0};
    std::atomic<std::uintptr_t> begin{0};
    std::atomic<std::uintptr_t> end{0};
    std::atomic<bool> faulted{false};
};
static_assert(std::atomic<std::uintptr_t>::is_always_lock_free);
constexpr std::size_t map_slot_count = 256;
std::array<MapSlot, map_slot_count> map_slots;

struct sigaction previous_action {};
std::uintptr_t page_size = 4096;

/// The handler: a zero page over a guarded mapping's faulting page, else the previous
/// action (restored here; the faulting instruction runs again and faults into it).
void on_sigbus(int sig, siginfo_t* info, void* /*context*/) {
    const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (MapSlot& slot : map_slots) {
        if (slot.state.load(std::memory_order_acquire) != 2 ||
            addr < slot.begin.load(std::memory_order_relaxed) ||
            addr >= slot.end.load(std::memory_order_relaxed)) {
            continue;
        }
        const std::uintptr_t page = addr & ~(page_size - 1);
        // NOLINTNEXTLINE(performance-no-int-to-ptr): the faulting page of our own mapping
        void* p = ::mmap(reinterpret_cast<void*>(page),
                         page_size,
                         PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                         -1,
                         0);
        if (p != MAP_FAILED) {
            slot.faulted.store(true, std::memory_order_release);
            return;
        }
        break;
    }
    ::sigaction(SIGBUS, &previous_action, nullptr);
    if (info->si_code <= 0) { // sent (kill, raise), not a fault: nothing runs again
        ::raise(sig);
    }
}

void install_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (const long size = ::sysconf(_SC_PAGESIZE); size > 0) {
            page_size = static_cast<std::uintptr_t>(size);
        }
        struct sigaction action {};
        action.sa_sigaction = on_sigbus;
        action.sa_flags = SA_SIGINFO;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGBUS, &action, &previous_action);
    });
}

} // namespace

int guard_mapping(const void* begin, std::size_t size) {
    install_handler();
    const auto first = reinterpret_cast<std::uintptr_t>(begin);
    for (std::size_t i = 0; i < map_slots.size(); ++i) {
        MapSlot& slot = map_slots[i];
        int expected = 0;
        if (slot.state.compare_exchange_strong(expected, 1)) {
            slot.begin.store(first, std::memory_order_relaxed);
            slot.end.store(first + size, std::memory_order_relaxed);
            slot.faulted.store(false, std::memory_order_relaxed);
            slot.state.store(2, std::memory_order_release);
            return static_cast<int>(i);
        }
    }
    return -1;
}

void unguard_mapping(int slot) {
    if (slot >= 0) {
        map_slots[static_cast<std::size_t>(slot)].state.store(0, std::memory_order_release);
    }
}

bool mapping_faulted(int slot) {
    return slot >= 0 &&
           map_slots[static_cast<std::size_t>(slot)].faulted.load(std::memory_order_acquire);
}

} // namespace attn::io::detail

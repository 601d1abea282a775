// The registry of temp files in progress that the signal handlers of
// install_signal_cleanup() remove (shared by AtomicWriter and the handlers).
#pragma once

#include <csignal>
#include <string>

namespace attn::io::detail {

/// Registers `path` for the signal handlers; returns its slot, or -1 when the path is too
/// long or every slot is taken (the file is then only removed by the normal error paths).
int arm_temp(const std::string& path);

/// Unregisters a slot from arm_temp (-1: nothing).
void disarm_temp(int slot);

/// Blocks the cleanup signals in this thread while a temp file is created or renamed and
/// its registration changes, so that a handler never sees a file without its slot.
class CleanupSignalsBlocked {
  public:
    CleanupSignalsBlocked();
    CleanupSignalsBlocked(const CleanupSignalsBlocked&) = delete;
    CleanupSignalsBlocked& operator=(const CleanupSignalsBlocked&) = delete;
    ~CleanupSignalsBlocked();

  private:
    sigset_t old_{};
};

} // namespace attn::io::detail

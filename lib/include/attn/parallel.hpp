// A fork-join loop over independent tasks, for the core's kernels and the layers above
// (the HTML view's panels). Tasks are claimed from an atomic counter; which thread runs a
// task never changes what it computes, so results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <functional>

namespace attn::detail {

/// The thread count to use: `requested`, or all hardware threads when 0, capped at
/// `tasks` (and at least 1).
unsigned resolve_threads(unsigned requested, std::size_t tasks);

/// Runs body(worker, task) for every task in [0, tasks) on `threads` threads (the calling
/// thread is worker 0). `worker` is in [0, threads), for per-thread scratch space.
void parallel_for(std::size_t tasks,
                  unsigned threads,
                  const std::function<void(unsigned worker, std::size_t task)>& body);

} // namespace attn::detail

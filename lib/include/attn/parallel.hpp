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
/// thread is worker 0). `worker` is in [0, threads), for per-thread scratch space. Each task
/// starts at an interruption point of the caller's scope (attn/interruption.hpp): once it
/// stops, no task starts and Interrupted is rethrown here.
void parallel_for(std::size_t tasks,
                  unsigned threads,
                  const std::function<void(unsigned worker, std::size_t task)>& body);

/// body(begin, end) for the chunks [0, chunk), [chunk, 2·chunk), ... of [0, items), as
/// parallel_for tasks: for the element- and row-wise stages of a model (norms, activations,
/// RoPE, residual sums), whose chunks are fixed by `items` and `chunk` alone.
void parallel_chunks(std::size_t items,
                     std::size_t chunk,
                     unsigned threads,
                     const std::function<void(std::size_t begin, std::size_t end)>& body);

/// Rows per chunk for a row-wise stage of `row_items` items a row: about 16 Ki items a
/// chunk (enough work to pay for a task, small enough to share the rows evenly).
std::size_t rows_per_chunk(std::size_t row_items);

} // namespace attn::detail

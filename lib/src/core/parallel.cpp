// std::thread fork-join; an exception in a task is rethrown on the calling thread. Every
// task starts at an interruption point of the caller's scope (attn/interruption.hpp).
#include "parallel.hpp"

#include "attn/interruption.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace attn::detail {

unsigned resolve_threads(unsigned requested, std::size_t tasks) {
    unsigned n = requested != 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
    if (tasks < n) {
        n = static_cast<unsigned>(std::max<std::size_t>(tasks, 1));
    }
    return n;
}

void parallel_for(std::size_t tasks,
                  unsigned threads,
                  const std::function<void(unsigned worker, std::size_t task)>& body) {
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    InterruptionScope* scope = current_interruption_scope();
    auto work = [&](unsigned worker) {
        const InterruptionBinding bound(scope);
        try {
            for (std::size_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1)) {
                interruption_point();
                body(worker, t);
            }
        } catch (...) {
            const std::lock_guard<std::mutex> lock(failure_mutex);
            if (!failure) {
                failure = std::current_exception();
            }
            next.store(tasks);
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(threads > 0 ? threads - 1 : 0);
    for (unsigned w = 1; w < threads; ++w) {
        pool.emplace_back(work, w);
    }
    work(0);
    for (auto& t : pool) {
        t.join();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
}

void parallel_chunks(std::size_t items,
                     std::size_t chunk,
                     unsigned threads,
                     const std::function<void(std::size_t begin, std::size_t end)>& body) {
    chunk = std::max<std::size_t>(chunk, 1);
    const std::size_t chunks = (items + chunk - 1) / chunk;
    parallel_for(chunks, resolve_threads(threads, chunks), [&](unsigned, std::size_t c) {
        body(c * chunk, std::min(items, (c + 1) * chunk));
    });
}

std::size_t rows_per_chunk(std::size_t row_items) {
    constexpr std::size_t kChunkItems = 16384;
    return std::max<std::size_t>(1, kChunkItems / std::max<std::size_t>(row_items, 1));
}

} // namespace attn::detail

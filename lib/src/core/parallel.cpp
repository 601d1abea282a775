// std::thread fork-join; an exception in a task is rethrown on the calling thread.
#include "parallel.hpp"

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
    auto work = [&](unsigned worker) {
        try {
            for (std::size_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1)) {
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

} // namespace attn::detail

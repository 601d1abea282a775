// Fewer page faults for large buffers: transparent huge pages for those written once (a
// kernel's output, a decoded input: the first writes fault once per 2 MiB instead of once
// per 4 KiB), and freed memory kept for the next buffer (keep_freed_memory).
#pragma once

#include "attn/tensor.hpp"

#include <cstddef>
#include <cstdint>

namespace attn {

/// The system's memory page size (4 KiB on x86-64; 16 or 64 KiB on some arm64 kernels).
std::uintptr_t page_size();

/// The whole pages of [address, address + bytes): {first, end} with first rounded up and end
/// rounded down to a page; first == end when no whole page lies inside. What madvise() may
/// be given for a buffer without touching its neighbours.
struct PageRange {
    std::uintptr_t first;
    std::uintptr_t end;
};
PageRange whole_pages(std::uintptr_t address, std::size_t bytes, std::uintptr_t page = page_size());

/// Asks Linux to back a large buffer that nothing has written yet with transparent huge
/// pages (2 MiB) where it allows them (THP "madvise" or "always"): the first writes then
/// fault once per 2 MiB instead of once per 4 KiB (an L = 4096, H = 8, D = 64 input is
/// 2,048 faults otherwise). Only the buffer's own whole pages are advised; buffers under
/// 4 MiB and other systems are left alone. A hint: nothing fails when it is refused.
void advise_huge_pages(const void* data, std::size_t bytes);

/// Keeps the memory that freed buffers held inside the process for the next allocations
/// (glibc: no mmap per large allocation and no trimming of the heap's top below 2 GiB), so a
/// model run's per-layer tensors of the same sizes reuse pages already faulted in instead of
/// faulting fresh zeroed pages every layer: on a virtual machine a fault costs microseconds
/// (a Llama-3.2-1B-shaped Q4_0 run at 512 tokens spent 3 s of 15 in the kernel before it).
/// The peak resident size is unchanged; what is freed is not given back before exit. A
/// process-wide choice, so a front end makes it once at start (the CLI does; the Python
/// module leaves its host's allocator alone); the library never calls it. Elsewhere a no-op.
void keep_freed_memory();

/// A tensor of `shape` whose values are left for the caller to write (no zero fill), its
/// storage advised as above: what a kernel's output or a decoded input is allocated as.
template <class T> BasicTensor<T> uninitialized_tensor(const Shape& shape) {
    auto t = BasicTensor<T>::from_shape(shape);
    advise_huge_pages(t.data(), t.size() * sizeof(T));
    return t;
}

} // namespace attn

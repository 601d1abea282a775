// advise_huge_pages: transparent huge pages for large buffers written once (tensor.hpp);
// keep_freed_memory: freed memory reused rather than given back (huge_pages.hpp).
#include "attn/huge_pages.hpp"

#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <limits>
#include <unistd.h>

namespace attn {

namespace {

constexpr std::size_t kLargeBuffer = std::size_t{4} << 20; // 4 MiB

} // namespace

std::uintptr_t page_size() {
    static const std::uintptr_t size = [] {
        const long n = ::sysconf(_SC_PAGESIZE);
        return n > 0 ? static_cast<std::uintptr_t>(n) : std::uintptr_t{4096};
    }();
    return size;
}

PageRange whole_pages(std::uintptr_t address, std::size_t bytes, std::uintptr_t page) {
    const std::uintptr_t first = (address + page - 1) & ~(page - 1);
    const std::uintptr_t end = (address + bytes) & ~(page - 1);
    return first < end ? PageRange{first, end} : PageRange{first, first};
}

void advise_huge_pages(const void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (data == nullptr || bytes < kLargeBuffer) {
        return;
    }
    const PageRange pages = whole_pages(reinterpret_cast<std::uintptr_t>(data), bytes);
    // A hint: EINVAL (THP not built in) or any other refusal leaves 4 KiB pages.
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the page-aligned start of `data`'s buffer
    ::madvise(reinterpret_cast<void*>(pages.first), pages.end - pages.first, MADV_HUGEPAGE);
#else
    (void)data;
    (void)bytes;
#endif
}

void keep_freed_memory() {
#ifdef __GLIBC__
    // Every allocation from the heap (none mapped on its own, so none unmapped when freed,
    // and glibc still maps when the heap cannot grow), the heap's top kept when freed.
    ::mallopt(M_MMAP_MAX, 0);
    ::mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

} // namespace attn

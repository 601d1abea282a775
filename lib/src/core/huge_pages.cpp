// advise_huge_pages: transparent huge pages for large buffers written once (tensor.hpp).
#include "attn/huge_pages.hpp"

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace attn {

namespace {

constexpr std::uintptr_t kPage = 4096;
constexpr std::size_t kLargeBuffer = std::size_t{4} << 20; // 4 MiB

} // namespace

PageRange whole_pages(std::uintptr_t address, std::size_t bytes) {
    const std::uintptr_t first = (address + kPage - 1) & ~(kPage - 1);
    const std::uintptr_t end = (address + bytes) & ~(kPage - 1);
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

} // namespace attn

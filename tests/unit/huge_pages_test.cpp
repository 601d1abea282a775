// advise_huge_pages and whole_pages (attn/huge_pages.hpp): the advised range is exactly the
// buffer's own whole pages, and advising never changes what a buffer holds;
// keep_freed_memory: a large buffer is no mapping of its own, so freeing it keeps its pages.
#include "attn/huge_pages.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <gtest/gtest.h>
#include <numeric>
#include <vector>

namespace attn {
namespace {

constexpr std::uintptr_t kPage = 4096;

TEST(HugePages, WholePagesRoundInward) {
    // An unaligned 8 MiB buffer: its first partial page and its last partial page are left out.
    const PageRange r = whole_pages(10 * kPage + 16, std::size_t{8} << 20, kPage);
    EXPECT_EQ(r.first, 11 * kPage);
    EXPECT_EQ(r.end, (10 + 2048) * kPage);
    // Aligned on both ends: all of it.
    const PageRange a = whole_pages(kPage, 2 * kPage, kPage);
    EXPECT_EQ(a.first, kPage);
    EXPECT_EQ(a.end, 3 * kPage);
    // Ends one byte short of a page: that page is not whole.
    const PageRange s = whole_pages(kPage, 2 * kPage - 1, kPage);
    EXPECT_EQ(s.first, kPage);
    EXPECT_EQ(s.end, 2 * kPage);
}

TEST(HugePages, NoWholePageIsAnEmptyRange) {
    const PageRange inside = whole_pages(kPage + 1, kPage - 2, kPage);
    EXPECT_EQ(inside.first, inside.end);
    const PageRange straddling = whole_pages(kPage + 100, kPage, kPage);
    EXPECT_EQ(straddling.first, straddling.end);
    const PageRange none = whole_pages(5 * kPage, 0, kPage);
    EXPECT_EQ(none.first, none.end);
}

TEST(HugePages, AdvisingKeepsTheValues) {
    // Written before the advice, at an offset that is not page-aligned: every value stays.
    std::vector<float> buf((std::size_t{8} << 20) / sizeof(float) + 1000);
    std::iota(buf.begin(), buf.end(), 0.0f);
    advise_huge_pages(buf.data() + 3, (buf.size() - 3) * sizeof(float));
    advise_huge_pages(nullptr, std::size_t{1} << 30);
    advise_huge_pages(buf.data(), 100);
    for (std::size_t i = 0; i < buf.size(); i += 997) {
        ASSERT_EQ(buf[i], static_cast<float>(i)) << i;
    }
    EXPECT_EQ(buf.back(), static_cast<float>(buf.size() - 1));
}

TEST(HugePages, UninitializedTensorHasItsShape) {
    auto t = uninitialized_tensor<float>({1, 8, 1024, 256}); // 8 MiB: advised
    ASSERT_EQ(t.size(), std::size_t{8} * 1024 * 256);
    std::fill(t.begin(), t.end(), 2.5f);
    EXPECT_EQ(t(0, 7, 1023, 255), 2.5f);
    auto small = uninitialized_tensor<double>({2, 1, 3, 1}); // under 4 MiB: left alone
    EXPECT_EQ(small.shape()[2], 3u);
}

// glibc's own allocator only: AddressSanitizer's replaces it (mallinfo2 says nothing there).
#if defined(__SANITIZE_ADDRESS__)
#define ATTN_HUGE_PAGES_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_HUGE_PAGES_TEST_ASAN 1
#endif
#endif
#if defined(__GLIBC__) && !defined(ATTN_HUGE_PAGES_TEST_ASAN)
TEST(HugePages, FreedMemoryIsKept) {
    // glibc maps a 64 MiB allocation on its own (one more mmapped block, unmapped when
    // freed) until keep_freed_memory(); then it comes from the heap (no mmapped block).
    // Process-wide, as in the CLI: the other tests run the same either way.
    constexpr std::size_t kBig = std::size_t{64} << 20;
    keep_freed_memory();
    const std::size_t before = mallinfo2().hblks;
    void* p = std::malloc(kBig);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(mallinfo2().hblks, before);
    std::free(p);
}
#endif

} // namespace
} // namespace attn

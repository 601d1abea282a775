// AlignedVector (attn/aligned.hpp): the packed operands of the stored-type products start
// on a cache line whatever their size, also past glibc's mmap threshold (128 KiB), where
// std::allocator's blocks start 16 bytes past a page, and after the vector grows.
#include "attn/aligned.hpp"

#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <vector>

namespace {

template <class T> bool on_a_line(const attn::AlignedVector<T>& v) {
    return reinterpret_cast<std::uintptr_t>(v.data()) % attn::kCacheLine == 0;
}

template <class T> void check_sizes() {
    // From one element to 4 MiB: small blocks from the heap, large ones from mmap.
    for (const std::size_t n : {std::size_t{1},
                                std::size_t{3},
                                std::size_t{17},
                                std::size_t{1000},
                                std::size_t{70000},
                                std::size_t{1} << 22U}) {
        attn::AlignedVector<T> v(n);
        EXPECT_TRUE(on_a_line(v)) << n << " elements of " << sizeof(T) << " bytes";
        v.resize(2 * n + 5); // grows: a new block
        EXPECT_TRUE(on_a_line(v)) << "grown to " << v.size();
        v.assign(3 * n + 1, T{});
        EXPECT_TRUE(on_a_line(v)) << "assigned " << v.size();
        const attn::AlignedVector<T> copy = v;
        EXPECT_TRUE(on_a_line(copy)) << "a copy of " << v.size();
    }
}

TEST(AlignedVector, StartsOnACacheLineAtEverySize) {
    check_sizes<float>();
    check_sizes<std::uint8_t>();
    check_sizes<std::uint32_t>();
    check_sizes<std::int32_t>();
}

TEST(AlignedVector, EveryThreadsBufferStartsOnALine) {
    // As the products hold them: one per thread, resized inside the task.
    std::vector<attn::AlignedVector<float>> per_thread(3);
    for (auto& buffer : per_thread) {
        buffer.resize(std::size_t{64} * 1024);
        EXPECT_TRUE(on_a_line(buffer));
    }
}

} // namespace

// "-" as stdin (attn/io/stdin_read.hpp): a stream read whole, within the memory limit.
#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/stdin_read.hpp"
#include "unit/test_files.hpp"
#include "unit/test_util.hpp"

#include <cstdio>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

namespace attn::io {
namespace {

using namespace attn::testing;

/// A temporary stream holding `size` bytes 0, 1, 2, ... (mod 251), rewound.
std::unique_ptr<std::FILE, int (*)(std::FILE*)> stream_of(std::size_t size) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::tmpfile(), &std::fclose);
    for (std::size_t i = 0; i < size; ++i) {
        std::fputc(static_cast<int>(i % 251), f.get());
    }
    std::rewind(f.get());
    return f;
}

TEST(ReadStream, AllOfItAcrossBuffers) {
    for (const std::size_t size : {std::size_t{0},
                                   std::size_t{1},
                                   std::size_t{65536},
                                   std::size_t{65537},
                                   std::size_t{200000}}) {
        const auto f = stream_of(size);
        const std::vector<std::uint8_t> got = read_stream(f.get(), "--query");
        ASSERT_EQ(got.size(), size);
        for (std::size_t i = 0; i < size; i += 977) {
            EXPECT_EQ(got[i], i % 251) << i;
        }
    }
}

TEST(ReadStream, MoreThanTheMemoryLimit) {
    const ScopedLimit limit(1000);
    const auto f = stream_of(1001);
    EXPECT_EQ(message_of([&] { read_stream(f.get(), "PROBLEM"); }),
              "PROBLEM: <stdin>: more than the memory limit of " + format_size(1000) +
                  " (--max-memory)");
    const auto fits = stream_of(1000);
    EXPECT_EQ(read_stream(fits.get(), "PROBLEM").size(), 1000U);
}

} // namespace
} // namespace attn::io

// io::MappedFile when the file shrinks under the mapping (#39): reading past the new end
// raises SIGBUS, which the guard turns into zero pages and check_unchanged() into an
// InputError naming the file; a SIGBUS anywhere else keeps its default action.
#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "test_files.hpp"

#include <csignal>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>

namespace attn {
namespace {

using MappedFileTest = testing::TempDirTest;

TEST_F(MappedFileTest, ReadsOfAFileTruncatedWhileMappedAreZerosAndReported) {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const auto path = write("cut.bin", std::string(4 * page, 'x'));
    const io::MappedFile file(path);
    EXPECT_NO_THROW(file.check_unchanged());
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(page)), 0);
    const auto bytes = file.bytes();
    EXPECT_EQ(bytes[page - 1], 'x'); // before the new end: the file's
    EXPECT_NO_THROW(file.check_unchanged());
    std::size_t sum = 0;
    for (std::size_t i = page; i < bytes.size(); i += 512) { // faults, page by page
        sum += bytes[i];
    }
    EXPECT_EQ(sum, 0u);
    testing::expect_error_message<InputError>(
        [&] { file.check_unchanged(); }, path.string(), ": changed while it was being read");
}

TEST_F(MappedFileTest, AnotherFileMappedStaysUnchanged) {
    const auto a = write("a.bin", std::string(8192, 'a'));
    const auto b = write("b.bin", std::string(8192, 'b'));
    const io::MappedFile fa(a);
    const io::MappedFile fb(b);
    ASSERT_EQ(::truncate(a.c_str(), 0), 0);
    EXPECT_EQ(fa.bytes()[4096], 0);
    EXPECT_THROW(fa.check_unchanged(), InputError);
    EXPECT_NO_THROW(fb.check_unchanged());
    EXPECT_EQ(fb.bytes()[4096], 'b');
}

TEST(MappedFileDeathTest, ASigbusOutsideAMappingKeepsItsDefaultAction) {
    { const io::MappedFile installs_the_handler(std::filesystem::path("/proc/self/exe")); }
#if defined(__SANITIZE_ADDRESS__)
    constexpr bool kAsan = true;
#elif defined(__has_feature)
    constexpr bool kAsan = __has_feature(address_sanitizer);
#else
    constexpr bool kAsan = false;
#endif
    if (kAsan) {
        // The action before ours is ASan's: it reports the SIGBUS and exits 1.
        EXPECT_DEATH(::raise(SIGBUS), "AddressSanitizer: BUS");
    } else {
        EXPECT_EXIT(::raise(SIGBUS), ::testing::KilledBySignal(SIGBUS), "");
    }
}

} // namespace
} // namespace attn

// Tests of write_file_atomic: content lands whole, an existing file is replaced only by a
// complete new one, failures throw SystemError and leave neither a temp file nor a changed
// target. Failures are provoked without root-sensitive permission tricks: missing folders,
// RLIMIT_FSIZE (EFBIG mid-write) and /dev/full (ENOSPC). AtomicWriter's write_at (blocks
// from threads, in any order; a failure is commit()'s).
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "unit/test_files.hpp"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <span>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;
using attn::SystemError;
using attn::io::write_file_atomic;

/// The whole file (an independent reader: not attn::io::read_file).
std::string slurp(const fs::path& path) {
    std::string out(fs::file_size(path), '\0');
    std::ifstream in(path, std::ios::binary);
    in.read(out.data(), static_cast<std::streamsize>(out.size()));
    EXPECT_EQ(static_cast<std::size_t>(in.gcount()), out.size()) << path;
    return out;
}

/// The names in a folder, sorted.
std::vector<std::string> listing(const fs::path& dir) {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
        names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

/// Runs `write` and expects a one-line SystemError "PATH: cannot write: ..." containing
/// `needle`. Returns the message.
template <class F>
std::string expect_write_error(F write, const std::string& path, std::string_view needle) {
    return attn::testing::expect_error_message<SystemError>(
        write, path + ": cannot write: ", needle);
}

class AtomicFile : public attn::testing::TempDirTest {};

TEST_F(AtomicFile, WritesBytesAndText) {
    const std::vector<std::uint8_t> bytes = {0, 1, 2, 0xff, '\n', 0};
    write_file_atomic(dir_ / "a.npy", bytes);
    EXPECT_EQ(slurp(dir_ / "a.npy"), std::string("\0\1\2\xff\n\0", 6));
    write_file_atomic(dir_ / "b.json", std::string_view("[1,2]\n"));
    EXPECT_EQ(slurp(dir_ / "b.json"), "[1,2]\n");
    EXPECT_EQ(listing(dir_), (std::vector<std::string>{"a.npy", "b.json"})); // no temp files
}

TEST_F(AtomicFile, EmptyAndLargeContent) {
    write_file_atomic(dir_ / "empty", std::string_view());
    EXPECT_TRUE(fs::exists(dir_ / "empty"));
    EXPECT_EQ(fs::file_size(dir_ / "empty"), 0U);
    std::string big(8u << 20, 'x');
    for (std::size_t i = 0; i < big.size(); i += 4093) {
        big[i] = static_cast<char>('a' + i % 26);
    }
    write_file_atomic(dir_ / "big", big);
    EXPECT_EQ(slurp(dir_ / "big"), big);
}

TEST_F(AtomicFile, ReplacesExistingContentWhole) {
    const fs::path path = dir_ / "out.json";
    write_file_atomic(path, std::string_view("a much longer first version of the file"));
    write_file_atomic(path, std::string_view("short"));
    EXPECT_EQ(slurp(path), "short");
    EXPECT_EQ(listing(dir_), std::vector<std::string>{"out.json"});
}

TEST_F(AtomicFile, RelativePathInTheWorkingFolder) {
    const fs::path before = fs::current_path();
    fs::current_path(dir_);
    write_file_atomic("rel.json", std::string_view("[]"));
    fs::current_path(before);
    EXPECT_EQ(slurp(dir_ / "rel.json"), "[]");
    EXPECT_EQ(listing(dir_), std::vector<std::string>{"rel.json"});
}

TEST_F(AtomicFile, WritesThroughSymlinks) {
    fs::create_directory(dir_ / "real");
    write_file_atomic(dir_ / "real" / "out.json", std::string_view("old"));
    fs::create_symlink(dir_ / "real" / "out.json", dir_ / "link.json");
    write_file_atomic(dir_ / "link.json", std::string_view("new"));
    EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
    EXPECT_EQ(slurp(dir_ / "real" / "out.json"), "new");
    EXPECT_EQ(listing(dir_ / "real"), std::vector<std::string>{"out.json"});
}

TEST_F(AtomicFile, LongFileNames) {
    const std::string name = std::string(250, 'n') + ".npy"; // 254: just within NAME_MAX
    write_file_atomic(dir_ / name, std::string_view("x"));
    EXPECT_EQ(slurp(dir_ / name), "x");
    EXPECT_EQ(listing(dir_), std::vector<std::string>{name});
}

TEST_F(AtomicFile, ModeFollowsTheUmask) {
    const mode_t old = ::umask(027);
    write_file_atomic(dir_ / "m.npy", std::string_view("x"));
    ::umask(022);
    write_file_atomic(dir_ / "n.npy", std::string_view("x"));
    ::umask(old);
    struct stat st {};
    ASSERT_EQ(::stat((dir_ / "m.npy").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0640U);
    ASSERT_EQ(::stat((dir_ / "n.npy").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644U);
}

TEST_F(AtomicFile, MissingFolderThrowsAndLeavesNothing) {
    const fs::path path = dir_ / "that/does/not/exist/x.npy";
    expect_write_error([&] { write_file_atomic(path, std::string_view("data")); },
                       path.string(),
                       "No such file or directory");
    EXPECT_TRUE(listing(dir_).empty());
}

TEST_F(AtomicFile, DirectoryTargetThrowsAndIsUntouched) {
    fs::create_directory(dir_ / "out.npy");
    std::ofstream(dir_ / "out.npy" / "inside") << "keep";
    expect_write_error([&] { write_file_atomic(dir_ / "out.npy", std::string_view("data")); },
                       (dir_ / "out.npy").string(),
                       "Is a directory");
    const std::string with_slash = (dir_ / "new").string() + "/";
    expect_write_error([&] { write_file_atomic(with_slash, std::string_view("data")); },
                       with_slash,
                       "Is a directory");
    EXPECT_EQ(slurp(dir_ / "out.npy" / "inside"), "keep");
    EXPECT_EQ(listing(dir_), std::vector<std::string>{"out.npy"});
}

TEST_F(AtomicFile, FailedWriteKeepsTheOldFileAndRemovesTheTemp) {
    // RLIMIT_FSIZE makes write() fail with EFBIG part-way through (root cannot bypass it);
    // SIGXFSZ is ignored so the failure comes back as an error, not a signal.
    const fs::path path = dir_ / "out.npy";
    write_file_atomic(path, std::string_view("old content"));

    struct rlimit old_limit {};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
    struct rlimit small = old_limit;
    small.rlim_cur = 4096;
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    const std::string big(1u << 20, 'n');
    std::string message;
    try {
        write_file_atomic(path, big);
    } catch (const SystemError& e) {
        message = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    std::signal(SIGXFSZ, old_handler);

    EXPECT_EQ(message, path.string() + ": cannot write: File too large");
    EXPECT_EQ(slurp(path), "old content");
    EXPECT_EQ(listing(dir_), std::vector<std::string>{"out.npy"});
}

TEST_F(AtomicFile, WriteAtFromThreadsInAnyOrder) {
    // An unnamed temp (O_TMPFILE where the file system has it): nothing shows before commit.
    const fs::path path = dir_ / "out.bin";
    attn::io::AtomicWriter out(path, true);
    constexpr std::size_t block = 4096 + 3, blocks = 64;
    out.reserve(block * blocks);
    std::vector<std::uint8_t> want(block * blocks);
    for (std::size_t i = 0; i < want.size(); ++i) {
        want[i] = static_cast<std::uint8_t>(i * 7 + i / block);
    }
    auto half = [&](std::size_t parity) {
        for (std::size_t b = blocks; b-- > 0;) {
            if (b % 2 == parity) {
                out.write_at(b * block, std::span(want).subspan(b * block, block));
            }
        }
    };
    std::thread other(half, 1);
    half(0);
    other.join();
    EXPECT_FALSE(fs::exists(path));
    out.commit();
    EXPECT_EQ(slurp(path), std::string(want.begin(), want.end()));
    EXPECT_EQ(listing(dir_), std::vector<std::string>{"out.bin"});
}

TEST_F(AtomicFile, FailedWriteAtFailsTheCommit) {
    // write_at() never throws: its EFBIG (past RLIMIT_FSIZE) is commit()'s, which removes
    // the temp file and leaves the old one.
    const fs::path path = dir_ / "out.npy";
    write_file_atomic(path, std::string_view("old content"));
    std::string message;
    {
        attn::io::AtomicWriter out(path, true);
        out.reserve(100);
        struct rlimit old_limit {};
        ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
        struct rlimit small = old_limit;
        small.rlim_cur = 4096;
        const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
        const std::vector<std::uint8_t> bytes(8192, 'n');
        out.write_at(0, bytes);
        out.write_at(0, std::span(bytes).first(10)); // after a failure: nothing more
        ::setrlimit(RLIMIT_FSIZE, &old_limit);
        std::signal(SIGXFSZ, old_handler);
        try {
            out.commit();
        } catch (const SystemError& e) {
            message = e.what();
        }
    }
    EXPECT_EQ(message, path.string() + ": cannot write: File too large");
    EXPECT_EQ(slurp(path), "old content");
    EXPECT_EQ(listing(dir_), std::vector<std::string>{"out.npy"});
}

TEST_F(AtomicFile, DiskFullIsASystemError) {
    if (!fs::exists("/dev/full")) {
        GTEST_SKIP() << "no /dev/full";
    }
    // Devices are written in place (a rename cannot replace them): ENOSPC surfaces.
    expect_write_error([] { write_file_atomic("/dev/full", std::string_view("data")); },
                       "/dev/full",
                       "No space left on device");
}

TEST_F(AtomicFile, DevicesAreWrittenInPlace) {
    if (!fs::exists("/dev/null")) {
        GTEST_SKIP() << "no /dev/null";
    }
    write_file_atomic("/dev/null", std::string_view("discarded"));
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(AtomicFile, DashWritesToStdout) {
    ::testing::internal::CaptureStdout();
    write_file_atomic("-", std::string_view("{\"output\": []}\n"));
    EXPECT_EQ(::testing::internal::GetCapturedStdout(), "{\"output\": []}\n");
    EXPECT_FALSE(fs::exists("-"));
}

} // namespace

// Shared helpers of the unit tests of readers and writers: bytes from text, a fresh temp
// folder per test (TempDirTest), and the check of a one-line error message's start and
// content (expect_error_message), bit-exact floats (expect_same_float) and a scoped memory
// limit (ScopedLimit), the files of tests/unit/fixtures/ (fixture_bytes, fixture_json).
// Numeric helpers live in test_util.hpp.
#pragma once

#include "attn/io/limits.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace attn::testing {

inline std::vector<std::uint8_t> bytes_of(std::string_view text) {
    return {text.begin(), text.end()};
}

/// Same float, bit for bit (any NaN matches any NaN).
inline void expect_same_float(float actual, float expected, std::size_t index) {
    if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(actual)) << "at " << index << ": " << actual;
    } else {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(actual), std::bit_cast<std::uint32_t>(expected))
            << "at " << index << ": got " << actual << ", want " << expected;
    }
}

/// tests/unit/fixtures/gguf/NAME: the GGUF files gguf_fixtures.py and its siblings wrote.
inline std::filesystem::path gguf_fixture(const std::string& name) {
    return std::filesystem::path(ATTN_SOURCE_DIR) / "tests" / "unit" / "fixtures" / "gguf" / name;
}

/// The bytes of tests/unit/fixtures/NAME: files numpy wrote (npy_fixtures.py,
/// npz_fixtures.py) and what numpy says of them.
inline std::vector<std::uint8_t> fixture_bytes(const std::string& name) {
    const std::filesystem::path path =
        std::filesystem::path(ATTN_SOURCE_DIR) / "tests" / "unit" / "fixtures" / name;
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << "missing fixture " << path;
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// tests/unit/fixtures/NAME parsed as JSON.
inline nlohmann::json fixture_json(const std::string& name) {
    const std::vector<std::uint8_t> bytes = fixture_bytes(name);
    return nlohmann::json::parse(bytes.begin(), bytes.end());
}

/// The memory limit set to `bytes` for the scope, then restored.
class ScopedLimit {
  public:
    explicit ScopedLimit(std::uint64_t bytes) : old_(io::memory_limit()) {
        io::set_memory_limit(bytes);
    }
    ScopedLimit(const ScopedLimit&) = delete;
    ScopedLimit& operator=(const ScopedLimit&) = delete;
    ~ScopedLimit() { io::set_memory_limit(old_); }

  private:
    std::uint64_t old_;
};

/// A fixture with a fresh folder per test, <temp>/attn_<suite>_<pid>_<test>, removed after
/// the test; write() puts a file in it.
class TempDirTest : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = std::filesystem::temp_directory_path() /
               ("attn_" + std::string(info->test_suite_name()) + "_" + std::to_string(::getpid()) +
                "_" + info->name());
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    /// Writes `bytes` as dir_/name and returns its path.
    std::filesystem::path write(const std::string& name, std::string_view bytes) const {
        std::filesystem::path path = dir_ / name;
        std::ofstream(path, std::ios::binary) << bytes;
        return path;
    }
    std::filesystem::path write(const std::string& name,
                                const std::vector<std::uint8_t>& bytes) const {
        return write(name,
                     std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    }

    std::filesystem::path dir_;
};

/// Runs f, which must throw an E whose message is one line, starts with `start` and contains
/// `needle`; any other outcome is a test failure. Returns the message ("" when none).
template <class E, class F>
std::string expect_error_message(F&& f, std::string_view start, std::string_view needle) {
    std::string message;
    try {
        f();
        ADD_FAILURE() << "no exception; wanted one containing: " << needle;
    } catch (const E& e) {
        message = e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not the expected exception type: " << e.what();
    }
    if (!message.empty()) {
        EXPECT_PRED_FORMAT2(::testing::IsSubstring, std::string(needle), message);
        EXPECT_EQ(message.rfind(std::string(start), 0), 0U) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    return message;
}

} // namespace attn::testing

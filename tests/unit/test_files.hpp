// Shared helpers of the unit tests of readers and writers: bytes from text, a fresh temp
// folder per test (TempDirTest), and the check of a one-line error message's start and
// content (expect_error_message); safetensors files byte by byte (file_of, entry,
// f32_safetensors). Numeric helpers live in test_util.hpp.
#pragma once

#include <bit>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace attn::testing {

// Safetensors files built byte by byte (the format: an 8-byte little-endian header length,
// the JSON header, the data).
using Bytes = std::vector<std::uint8_t>;

inline void append_le(Bytes& out, std::uint64_t v, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) {
        out.push_back(static_cast<std::uint8_t>((v >> (8 * k)) & 0xffu));
    }
}

/// A file: the header length, `header` verbatim, then `data`.
inline Bytes file_of(std::string_view header, const Bytes& data = {}) {
    Bytes out;
    append_le(out, header.size(), 8);
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

inline Bytes f32_bytes(const std::vector<float>& v) {
    Bytes out;
    for (const float x : v) {
        append_le(out, std::bit_cast<std::uint32_t>(x), 4);
    }
    return out;
}

/// One tensor entry of a header, as JSON text.
inline std::string entry(std::string_view name,
                         std::string_view dtype,
                         std::string_view shape,
                         std::uint64_t begin,
                         std::uint64_t end) {
    return "\"" + std::string(name) + "\":{\"dtype\":\"" + std::string(dtype) +
           "\",\"shape\":" + std::string(shape) + ",\"data_offsets\":[" + std::to_string(begin) +
           "," + std::to_string(end) + "]}";
}

/// A safetensors file of F32 tensors, each {name, shape, values}, in order.
struct F32Tensor {
    std::string name;
    std::vector<std::size_t> shape;
    std::vector<float> values;
};
inline Bytes f32_safetensors(const std::vector<F32Tensor>& tensors) {
    std::string header = "{";
    Bytes data;
    for (const F32Tensor& t : tensors) {
        std::string shape = "[";
        for (const std::size_t d : t.shape) {
            shape += (shape.size() > 1 ? "," : "") + std::to_string(d);
        }
        const std::uint64_t begin = data.size();
        const Bytes bytes = f32_bytes(t.values);
        data.insert(data.end(), bytes.begin(), bytes.end());
        header +=
            (header.size() > 1 ? "," : "") + entry(t.name, "F32", shape + "]", begin, data.size());
    }
    return file_of(header + "}", data);
}

inline std::vector<std::uint8_t> bytes_of(std::string_view text) {
    return {text.begin(), text.end()};
}

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
        const std::filesystem::path path = dir_ / name;
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

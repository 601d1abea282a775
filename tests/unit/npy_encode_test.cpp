// Tests of the NPY writer (encode_npy: numpy's header layout, bit-exact round trips, version
// 2 when needed; write_npy_file streaming the same bytes; NpyFileWriter's blocks) and of
// the file entry points
// (read_array_file, read_file, array_format_for), which write their own files into a temp
// folder.
#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/npy.hpp"
#include "unit/npy_bytes.hpp"
#include "unit/test_files.hpp"
#include "unit/test_util.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace attn::io {
namespace {

using namespace testing;
using namespace std::string_literals;
using namespace std::string_view_literals;

// ----------------------------------------------------------------------------------------
// encode_npy
// ----------------------------------------------------------------------------------------

TEST(NpyEncode, HeaderLayoutLikeNumpy) {
    const float one = 1.0f;
    for (const std::vector<std::size_t>& shape : {std::vector<std::size_t>{},
                                                  std::vector<std::size_t>{1},
                                                  std::vector<std::size_t>{1, 1, 1, 1}}) {
        const auto file = encode_npy(shape, &one, false);
        const attn::io::NpyHeader h = parse_npy_header(file, "e");
        EXPECT_EQ(h.major_version, 1);
        EXPECT_EQ(h.header_bytes % 64, 0U);
        EXPECT_EQ(file[h.header_bytes - 1], '\n');
        EXPECT_EQ(h.shape, shape);
    }
    const auto scalar = encode_npy({}, &one, false);
    const std::string text(scalar.begin() + 10, scalar.end());
    EXPECT_EQ(text.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 0), 0U);
    const auto vec = encode_npy({1}, &one, true);
    const std::string text1(vec.begin() + 10, vec.end());
    EXPECT_EQ(text1.rfind("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", 0), 0U);
}

std::vector<float> special_and_random_floats(std::size_t n, unsigned seed) {
    std::vector<float> v = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::lowest(),
                            std::numeric_limits<float>::min()};
    std::mt19937 rng(seed);
    while (v.size() < n) {
        v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
    }
    v.resize(n);
    return v;
}

TEST(NpyEncode, RoundTripF4AndF8BitExact) {
    const std::vector<std::size_t> shape = {3, 4, 5};
    const std::vector<float> values = special_and_random_floats(60, 7);
    for (const bool f64 : {false, true}) {
        SCOPED_TRACE(f64 ? "f8" : "f4");
        const Array a = parse_npy(encode_npy(shape, values.data(), f64), "rt.npy");
        EXPECT_EQ(a.shape, shape);
        EXPECT_EQ(a.dtype, f64 ? "float64" : "float32");
        ASSERT_EQ(a.values.size(), values.size());
        for (std::size_t i = 0; i < values.size(); ++i) {
            expect_same_float(a.values[i], values[i], i);
        }
    }
}

TEST(NpyEncode, RoundTripEmptyAndScalar) {
    const Array empty =
        parse_npy(encode_npy({2, 0, 3}, static_cast<const float*>(nullptr), false), "e");
    EXPECT_EQ(empty.shape, (std::vector<std::size_t>{2, 0, 3}));
    EXPECT_TRUE(empty.values.empty());
    const float x = -2.5f;
    const Array scalar = parse_npy(encode_npy({}, &x, false), "s");
    EXPECT_TRUE(scalar.shape.empty());
    EXPECT_EQ(scalar.values, std::vector<float>{-2.5f});
}

TEST(NpyEncode, Version2WhenTheHeaderNeedsIt) {
    // Only absurd ranks need it (our reader stops at 32), but the writer must stay valid.
    const std::vector<std::size_t> shape(30000, 1);
    const float x = 1.0f;
    const auto file = encode_npy(shape, &x, false);
    EXPECT_EQ(file[6], 2);
    const std::size_t header_length = std::size_t{file[8]} | (std::size_t{file[9]} << 8) |
                                      (std::size_t{file[10]} << 16) | (std::size_t{file[11]} << 24);
    EXPECT_GT(header_length, 65535U);
    EXPECT_EQ((12 + header_length) % 64, 0U);
    EXPECT_EQ(file.size(), 12 + header_length + 4);
    EXPECT_EQ(file[12 + header_length - 1], '\n');
    expect_npy_error(file, "more than 32 dimensions");
}

// ----------------------------------------------------------------------------------------
// Files: read_array_file, read_file, array_format_for
// ----------------------------------------------------------------------------------------

class NpyFile : public attn::testing::TempDirTest {};

TEST_F(NpyFile, ReadsNpyByExtensionAnyCase) {
    const std::vector<float> values = {1, 2, 3, 4};
    const auto bytes = encode_npy({2, 2}, values.data(), false);
    for (const std::string name : {"a.npy", "b.NPY", "c.Npy"}) {
        const Array a = attn::io::read_array_file(write(name, bytes), ArrayKind::numeric);
        EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 2}));
        EXPECT_EQ(a.values, values);
    }
}

TEST_F(NpyFile, ErrorsNameTheFile) {
    const auto path = write("bad.npy", bytes_of("not numpy"sv));
    EXPECT_INPUT_ERROR((void)attn::io::read_array_file(path, ArrayKind::numeric),
                       attn::testing::exactly(path.string() + ": not an NPY file (bad magic)"));
}

TEST_F(NpyFile, MissingFileAndDirectory) {
    EXPECT_INPUT_ERROR((void)attn::io::read_file(dir_ / "missing.npy"),
                       attn::testing::exactly((dir_ / "missing.npy").string() +
                                              ": cannot read: No such file or directory"));
    std::filesystem::create_directory(dir_ / "folder.npy");
    EXPECT_INPUT_ERROR(
        (void)attn::io::read_array_file(dir_ / "folder.npy", ArrayKind::numeric),
        attn::testing::exactly((dir_ / "folder.npy").string() + ": cannot read: Is a directory"));
}

TEST_F(NpyFile, ReadFileReturnsEveryByte) {
    std::vector<std::uint8_t> bytes(200000);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        bytes[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
    }
    EXPECT_EQ(attn::io::read_file(write("blob.bin", bytes)), bytes);
    EXPECT_TRUE(attn::io::read_file(write("empty.bin", std::string_view())).empty());
}

TEST(FormatFor, ByExtensionCaseInsensitive) {
    EXPECT_EQ(attn::io::array_format_for("x.npy"), ArrayFormat::npy);
    EXPECT_EQ(attn::io::array_format_for("dir.json/x.NPY"), ArrayFormat::npy);
    EXPECT_EQ(attn::io::array_format_for("x.json"), ArrayFormat::json);
    EXPECT_EQ(attn::io::array_format_for("a/b.JsOn"), ArrayFormat::json);
    for (const std::string bad : {"x.npz", "x", "x.npy.gz", ".npy", "-", "x.txt"}) {
        SCOPED_TRACE(bad);
        EXPECT_INPUT_ERROR(
            (void)attn::io::array_format_for(bad),
            attn::testing::exactly(bad + ": unknown array format (expected .npy or .json)"));
    }
}

std::vector<std::uint8_t> file_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// write_npy_file streams the payload in 1 MiB pieces: the file must be byte for byte what
// encode_npy builds in memory, for f4 and f8, from float32 and from float64 values, with
// sizes below, at and across the piece boundary.
TEST_F(NpyFile, StreamedWriteEqualsTheInMemoryEncoding) {
    for (const std::size_t n : {std::size_t{0},
                                std::size_t{1},
                                std::size_t{262144},
                                std::size_t{262145},
                                std::size_t{700001}}) {
        Array a;
        a.shape = {n};
        a.values = special_and_random_floats(n, static_cast<unsigned>(n));
        for (const bool with64 : {false, true}) {
            a.values64.clear();
            if (with64) {
                a.values64.resize(n);
                for (std::size_t i = 0; i < n; ++i) {
                    a.values64[i] = static_cast<double>(a.values[i]) * (1.0 + 1e-12);
                }
            }
            for (const bool f64 : {false, true}) {
                SCOPED_TRACE("n " + std::to_string(n) + (with64 ? " values64" : " values") +
                             (f64 ? " f8" : " f4"));
                const auto path = dir_ / "out.npy";
                attn::io::write_npy_file(path, a, f64);
                EXPECT_EQ(file_bytes(path), encode_npy(a, f64));
            }
        }
    }
    // Nothing but the file itself is left behind.
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_),
                            std::filesystem::directory_iterator()),
              1);
}

// NpyFileWriter: blocks written out of order, from two threads (pwrite at each block's
// place), give encode_npy's bytes; an uncommitted writer leaves nothing and the old file.
TEST_F(NpyFile, BlockWriterEqualsTheInMemoryEncoding) {
    const std::vector<std::size_t> shape = {2, 3, 70, 33};
    Array a;
    a.shape = shape;
    a.values = special_and_random_floats(std::size_t{2} * 3 * 70 * 33, 24);
    const auto path = dir_ / "w.npy";
    {
        std::ofstream(path) << "old";
        NpyFileWriter out(path, shape);
        ASSERT_EQ(out.size(), a.values.size());
        const WeightsDestination<float> to = out.destination();
        EXPECT_EQ(to.size, a.values.size());
        const std::size_t block = 1000; // not a multiple of anything above
        const std::size_t blocks = (a.values.size() + block - 1) / block;
        auto half = [&](std::size_t parity) {
            for (std::size_t b = blocks; b-- > 0;) {
                if (b % 2 == parity) {
                    const std::size_t first = b * block;
                    to.store(
                        first, a.values.data() + first, std::min(block, a.values.size() - first));
                }
            }
        };
        std::thread other(half, 1);
        half(0);
        other.join();
        EXPECT_EQ(file_bytes(path), std::vector<std::uint8_t>({'o', 'l', 'd'}));
        out.commit();
    }
    EXPECT_EQ(file_bytes(path), encode_npy(a, false));
    {
        NpyFileWriter abandoned(path, shape);
        abandoned.write(0, a.values.data(), 10);
    }
    EXPECT_EQ(file_bytes(path), encode_npy(a, false));
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_),
                            std::filesystem::directory_iterator()),
              1);
}

} // namespace
} // namespace attn::io

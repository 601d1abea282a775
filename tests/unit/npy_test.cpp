// Tests of the strict NPY reader and writer in attn/io/array.hpp: every dtype in both byte
// orders, float16 specials, Fortran order, header versions and layouts, NumPy-written
// fixtures, and one test per defect that must be refused with a one-line InputError.
// NPY bytes are built in the tests (or pasted from npy_fixtures.py): no files are needed,
// except by the read_array_file tests, which write their own into a temp folder.
#include "attn/error.hpp"
#include "attn/io/array.hpp"
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
#include <unistd.h>
#include <vector>

namespace {

using attn::InputError;
using attn::io::Array;
using attn::io::ArrayFormat;
using attn::io::ArrayKind;
using attn::io::encode_npy;
using attn::io::parse_npy;
using attn::io::parse_npy_header;
using attn::testing::bytes_of;
using attn::testing::expect_error_message;
using namespace std::string_literals;
using namespace std::string_view_literals;

/// An NPY file around `dict`: magic, version, header length (2 bytes for v1, 4 for v2/v3),
/// the dict padded with spaces and a '\n' the way numpy does (a multiple of 64 in all, or
/// exactly `total_header` bytes when given), then the payload. pad = false: the dict as is.
std::vector<std::uint8_t> make_npy(std::string_view dict,
                                   const std::vector<std::uint8_t>& payload,
                                   int major = 1,
                                   bool pad = true,
                                   std::size_t total_header = 0) {
    const std::size_t preamble = major == 1 ? 10 : 12;
    std::string header(dict);
    if (pad) {
        std::size_t total = preamble + header.size() + 1;
        if (total_header != 0) {
            total = total_header;
        } else {
            total += (64 - total % 64) % 64;
        }
        header.append(total - preamble - header.size() - 1, ' ');
        header += '\n';
    }
    std::vector<std::uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    out.push_back(static_cast<std::uint8_t>(major));
    out.push_back(0);
    for (std::size_t k = 0; k < preamble - 8; ++k) {
        out.push_back(static_cast<std::uint8_t>((header.size() >> (8 * k)) & 0xffu));
    }
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

/// The usual numpy dict for `descr` and `shape` (a Python tuple literal).
std::string dict_for(std::string_view descr, std::string_view shape, bool fortran = false) {
    return "{'descr': '" + std::string(descr) +
           "', 'fortran_order': " + (fortran ? "True" : "False") +
           ", 'shape': " + std::string(shape) + ", }";
}

/// Appends the bytes of `value` in the given byte order.
template <class T> void append_value(std::vector<std::uint8_t>& out, T value, bool big_endian) {
    std::array<std::uint8_t, sizeof(T)> raw{};
    std::memcpy(raw.data(), &value, sizeof(T));
    if ((std::endian::native == std::endian::big) != big_endian) {
        std::reverse(raw.begin(), raw.end());
    }
    out.insert(out.end(), raw.begin(), raw.end());
}

template <class T>
std::vector<std::uint8_t> payload_of(const std::vector<T>& values, bool big_endian = false) {
    std::vector<std::uint8_t> out;
    for (const T v : values) {
        append_value(out, v, big_endian);
    }
    return out;
}

/// Same float, bit for bit (any NaN matches any NaN).
void expect_same_float(float actual, float expected, std::size_t index) {
    if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(actual)) << "at " << index << ": " << actual;
    } else {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(actual), std::bit_cast<std::uint32_t>(expected))
            << "at " << index << ": got " << actual << ", want " << expected;
    }
}

/// parse_npy(file, "q.npy") must throw an InputError: one line, "q.npy: ..." containing
/// `needle`. Returns the message.
std::string expect_npy_error(const std::vector<std::uint8_t>& file, std::string_view needle) {
    return expect_error_message<InputError>(
        [&] { (void)parse_npy(file, "q.npy"); }, "q.npy: ", needle);
}

// ----------------------------------------------------------------------------------------
// Every dtype, in every byte order
// ----------------------------------------------------------------------------------------

/// Reads `values` stored as `code` in each byte order (and '|' for one-byte types) and
/// compares with the C++ conversion to float, which rounds to nearest like numpy's
/// astype(float32).
template <class T>
void check_dtype(std::string_view code, std::string_view numpy_name, const std::vector<T>& values) {
    std::vector<char> orders = {'<', '>', '='};
    if (sizeof(T) == 1) {
        orders.push_back('|');
    }
    for (const char order : orders) {
        // Built with += : g++ 12 -O3 warns (-Wrestrict, a false positive) on "(" + string.
        std::string descr(1, order);
        descr += code;
        std::string shape = "(";
        shape += std::to_string(values.size());
        shape += ",)";
        SCOPED_TRACE(descr);
        const auto file = make_npy(dict_for(descr, shape), payload_of(values, order == '>'));
        const Array a = parse_npy(file, "t.npy");
        EXPECT_EQ(a.shape, std::vector<std::size_t>{values.size()});
        EXPECT_EQ(a.dtype, numpy_name);
        EXPECT_FALSE(a.is_bool);
        ASSERT_EQ(a.values.size(), values.size());
        for (std::size_t i = 0; i < values.size(); ++i) {
            expect_same_float(a.values[i], static_cast<float>(values[i]), i);
        }
    }
}

TEST(NpyDtype, Float32BothOrders) {
    check_dtype<float>("f4",
                       "float32",
                       {0.0f,
                        -0.0f,
                        1.5f,
                        -3.25e-3f,
                        std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::denorm_min(),
                        std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()});
}

TEST(NpyDtype, Float64BothOrders) {
    check_dtype<double>("f8",
                        "float64",
                        {0.1,
                         -2.5,
                         1e300,
                         -1e300,
                         1e-320,
                         3.4028235677973366e38,
                         std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()});
    // Beyond float range gives ±inf, as numpy's astype(float32) does.
    const Array a =
        parse_npy(make_npy(dict_for("<f8", "(2,)"), payload_of<double>({1e300, -1e300})), "t.npy");
    EXPECT_EQ(a.values[0], std::numeric_limits<float>::infinity());
    EXPECT_EQ(a.values[1], -std::numeric_limits<float>::infinity());
}

TEST(NpyDtype, SignedIntegersBothOrders) {
    check_dtype<std::int8_t>("i1", "int8", {0, 1, -1, 127, -128});
    check_dtype<std::int16_t>("i2", "int16", {0, 1, -1, 32767, -32768, 1234});
    check_dtype<std::int32_t>("i4", "int32", {0, -1, 2147483647, -2147483647 - 1, 16777217});
    check_dtype<std::int64_t>("i8",
                              "int64",
                              {0,
                               -1,
                               std::numeric_limits<std::int64_t>::max(),
                               std::numeric_limits<std::int64_t>::min(),
                               123456789012345});
    // int64 max rounds to 2^63, as numpy's astype(float32).
    const Array a = parse_npy(
        make_npy(dict_for(">i8", "(1,)"),
                 payload_of<std::int64_t>({std::numeric_limits<std::int64_t>::max()}, true)),
        "t.npy");
    EXPECT_EQ(std::bit_cast<std::uint32_t>(a.values[0]), 0x5f000000u);
}

TEST(NpyDtype, UnsignedIntegersBothOrders) {
    check_dtype<std::uint8_t>("u1", "uint8", {0, 1, 128, 255});
    check_dtype<std::uint16_t>("u2", "uint16", {0, 1, 65535, 256});
    check_dtype<std::uint32_t>("u4", "uint32", {0, 4294967295u, 16777217u});
    check_dtype<std::uint64_t>("u8", "uint64", {0, 18446744073709551615ull, 1ull << 40});
}

TEST(NpyDtype, BoolB1AndQuestionMark) {
    for (const std::string descr : {"|b1", "<b1", ">b1", "b1", "|?", "?"}) {
        SCOPED_TRACE(descr);
        const Array a = parse_npy(make_npy(dict_for(descr, "(2, 2)"), {1, 0, 0, 1}), "m.npy");
        EXPECT_TRUE(a.is_bool);
        EXPECT_EQ(a.dtype, "bool");
        EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 2}));
        EXPECT_EQ(a.values, (std::vector<float>{1, 0, 0, 1}));
    }
}

TEST(NpyDtype, DescrWithoutByteOrderIsNative) {
    const Array a = parse_npy(make_npy(dict_for("f4", "(1,)"), payload_of<float>({2.5f})), "t.npy");
    EXPECT_EQ(a.values, std::vector<float>{2.5f});
}

// ----------------------------------------------------------------------------------------
// float16
// ----------------------------------------------------------------------------------------

/// Independent reference: the binary16 formula from IEEE 754, in double.
double half_reference(std::uint16_t h) {
    const double sign = (h & 0x8000u) != 0 ? -1.0 : 1.0;
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    if (exponent == 0) {
        return sign * std::ldexp(mantissa, -24);
    }
    if (exponent == 31) {
        return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                             : std::numeric_limits<double>::quiet_NaN();
    }
    return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(NpyFloat16, AllBitPatternsBothOrders) {
    std::vector<std::uint16_t> all(65536);
    for (std::size_t i = 0; i < all.size(); ++i) {
        all[i] = static_cast<std::uint16_t>(i);
    }
    for (const bool big : {false, true}) {
        SCOPED_TRACE(big ? ">f2" : "<f2");
        const Array a = parse_npy(
            make_npy(dict_for(big ? ">f2" : "<f2", "(65536,)"), payload_of(all, big)), "h.npy");
        EXPECT_EQ(a.dtype, "float16");
        ASSERT_EQ(a.values.size(), all.size());
        for (std::size_t i = 0; i < all.size(); ++i) {
            const double want = half_reference(all[i]);
            if (std::isnan(want)) {
                ASSERT_TRUE(std::isnan(a.values[i])) << i;
            } else {
                ASSERT_EQ(static_cast<double>(a.values[i]), want) << i;
                ASSERT_EQ(std::signbit(a.values[i]), std::signbit(want)) << i;
            }
        }
    }
}

TEST(NpyFloat16, SpecialValues) {
    const std::vector<std::uint16_t> bits = {
        0x0001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x8000, 0x3c00, 0xc000};
    const Array a = parse_npy(make_npy(dict_for("<f2", "(10,)"), payload_of(bits)), "h.npy");
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(a.values[0], 0x1p-24f);           // smallest subnormal
    EXPECT_EQ(a.values[1], 1023.0f * 0x1p-24f); // largest subnormal
    EXPECT_EQ(a.values[2], 0x1p-14f);           // smallest normal
    EXPECT_EQ(a.values[3], 65504.0f);           // largest finite
    EXPECT_EQ(a.values[4], inf);
    EXPECT_EQ(a.values[5], -inf);
    EXPECT_TRUE(std::isnan(a.values[6]));
    EXPECT_TRUE(a.values[7] == 0.0f && std::signbit(a.values[7])); // -0
    EXPECT_EQ(a.values[8], 1.0f);
    EXPECT_EQ(a.values[9], -2.0f);
}

// ----------------------------------------------------------------------------------------
// Files numpy wrote (tests/unit/npy_fixtures.py): bytes and numpy's float32 bit patterns
// ----------------------------------------------------------------------------------------

struct NumpyFixture {
    std::string_view name;
    std::string_view bytes;
    std::vector<std::uint32_t> float32_bits; ///< numpy's astype(float32), C order
};

// clang-format off
const std::vector<NumpyFixture> numpy_fixtures = {
    // f4_2x3: shape (2, 3), dtype <f4, fortran_order=False
    {"f4_2x3",
     "\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c"
     "\x66\x34\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20"
     "\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x20\x33\x29"
     "\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x00\x00\x00"
     "\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40"sv,
     {0x00000000u, 0x3f800000u, 0x40000000u, 0x40400000u, 0x40800000u, 0x40a00000u}},
    // be_i2_fortran_2x3: shape (2, 3), dtype >i2, fortran_order=True
    {"be_i2_fortran_2x3",
     "\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3e"
     "\x69\x32\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20"
     "\x54\x72\x75\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x20\x33\x29\x2c"
     "\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x01\xff\xfc"
     "\xff\xfe\x00\x05\x00\x03\x7f\xff"sv,
     {0x3f800000u, 0xc0000000u, 0x40400000u, 0xc0800000u, 0x40a00000u, 0x46fffe00u}},
    // f8_fortran_2x3x2: shape (2, 3, 2), dtype <f8, fortran_order=True
    {"f8_fortran_2x3x2",
     "\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c"
     "\x66\x38\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20"
     "\x54\x72\x75\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x20\x33\x2c\x20"
     "\x32\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x00\x00\x00"
     "\x00\x00\xf0\xbf\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
     "\x00\x00\x00\x00\x08\x40\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x10\x40"
     "\x00\x00\x00\x00\x00\x00\xe0\xbf\x00\x00\x00\x00\x00\x00\x04\x40\x00\x00\x00\x00\x00\x00"
     "\xe0\x3f\x00\x00\x00\x00\x00\x00\x0c\x40\x00\x00\x00\x00\x00\x00\xf8\x3f\x00\x00\x00\x00"
     "\x00\x00\x12\x40"sv,
     {0xbf800000u, 0xbf000000u, 0x00000000u, 0x3f000000u, 0x3f800000u, 0x3fc00000u, 0x40000000u,
      0x40200000u, 0x40400000u, 0x40600000u, 0x40800000u, 0x40900000u}},
    // f2_specials: shape (12,), dtype <f2, fortran_order=False
    {"f2_specials",
     "\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c"
     "\x66\x32\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20"
     "\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x31\x32\x2c\x29\x2c"
     "\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x00\x00\x80"
     "\x00\x3c\x00\xc0\xff\x7b\x00\x04\x01\x00\xff\x03\x00\x7c\x00\xfc\x00\x7e\x55\x35"sv,
     {0x00000000u, 0x80000000u, 0x3f800000u, 0xc0000000u, 0x477fe000u, 0x38800000u, 0x33800000u,
      0x387fc000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x3eaaa000u}},
    // be_f2_specials: shape (4,), dtype >f2, fortran_order=False
    {"be_f2_specials",
     "\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3e"
     "\x66\x32\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20"
     "\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x34\x2c\x29\x2c\x20"
     "\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x01\xfb\xff"
     "\x7c\x00\x3c\x00"sv,
     {0x33800000u, 0xc77fe000u, 0x7f800000u, 0x3f800000u}},
    // bool_3: shape (3,), dtype |b1, fortran_order=False
    {"bool_3",
     "\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x7c"
     "\x62\x31\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20"
     "\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x33\x2c\x29\x2c\x20"
     "\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x01\x00\x01"sv,
     {0x3f800000u, 0x00000000u, 0x3f800000u}},
    // u8_scalar: shape (), dtype <u8, fortran_order=False
    {"u8_scalar",
     "\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c"
     "\x75\x38\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20"
     "\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x29\x2c\x20\x7d\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
     "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\xff\xff\xff\xff"
     "\xff\xff\xff\xff"sv,
     {0x5f800000u}},
};
// clang-format on

const NumpyFixture& fixture(std::string_view name) {
    for (const NumpyFixture& f : numpy_fixtures) {
        if (f.name == name) {
            return f;
        }
    }
    throw std::logic_error("no fixture " + std::string(name));
}

TEST(NpyNumpyFixtures, ValuesMatchNumpy) {
    for (const NumpyFixture& f : numpy_fixtures) {
        SCOPED_TRACE(std::string(f.name));
        const Array a = parse_npy(bytes_of(f.bytes), f.name);
        ASSERT_EQ(a.values.size(), f.float32_bits.size());
        for (std::size_t i = 0; i < a.values.size(); ++i) {
            expect_same_float(a.values[i], std::bit_cast<float>(f.float32_bits[i]), i);
        }
    }
}

TEST(NpyNumpyFixtures, ShapesAndDtypes) {
    const Array i2 = parse_npy(bytes_of(fixture("be_i2_fortran_2x3").bytes), "i2");
    EXPECT_EQ(i2.shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(i2.dtype, "int16");
    EXPECT_EQ(i2.values, (std::vector<float>{1, -2, 3, -4, 5, 32767}));

    const Array f8 = parse_npy(bytes_of(fixture("f8_fortran_2x3x2").bytes), "f8");
    EXPECT_EQ(f8.shape, (std::vector<std::size_t>{2, 3, 2}));
    EXPECT_EQ(f8.dtype, "float64");

    const Array b = parse_npy(bytes_of(fixture("bool_3").bytes), "b");
    EXPECT_TRUE(b.is_bool);

    const Array scalar = parse_npy(bytes_of(fixture("u8_scalar").bytes), "s");
    EXPECT_TRUE(scalar.shape.empty());
    EXPECT_EQ(scalar.dtype, "uint64");
    EXPECT_EQ(scalar.values.size(), 1U);
}

TEST(NpyNumpyFixtures, EncodeNpyWritesNumpysBytes) {
    const std::vector<float> values = {0, 1, 2, 3, 4, 5};
    EXPECT_EQ(encode_npy({2, 3}, values.data(), false), bytes_of(fixture("f4_2x3").bytes));
}

// ----------------------------------------------------------------------------------------
// Fortran order
// ----------------------------------------------------------------------------------------

TEST(NpyFortran, Rank2IsTransposedIntoCOrder) {
    // [[1, 2, 3], [4, 5, 6]] stored column by column.
    const auto file =
        make_npy(dict_for("<f4", "(2, 3)", true), payload_of<float>({1, 4, 2, 5, 3, 6}));
    const Array a = parse_npy(file, "f.npy");
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(a.values, (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(NpyFortran, Rank3IsTransposedIntoCOrder) {
    // v[i][j][k] = 100 i + 10 j + k for shape (2, 3, 4); Fortran order: i varies fastest.
    std::vector<std::int32_t> fortran;
    for (int k = 0; k < 4; ++k) {
        for (int j = 0; j < 3; ++j) {
            for (int i = 0; i < 2; ++i) {
                fortran.push_back(100 * i + 10 * j + k);
            }
        }
    }
    for (const bool big : {false, true}) {
        const auto file =
            make_npy(dict_for(big ? ">i4" : "<i4", "(2, 3, 4)", true), payload_of(fortran, big));
        const Array a = parse_npy(file, "f.npy");
        ASSERT_EQ(a.values.size(), 24U);
        std::size_t n = 0;
        for (int i = 0; i < 2; ++i) {
            for (int j = 0; j < 3; ++j) {
                for (int k = 0; k < 4; ++k) {
                    EXPECT_EQ(a.values[n++], static_cast<float>(100 * i + 10 * j + k));
                }
            }
        }
    }
}

TEST(NpyFortran, Rank0Rank1AndEmptyAreUnchanged) {
    EXPECT_EQ(parse_npy(make_npy(dict_for("<f4", "()", true), payload_of<float>({7})), "f").values,
              std::vector<float>{7});
    EXPECT_EQ(parse_npy(make_npy(dict_for("<f4", "(3,)", true), payload_of<float>({1, 2, 3})), "f")
                  .values,
              (std::vector<float>{1, 2, 3}));
    const Array empty = parse_npy(make_npy(dict_for("<f4", "(0, 3)", true), {}), "f");
    EXPECT_EQ(empty.shape, (std::vector<std::size_t>{0, 3}));
    EXPECT_TRUE(empty.values.empty());
}

// ----------------------------------------------------------------------------------------
// Header versions and layouts
// ----------------------------------------------------------------------------------------

TEST(NpyHeader, Versions1To3) {
    for (const int major : {1, 2, 3}) {
        SCOPED_TRACE(major);
        const auto file =
            make_npy(dict_for("<f4", "(2,)"), payload_of<float>({1.5f, -1.5f}), major);
        const attn::io::NpyHeader h = parse_npy_header(file, "v.npy");
        EXPECT_EQ(h.major_version, major);
        EXPECT_EQ(h.header_bytes, 128U);
        EXPECT_EQ(h.descr, "<f4");
        EXPECT_EQ(h.item_size, 4U);
        EXPECT_EQ(h.dtype, "float32");
        EXPECT_FALSE(h.fortran_order);
        EXPECT_EQ(parse_npy(file, "v.npy").values, (std::vector<float>{1.5f, -1.5f}));
    }
}

TEST(NpyHeader, ReorderedKeysQuotesWhitespaceAndCommas) {
    const std::vector<std::string> dicts = {
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
        "{'fortran_order': False, 'descr': '<f4', 'shape': (2,3,),}",
        "{\"descr\": \"<f4\", \"shape\": (2, 3), \"fortran_order\": False}",
        "  {\n 'descr' :\t'<f4' ,\r\n 'fortran_order':False,'shape':( 2 , 3 ) , }  \n",
        "{'descr':'<f4','fortran_order':False,'shape':(2,3)}",
    };
    for (const std::string& dict : dicts) {
        SCOPED_TRACE(dict);
        for (const bool pad : {false, true}) {
            const Array a =
                parse_npy(make_npy(dict, payload_of<float>({1, 2, 3, 4, 5, 6}), 1, pad), "k.npy");
            EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
            EXPECT_EQ(a.values, (std::vector<float>{1, 2, 3, 4, 5, 6}));
        }
    }
}

TEST(NpyHeader, LongHeadersXtensorRejects) {
    // xtensor 0.24.3 reads the length bytes as signed chars: lengths with a low byte of
    // 0x80 or more (numpy's 118-byte-and-up headers) fail there. They must work here.
    for (const std::size_t total : {128U, 138U, 192U, 266U, 320U, 4096U, 65536U}) {
        SCOPED_TRACE(total);
        const auto file = make_npy(dict_for("<f4", "(1,)"), payload_of<float>({3}), 1, true, total);
        const attn::io::NpyHeader h = parse_npy_header(file, "l.npy");
        EXPECT_EQ(h.header_bytes, total);
        EXPECT_EQ(parse_npy(file, "l.npy").values, std::vector<float>{3});
    }
}

TEST(NpyHeader, ShapesOfEveryRankUpTo32) {
    EXPECT_TRUE(
        parse_npy(make_npy(dict_for("<f4", "()"), payload_of<float>({1})), "s").shape.empty());
    std::string shape = "(";
    for (int r = 0; r < 32; ++r) {
        shape += "1, ";
    }
    shape += ")";
    const Array a = parse_npy(make_npy(dict_for("<f4", shape), payload_of<float>({4})), "s");
    EXPECT_EQ(a.shape, std::vector<std::size_t>(32, 1));
    EXPECT_EQ(a.values, std::vector<float>{4});
}

TEST(NpyHeader, PythonTwoLongSuffixInV1AndV2) {
    // numpy strips the 'L' of Python 2 longs from v1/v2 headers; v3 never had them.
    const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 1L), }";
    EXPECT_EQ(parse_npy(make_npy(dict, payload_of<float>({1, 2}), 1), "p").shape,
              (std::vector<std::size_t>{2, 1}));
    expect_npy_error(make_npy(dict, payload_of<float>({1, 2}), 3), "expected ',' or ')'");
}

TEST(NpyHeader, HeaderOnlyCheckAllowsExtraPayload) {
    // parse_npy_header promises "at least" the payload; parse_npy wants exactly it.
    const auto file = make_npy(dict_for("<f4", "(1,)"), payload_of<float>({1, 2}));
    EXPECT_NO_THROW((void)parse_npy_header(file, "x"));
}

// ----------------------------------------------------------------------------------------
// Defects: every one is an InputError naming the file, on one line
// ----------------------------------------------------------------------------------------

TEST(NpyDefect, BadMagic) {
    expect_npy_error(bytes_of("\x93NUMPZ\x01\x00"sv), "not an NPY file (bad magic)");
    expect_npy_error(bytes_of("[1, 2, 3]"sv), "not an NPY file (bad magic)");
    expect_npy_error(bytes_of("\x93NUM"sv), "not an NPY file (bad magic)");
    expect_npy_error({}, "not an NPY file");
}

TEST(NpyDefect, BadVersion) {
    auto file = make_npy(dict_for("<f4", "(1,)"), payload_of<float>({1}));
    file[6] = 4;
    expect_npy_error(file, "unsupported NPY version 4.0");
    file[6] = 0;
    expect_npy_error(file, "unsupported NPY version 0.0");
    file[6] = 1;
    file[7] = 1;
    expect_npy_error(file, "unsupported NPY version 1.1");
}

TEST(NpyDefect, TruncatedPreambleAndHeader) {
    const auto file = make_npy(dict_for("<f4", "(1,)"), payload_of<float>({1}));
    expect_npy_error({file.begin(), file.begin() + 7}, "truncated header");
    expect_npy_error({file.begin(), file.begin() + 9}, "truncated header");
    expect_npy_error({file.begin(), file.begin() + 40},
                     "truncated header: it says 118 bytes, the file has 30");
    const auto v2 = make_npy(dict_for("<f4", "(1,)"), payload_of<float>({1}), 2);
    expect_npy_error({v2.begin(), v2.begin() + 11}, "truncated header");
    // A v2 length field of 4 GiB on a tiny file.
    auto huge = v2;
    huge[8] = huge[9] = huge[10] = huge[11] = 0xff;
    expect_npy_error(huge, "truncated header");
}

TEST(NpyDefect, TruncatedPayload) {
    const auto file = make_npy(dict_for("<f8", "(3,)"), payload_of<float>({1, 2, 3}));
    EXPECT_EQ(expect_npy_error(file, "truncated"),
              "q.npy: truncated: header says 24 bytes of data, file has 12");
    expect_npy_error(make_npy(dict_for("<f4", "(2, 2)"), {}), "truncated");
}

TEST(NpyDefect, TrailingBytes) {
    auto file = make_npy(dict_for("<f4", "(1,)"), payload_of<float>({1}));
    file.push_back(0);
    EXPECT_EQ(expect_npy_error(file, "trailing bytes"),
              "q.npy: trailing bytes: header says 4 bytes of data, file has 5");
}

TEST(NpyDefect, UnsupportedDtypes) {
    for (const std::string descr : {"<c8",
                                    "<U3",
                                    "|O",
                                    "O",
                                    "<f16",
                                    "<f3",
                                    "<i16",
                                    "|S5",
                                    "<M8[s]",
                                    "",
                                    "<",
                                    "f",
                                    "<<f4",
                                    "<F4",
                                    "|V8",
                                    "<b2"}) {
        SCOPED_TRACE(descr);
        expect_npy_error(make_npy(dict_for(descr, "(1,)"), {0, 0, 0, 0, 0, 0, 0, 0}),
                         "unsupported dtype '" + descr + "'");
    }
    const std::string structured =
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }";
    expect_npy_error(make_npy(structured, {0, 0, 0, 0}), "structured dtypes are not supported");
}

TEST(NpyDefect, HugeShapesThrowWithoutAllocating) {
    // The element count overflows size_t.
    expect_npy_error(make_npy(dict_for("<f4", "(4294967296, 4294967296, 2)"), {}), "too large");
    // The count fits, the byte size (2^61 * 8) does not.
    expect_npy_error(make_npy(dict_for("<f8", "(2305843009213693952,)"), {}), "too large");
    // A dimension beyond size_t.
    expect_npy_error(make_npy(dict_for("<f4", "(99999999999999999999999,)"), {}), "too large");
    // Fits size_t, far beyond memory: refused as truncated, not attempted (a bad_alloc or
    // an OOM kill here means the payload was allocated before it was checked).
    expect_npy_error(make_npy(dict_for("<f4", "(1000000000000,)"), {1, 2, 3, 4}),
                     "truncated: header says 4000000000000 bytes of data, file has 4");
}

TEST(NpyDefect, MissingKeys) {
    const std::vector<std::uint8_t> payload = {0, 0, 0, 0};
    expect_npy_error(make_npy("{'descr': '<f4', 'fortran_order': False}", payload),
                     "missing key 'shape'");
    expect_npy_error(make_npy("{'fortran_order': False, 'shape': (1,)}", payload),
                     "missing key 'descr'");
    expect_npy_error(make_npy("{'descr': '<f4', 'shape': (1,)}", payload),
                     "missing key 'fortran_order'");
    expect_npy_error(make_npy("{}", payload), "missing key");
}

TEST(NpyDefect, DuplicateKey) {
    expect_npy_error(
        make_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
                 {0, 0, 0, 0}),
        "duplicate key 'descr'");
    expect_npy_error(
        make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (1,)}",
                 {0, 0, 0, 0}),
        "duplicate key 'shape'");
}

TEST(NpyDefect, NegativeDimension) {
    expect_npy_error(make_npy(dict_for("<f4", "(-1,)"), {}), "negative dimension");
    expect_npy_error(make_npy(dict_for("<f4", "(2, -3)"), {}), "negative dimension");
}

TEST(NpyDefect, GarbageInTheDict) {
    const std::vector<std::uint8_t> payload = {0, 0, 0, 0};
    struct Case {
        std::string dict;
        std::string needle;
    };
    const std::vector<Case> cases = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
         "unexpected key 'extra'"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", "expected ',' or '}'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", "unexpected text"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}}", "unexpected text"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "expected ',' or '}'"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "True or False"},
        {"{'descr': '<f4', 'fortran_order': true, 'shape': (1,)}", "True or False"},
        {"{'descr': '<f4', 'fortran_order': Truex, 'shape': (1,)}", "True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", "a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': 1}", "a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,,)}", "expected a dimension"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", "expected a dimension"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': ('1',)}", "expected a dimension"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1.0,)}", "expected ',' or ')'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (0x1,)}", "expected ',' or ')'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (01,)}", "leading zero"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (+1,)}", "expected a dimension"},
        {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}", "unsupported character"},
        {"{'descr': b'<f4', 'fortran_order': False, 'shape': (1,)}", "expected a quoted string"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", "expected ',' or '}'"},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", "expected ':'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x", "unterminated string"},
        {"{descr: '<f4', 'fortran_order': False, 'shape': (1,)}", "expected a quoted key"},
        {"{, 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "expected a quoted key"},
        {"{'descr': '<f4',, 'fortran_order': False, 'shape': (1,)}", "expected a quoted key"},
        {"('descr', '<f4')", "expected the header to start with '{'"},
        {"", "expected the header to start with '{'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}" + std::string(2, '\0'),
         "unexpected text"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} # comment", "unexpected text"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.dict);
        for (const bool pad : {false, true}) {
            expect_npy_error(make_npy(c.dict, payload, 1, pad), c.needle);
        }
    }
}

TEST(NpyDefect, RankAbove32) {
    std::string shape = "(";
    for (int r = 0; r < 33; ++r) {
        shape += "1, ";
    }
    shape += ")";
    expect_npy_error(make_npy(dict_for("<f4", shape), {0, 0, 0, 0}), "more than 32 dimensions");
}

TEST(NpyDefect, HostileBytesStayOnOneLine) {
    // Control characters and non-ASCII bytes in names are escaped in the message.
    const std::string message = expect_npy_error(
        make_npy(dict_for("<f4\t\x01\xff", "(1,)"), {0, 0, 0, 0}), "unsupported dtype");
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "\\x09\\x01\\xff", message);
}

TEST(NpyDefect, RandomCorruptionNeverEscapesAsAnythingElse) {
    // Flip bytes of valid files: only InputError (or success) may come out.
    const std::vector<float> values = {1, 2, 3, 4, 5, 6};
    const auto original = encode_npy({2, 3}, values.data(), false);
    std::mt19937 rng(1234);
    for (int trial = 0; trial < 3000; ++trial) {
        auto file = original;
        const int flips = 1 + trial % 3;
        for (int f = 0; f < flips; ++f) {
            const std::size_t at = rng() % file.size();
            file[at] = static_cast<std::uint8_t>(rng());
        }
        if (trial % 7 == 0) {
            file.resize(rng() % file.size());
        }
        try {
            (void)parse_npy(file, "r.npy");
        } catch (const InputError& e) {
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
        }
    }
}

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
    const Array empty = parse_npy(encode_npy({2, 0, 3}, nullptr, false), "e");
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

} // namespace

namespace {

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

} // namespace

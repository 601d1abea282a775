// Tests of the strict NPY reader in attn/io/array.hpp, its values: every dtype in both byte
// orders, float16 specials, Fortran order and NumPy-written fixtures (pasted from
// npy_fixtures.py). The header and its defects are npy_header_test.cpp, the writer and the
// files npy_encode_test.cpp. NPY bytes are built in the tests (unit/npy_bytes.hpp): no files.
#include "attn/error.hpp"
#include "attn/io/array.hpp"
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
#include <vector>

namespace attn::io {
namespace {

using namespace testing;
using namespace std::string_literals;
using namespace std::string_view_literals;

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

} // namespace
} // namespace attn::io

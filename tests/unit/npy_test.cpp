// Tests of the strict NPY reader in attn/io/array.hpp, its values: every dtype in both byte
// orders, float16 specials, Fortran order and the files numpy wrote (tests/unit/fixtures/,
// from npy_fixtures.py). The header and its defects are npy_header_test.cpp, the writer and the
// files npy_encode_test.cpp. Other NPY bytes are built in the tests (unit/npy_bytes.hpp).
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/detail.hpp"
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
#include <nlohmann/json.hpp>
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
    EXPECT_EQ(a.values[0], 0x1p-24f);           // smallest subnormal
    EXPECT_EQ(a.values[1], 1023.0f * 0x1p-24f); // largest subnormal
    EXPECT_EQ(a.values[2], 0x1p-14f);           // smallest normal
    EXPECT_EQ(a.values[3], 65504.0f);           // largest finite
    EXPECT_EQ(a.values[4], kInf);
    EXPECT_EQ(a.values[5], -kInf);
    EXPECT_TRUE(std::isnan(a.values[6]));
    EXPECT_TRUE(a.values[7] == 0.0f && std::signbit(a.values[7])); // -0
    EXPECT_EQ(a.values[8], 1.0f);
    EXPECT_EQ(a.values[9], -2.0f);
}

// ----------------------------------------------------------------------------------------
// Files numpy wrote (tests/unit/npy_fixtures.py): bytes and numpy's float32 bit patterns
// ----------------------------------------------------------------------------------------

/// tests/unit/fixtures/NAME.npy, as numpy wrote it.
std::vector<std::uint8_t> fixture(const std::string& name) {
    return fixture_bytes(name + ".npy");
}

TEST(NpyNumpyFixtures, ValuesMatchNumpy) {
    const nlohmann::json fixtures = fixture_json("npy_float32_bits.json");
    EXPECT_EQ(fixtures.size(), 7U);
    for (const auto& item : fixtures.items()) {
        SCOPED_TRACE(item.key());
        const std::vector<std::uint32_t> bits = item.value().get<std::vector<std::uint32_t>>();
        const Array a = parse_npy(fixture(item.key()), item.key());
        ASSERT_EQ(a.values.size(), bits.size());
        for (std::size_t i = 0; i < a.values.size(); ++i) {
            expect_same_float(a.values[i], std::bit_cast<float>(bits[i]), i);
        }
    }
}

TEST(NpyNumpyFixtures, ShapesAndDtypes) {
    const Array i2 = parse_npy(fixture("be_i2_fortran_2x3"), "i2");
    EXPECT_EQ(i2.shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(i2.dtype, "int16");
    EXPECT_EQ(i2.values, (std::vector<float>{1, -2, 3, -4, 5, 32767}));

    const Array f8 = parse_npy(fixture("f8_fortran_2x3x2"), "f8");
    EXPECT_EQ(f8.shape, (std::vector<std::size_t>{2, 3, 2}));
    EXPECT_EQ(f8.dtype, "float64");

    const Array b = parse_npy(fixture("bool_3"), "b");
    EXPECT_TRUE(b.is_bool);

    const Array scalar = parse_npy(fixture("u8_scalar"), "s");
    EXPECT_TRUE(scalar.shape.empty());
    EXPECT_EQ(scalar.dtype, "uint64");
    EXPECT_EQ(scalar.values.size(), 1U);
}

TEST(NpyNumpyFixtures, EncodeNpyWritesNumpysBytes) {
    const std::vector<float> values = {0, 1, 2, 3, 4, 5};
    EXPECT_EQ(encode_npy({2, 3}, values.data(), false), fixture("f4_2x3"));
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

// double_to_half against its own inverse (half_to_float, exact): every finite half comes
// back as itself, and every midpoint between neighbours rounds to the even one, which is
// what round-to-nearest-even means; the values numpy's astype(float16) gives at the edges.
TEST(DoubleToHalf, EveryHalfRoundTripsAndMidpointsGoToTheEvenNeighbour) {
    for (std::uint32_t h = 0; h < 0x7c00; ++h) { // +0 .. 65504, then the negatives
        for (const std::uint32_t sign : {0u, 0x8000u}) {
            const auto bits = static_cast<std::uint16_t>(h | sign);
            const auto v = static_cast<double>(detail::half_to_float(bits));
            ASSERT_EQ(detail::double_to_half(v), bits) << v;
            if (h + 1 < 0x7c00) {
                const auto next = static_cast<std::uint16_t>((h + 1) | sign);
                const double mid = (v + static_cast<double>(detail::half_to_float(next))) / 2;
                ASSERT_EQ(detail::double_to_half(mid), (h % 2 == 0) ? bits : next) << mid;
                // Just off the midpoint, the nearer neighbour wins.
                ASSERT_EQ(detail::double_to_half(std::nextafter(mid, v)), bits) << mid;
            }
        }
    }
}

TEST(DoubleToHalf, EdgesAsNumpyRoundsThem) {
    EXPECT_EQ(detail::double_to_half(1.0), 0x3c00);
    EXPECT_EQ(detail::double_to_half(-2.0), 0xc000);
    EXPECT_EQ(detail::double_to_half(-0.0), 0x8000);
    EXPECT_EQ(detail::double_to_half(65504.0), 0x7bff);
    EXPECT_EQ(detail::double_to_half(65519.99), 0x7bff);
    EXPECT_EQ(detail::double_to_half(65520.0), 0x7c00); // the tie with 2^16 goes to the even: inf
    EXPECT_EQ(detail::double_to_half(-1e300), 0xfc00);
    EXPECT_EQ(detail::double_to_half(std::numeric_limits<double>::infinity()), 0x7c00);
    EXPECT_EQ(detail::double_to_half(std::nan("")), 0x7e00);
    EXPECT_EQ(detail::double_to_half(0x1p-24), 0x0001);       // the smallest subnormal
    EXPECT_EQ(detail::double_to_half(0x1p-25), 0x0000);       // the tie with 0 goes to 0
    EXPECT_EQ(detail::double_to_half(0x1.8p-25), 0x0001);     // above the tie
    EXPECT_EQ(detail::double_to_half(0x1p-14), 0x0400);       // the smallest normal
    EXPECT_EQ(detail::double_to_half(0x1.ffcp-15), 0x0400);   // the largest subnormal's tie with it
    EXPECT_EQ(detail::double_to_half(1.0 + 0x1p-11), 0x3c00); // tie: 1.0's mantissa is even
    EXPECT_EQ(detail::double_to_half(1.0 + 0x1.8p-10), 0x3c02);
}

// floats_to_halves (F16C's vcvtps2ph where the CPU has it, as here on every x86 CI machine)
// and float_to_half (the portable steps) against double_to_half: every half's float, every
// midpoint between neighbours (a tie: exact in float) and the floats either side of it,
// subnormal halves included; the edges; NaNs of both signs with payloads (double_to_half
// gives the quiet NaN 0x7e00 of the sign, where vcvtps2ph keeps the payload's top bits);
// float subnormals; random bit patterns. An odd count, so the vector loop's tail runs too.
TEST(FloatsToHalves, GiveDoubleToHalfsBitsForEveryKindOfFloat) {
    std::vector<float> in;
    constexpr float infinity = std::numeric_limits<float>::infinity();
    for (std::uint32_t h = 0; h < 0x7c00; ++h) {
        for (const std::uint32_t sign : {0u, 0x8000u}) {
            const float v = detail::half_to_float(static_cast<std::uint16_t>(h | sign));
            in.push_back(v);
            if (h + 1 < 0x7c00) {
                const float mid =
                    (v + detail::half_to_float(static_cast<std::uint16_t>((h + 1) | sign))) / 2;
                in.insert(in.end(),
                          {mid, std::nextafter(mid, infinity), std::nextafter(mid, -infinity)});
            }
        }
    }
    for (const float v : {65520.0F,
                          std::nextafter(65520.0F, 0.0F),
                          1e30F,
                          infinity,
                          0x1p-25F,
                          std::nextafter(0x1p-25F, 1.0F),
                          0x1p-149F,
                          0x1.ffcp-15F,
                          0x1p-14F}) {
        in.insert(in.end(), {v, -v});
    }
    for (const std::uint32_t bits : {0x7fc00000u,
                                     0xffc00000u,
                                     0x7f800001u,
                                     0xff800001u,
                                     0x7fffffffu,
                                     0xffffffffu,
                                     0x7fe00000u,
                                     0x807fffffu}) {
        in.push_back(std::bit_cast<float>(bits));
    }
    std::mt19937 gen(5);
    for (int i = 0; i < 1 << 16; ++i) {
        in.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(gen())));
    }
    if (in.size() % 8 == 0) {
        in.push_back(0.1F);
    }
    std::vector<std::uint16_t> out(in.size());
    detail::floats_to_halves(in.data(), in.size(), out.data());
    for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint16_t want = detail::double_to_half(static_cast<double>(in[i]));
        ASSERT_EQ(out[i], want) << std::hex << std::bit_cast<std::uint32_t>(in[i]);
        ASSERT_EQ(attn::float_to_half(in[i]), want)
            << std::hex << std::bit_cast<std::uint32_t>(in[i]);
    }
}

TEST(EncodeNpy, Float16FromFloat64ValuesRoundsOnce) {
    // 1 + 2^-11 + 2^-40 is above the tie in float64; through float32 it would become the
    // tie (1 + 2^-11) and round down to 1.0.
    Array a;
    a.shape = {1};
    a.values64 = {1.0 + 0x1p-11 + 0x1p-40};
    a.values = {static_cast<float>(a.values64[0])};
    a.dtype = "float64";
    const std::vector<std::uint8_t> bytes = encode_npy(a, NpyFloat::f16);
    const std::string text(bytes.begin(), bytes.end() - 2);
    EXPECT_NE(text.find("'descr': '<f2'"), std::string::npos) << text;
    EXPECT_EQ(bytes[bytes.size() - 2], 0x01);
    EXPECT_EQ(bytes.back(), 0x3c);
}

} // namespace
} // namespace attn::io

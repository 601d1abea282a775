// Tests of the NPY reader's header (versions, layouts, every rank) and one test per defect
// that must be refused with a one-line InputError naming the file. NPY bytes are built in the
// tests (unit/npy_bytes.hpp): no files are needed.
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

} // namespace
} // namespace attn::io

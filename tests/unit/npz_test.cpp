// Tests of the .npz reader (attn/io/npz.hpp): archives numpy wrote with savez and
// savez_compressed (every dtype the NPY reader takes; tests/unit/fixtures/, from npz_fixtures.py),
// member selection, and one test per defect that must be refused with a one-line InputError:
// truncated archives, a broken central directory, a CRC mismatch, a zip bomb.
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/npz.hpp"
#include "unit/test_files.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>
#include <zip.h>

namespace attn::io {
namespace {

using testing::bytes_of;
using testing::fixture_bytes;
using testing::fixture_json;
using namespace std::string_view_literals;

/// tests/unit/fixtures/NAME.npz: np.savez or np.savez_compressed of npz_fixtures.py's arrays.
std::vector<std::uint8_t> archive(const std::string& name) {
    return fixture_bytes(name + ".npz");
}

/// One member of those archives: its shape and numpy's astype(float32) bit patterns.
struct Member {
    std::string name;
    std::vector<std::size_t> shape;
    std::vector<std::uint32_t> float32_bits;
};

/// The members, in archive order (tests/unit/fixtures/npz_members.json).
std::vector<Member> numpy_members() {
    std::vector<Member> out;
    for (const nlohmann::json& m : fixture_json("npz_members.json")) {
        out.push_back({m.at("name").get<std::string>(),
                       m.at("shape").get<std::vector<std::size_t>>(),
                       m.at("float32_bits").get<std::vector<std::uint32_t>>()});
    }
    return out;
}

Array read_member(const std::vector<std::uint8_t>& zip, std::string_view member) {
    return parse_npy(npz_member_bytes(zip, member, "x.npz"), member);
}

/// Runs `f`, expects InputError with a one-line message matching `pattern`.
template <class F> void expect_input_error(F f, const std::string& pattern) {
    try {
        f();
        ADD_FAILURE() << "no InputError; expected /" << pattern << "/";
    } catch (const InputError& e) {
        const std::string what = e.what();
        EXPECT_TRUE(std::regex_search(what, std::regex(pattern))) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
}

/// Offset of the first occurrence of a 4-byte zip signature.
std::size_t find_signature(const std::vector<std::uint8_t>& zip, std::uint32_t signature) {
    for (std::size_t i = 0; i + 4 <= zip.size(); ++i) {
        std::uint32_t s = 0;
        std::memcpy(&s, zip.data() + i, 4);
        if (s == signature) {
            return i;
        }
    }
    throw std::logic_error("signature not found");
}

TEST(NpzNumpy, EveryDtypeInBothArchiveKinds) {
    const std::vector<Member> members = numpy_members();
    EXPECT_EQ(members.size(), 12U);
    for (const std::string kind : {"savez", "savez_compressed"}) {
        const std::vector<std::uint8_t> zip = archive(kind);
        for (const Member& m : members) {
            SCOPED_TRACE(kind + ":" + m.name);
            const Array x = read_member(zip, m.name);
            EXPECT_EQ(x.shape, m.shape);
            ASSERT_EQ(x.values.size(), m.float32_bits.size());
            for (std::size_t i = 0; i < x.values.size(); ++i) {
                EXPECT_EQ(std::bit_cast<std::uint32_t>(x.values[i]), m.float32_bits[i])
                    << "element " << i << " = " << x.values[i];
            }
        }
    }
}

TEST(NpzNumpy, MembersInArchiveOrderWithDtypes) {
    const std::vector<Member> members = numpy_members();
    const std::vector<std::string> names = npz_members(archive("savez"), "x.npz");
    ASSERT_EQ(names.size(), members.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(names[i], members[i].name);
    }
    EXPECT_TRUE(read_member(archive("savez_compressed"), "mask").is_bool);
    EXPECT_EQ(read_member(archive("savez"), "i2_be").dtype, "int16");
}

TEST(NpzRef, SplitsFileAndMember) {
    EXPECT_FALSE(parse_npz_ref("x.npy"));
    EXPECT_FALSE(parse_npz_ref("x.npzz"));
    EXPECT_FALSE(parse_npz_ref("dir:1/x.npy"));
    const auto bare = parse_npz_ref("data/X.NPZ");
    ASSERT_TRUE(bare);
    EXPECT_EQ(bare->file, "data/X.NPZ");
    EXPECT_EQ(bare->member, "");
    const auto named = parse_npz_ref("dir:1/x.npz:key");
    ASSERT_TRUE(named);
    EXPECT_EQ(named->file, "dir:1/x.npz");
    EXPECT_EQ(named->member, "key");
    EXPECT_EQ(attn::io::npz_member_for(*bare, "params.w_q"), "w_q");
    EXPECT_EQ(attn::io::npz_member_for(*bare, "query"), "query");
    EXPECT_EQ(attn::io::npz_member_for(*named, "query"), "key");
}

TEST(NpzRefused, MissingMemberListsTheArrays) {
    expect_input_error([] { read_member(archive("savez"), "query"); },
                       "^x\\.npz:query: no array 'query' in the archive \\(it has: f2, f4, "
                       "f8_fortran, .*mask; name one as FILE\\.npz:NAME\\)$");
    expect_input_error([] { read_member(archive("savez"), ""); },
                       "^x\\.npz: the archive holds 12 arrays: name one as FILE\\.npz:NAME$");
}

TEST(NpzRefused, NotAZip) {
    expect_input_error([] { npz_members(bytes_of("\x93NUMPY not a zip"sv), "x.npz"); },
                       "^x\\.npz: not a readable \\.npz \\(zip\\) archive: ");
    expect_input_error([] { npz_members({}, "x.npz"); },
                       "^x\\.npz: not a readable .*: the file is empty$");
}

TEST(NpzRefused, TruncatedArchives) {
    for (const char* kind : {"savez", "savez_compressed"}) {
        const std::vector<std::uint8_t> zip = archive(kind);
        for (const std::size_t keep :
             {zip.size() - 1, zip.size() - 22, zip.size() / 2, std::size_t{30}}) {
            SCOPED_TRACE(std::string(kind) + " cut to " + std::to_string(keep));
            const std::vector<std::uint8_t> cut(zip.begin(),
                                                zip.begin() + static_cast<std::ptrdiff_t>(keep));
            expect_input_error([&] { read_member(cut, "f4"); }, "^x\\.npz(:f4)?: ");
        }
    }
}

TEST(NpzRefused, BadCentralDirectory) {
    // The end-of-central-directory record says where the directory starts (offset 16):
    // point it elsewhere, and separately break the first directory entry's signature.
    std::vector<std::uint8_t> zip = archive("savez");
    const std::size_t eocd = find_signature(zip, 0x06054b50u);
    std::vector<std::uint8_t> moved = zip;
    moved[eocd + 16] ^= 0x5a;
    expect_input_error([&] { read_member(moved, "f4"); }, "^x\\.npz(:f4)?: ");
    std::vector<std::uint8_t> broken = zip;
    broken[find_signature(zip, 0x02014b50u)] = 'X';
    expect_input_error([&] { read_member(broken, "f4"); }, "^x\\.npz(:f4)?: ");
}

TEST(NpzRefused, CrcMismatch) {
    // savez stores members uncompressed: change one payload byte of the last member
    // ("mask", bool: a 0 becomes 2) and its CRC-32 no longer matches.
    std::vector<std::uint8_t> zip = archive("savez");
    const std::size_t directory = find_signature(zip, 0x02014b50u);
    std::size_t at = directory;
    while (zip[at - 1] != 0) { // the mask's last bytes are 01 00 01; find its 00
        --at;
    }
    zip[at - 1] = 2;
    expect_input_error([&] { read_member(zip, "mask"); },
                       "^x\\.npz:mask: corrupt archive member: .*CRC");
}

/// A one-member archive written with libzip: `npy` deflated as NAME.npy.
std::vector<std::uint8_t> deflated_archive(const std::string& name,
                                           const std::vector<std::uint8_t>& npy) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_buffer_create(nullptr, 0, 0, &error);
    zip_t* za = zip_open_from_source(src, ZIP_TRUNCATE, &error);
    zip_source_keep(src);
    zip_source_t* member = zip_source_buffer(za, npy.data(), npy.size(), 0);
    const zip_int64_t idx = zip_file_add(za, (name + ".npy").c_str(), member, 0);
    zip_set_file_compression(za, static_cast<zip_uint64_t>(idx), ZIP_CM_DEFLATE, 9);
    zip_close(za);
    zip_source_open(src);
    zip_source_seek(src, 0, SEEK_END);
    const zip_int64_t size = zip_source_tell(src);
    zip_source_seek(src, 0, SEEK_SET);
    std::vector<std::uint8_t> out(static_cast<std::size_t>(size));
    zip_source_read(src, out.data(), static_cast<zip_uint64_t>(size));
    zip_source_close(src);
    zip_source_free(src);
    zip_error_fini(&error);
    return out;
}

TEST(NpzRefused, ZipBombIsRefusedBeforeAllocating) {
    // 8 MiB of zeros deflate to a few KiB; with a 1 MiB limit the declared size is refused.
    std::vector<std::uint8_t> npy(8u << 20, 0);
    const std::string_view header = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', "
                                    "'fortran_order': False, 'shape': (2097120,), }"sv;
    std::memcpy(npy.data(), header.data(), header.size());
    std::memset(npy.data() + header.size(), ' ', 127 - header.size());
    npy[127] = '\n';
    const std::vector<std::uint8_t> zip = deflated_archive("query", npy);
    ASSERT_LT(zip.size(), 64u << 10);
    const std::uint64_t saved = attn::io::memory_limit();
    attn::io::set_memory_limit(1u << 20);
    expect_input_error([&] { read_member(zip, "query"); },
                       "^x\\.npz:query: the member is 8\\.0 MiB uncompressed, more than the "
                       "memory limit of 1\\.0 MiB \\(--max-memory\\)$");
    attn::io::set_memory_limit(saved);
    EXPECT_EQ(read_member(zip, "query").values.size(), 2097120u);
}

TEST(NpzFiles, ReadArrayFileTakesTheFieldsMember) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("attn_npz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::vector<std::uint8_t> zip = archive("savez_compressed");
    std::ofstream(dir / "x.npz", std::ios::binary)
        .write(reinterpret_cast<const char*>(zip.data()), static_cast<std::streamsize>(zip.size()));
    using attn::io::ArrayKind;
    using attn::io::Precision;
    const Array f4 = attn::io::read_array_file(
        dir / "x.npz", ArrayKind::numeric, Precision::f32, {}, "params.f4");
    EXPECT_EQ(f4.shape, (std::vector<std::size_t>{2, 3}));
    const std::string named = (dir / "x.npz").string() + ":i8";
    EXPECT_EQ(attn::io::read_array_file(named, ArrayKind::numeric).values.size(), 3u);
    const Array f8 = attn::io::read_array_file(
        named.substr(0, named.size() - 2) + "f8_fortran", ArrayKind::numeric, Precision::f64, {});
    ASSERT_EQ(f8.values64.size(), 6u);
    EXPECT_EQ(f8.values64[1], 1.0 / 3.0); // [0, 1] of arange(6).reshape(2, 3) / 3, exactly
    expect_input_error(
        [&] { attn::io::read_array_file(dir / "missing.npz:q", ArrayKind::numeric); },
        "missing\\.npz: cannot read: No such file or directory$");
    std::filesystem::remove_all(dir);
}

TEST(NpzWrite, FileIsTheArchiveOfTheEncodingsStreamed) {
    // Members past the 1 MiB pieces (float32 in place, f16 and f64 through a buffer, float64
    // values written as f32), an int64 array: the file is encode_npz's archive byte for byte,
    // and libzip reads each member back with its CRC-32 checked.
    Array big;
    big.shape = {3, 100001}; // 1.14 MiB of float32
    for (std::size_t i = 0; i < 300003; ++i) {
        big.values.push_back(static_cast<float>(i % 977) * 0.25f - 3.0f);
    }
    Array exact;
    exact.shape = {2, 70000};
    for (std::size_t i = 0; i < 140000; ++i) {
        exact.values64.push_back(1.0 / static_cast<double>(i + 3));
        exact.values.push_back(static_cast<float>(exact.values64.back()));
    }
    Array ids;
    ids.shape = {4};
    ids.dtype = "int64";
    ids.values = {0, 7, 128255, 2};
    const std::vector<NpzArray> arrays = {{"output", &big, NpyFloat::f32},
                                          {"weights", &big, NpyFloat::f16},
                                          {"lse", &exact, NpyFloat::f64},
                                          {"entropy", &exact, NpyFloat::f32},
                                          {"token_ids", &ids, NpyFloat::f32}};
    std::vector<NpzMember> members;
    for (const NpzArray& a : arrays) {
        members.push_back({a.name,
                           a.array->dtype == "int64" ? encode_npy_int64(*a.array)
                                                     : encode_npy(*a.array, a.type)});
    }
    const std::vector<std::uint8_t> expected = encode_npz(members);
    const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                       ("attn_npz_w_" + std::to_string(::getpid()) + ".npz");
    write_npz_file(file, arrays);
    const std::vector<std::uint8_t> got = read_file(file);
    std::filesystem::remove(file);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_TRUE(got == expected);
    EXPECT_EQ(read_member(got, "lse").values64.size(), 0U); // read as float32
    const Array lse = parse_npy(npz_member_bytes(got, "lse", "x.npz"), "lse", Precision::f64);
    EXPECT_EQ(lse.values64, exact.values64);
    EXPECT_EQ(read_member(got, "output").values, big.values);
    EXPECT_EQ(read_member(got, "token_ids").values, ids.values);
}

TEST(NpzFiles, HintsForFilesUsersHave) {
    using attn::io::ArrayKind;
    expect_input_error([] { attn::io::read_array_file("model.pt", ArrayKind::numeric); },
                       "^model\\.pt: unknown array format \\(expected \\.npy, \\.json or "
                       "\\.npz\\); .*np\\.save.*\\.safetensors$");
    expect_input_error([] { attn::io::read_array_file("m.GGUF", ArrayKind::numeric); },
                       "a GGUF file is a whole model, not an array: give it as --params");
    expect_input_error([] { attn::io::array_format_for("out.npz"); },
                       "^out\\.npz: unknown array format \\(expected \\.npy or \\.json\\)$");
}

} // namespace
} // namespace attn::io

// .npz archives, as numpy's savez and savez_compressed write them: a zip file whose members
// are .npy files. The zip layer is libzip's (Debian libzip-dev): it reads the central
// directory, ZIP64 and data descriptors, inflates, and checks each member's CRC-32 and the
// archive's consistency (ZIP_CHECKCONS). What libzip does not decide for us is checked here
// before anything is allocated: a member's declared size against the memory limit (a zip
// bomb declares little compressed data and a huge size), encryption, and the NPY bytes
// themselves, which go to the strict NPY reader.
#pragma once

#include "attn/io/array.hpp"
#include "attn/io/npy.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::io {

/// An array path that names a .npz archive: "x.npz" (member chosen by the caller, e.g. the
/// field's name) or "x.npz:name" (member `name`, stored as "name.npy").
struct NpzRef {
    std::filesystem::path file;
    std::string member; ///< empty: not given
};

/// "x.npz" -> {x.npz, ""}; "x.npz:query" -> {x.npz, "query"} (the extension is matched
/// case-insensitively); anything else -> nullopt (not an archive path).
std::optional<NpzRef> parse_npz_ref(const std::string& path);

/// The member a reference reads: its own name, else the field's ("query"; the last
/// component of "params.w_q"), else "" (the archive's only array).
std::string npz_member_for(const NpzRef& ref, std::string_view field);

/// The array names in an archive (member names without ".npy"), in archive order.
/// `name` prefixes every message. Throws InputError for anything that is not a readable
/// zip archive.
std::vector<std::string> npz_members(std::span<const std::uint8_t> archive, std::string_view name);

/// The bytes of member `member` + ".npy" of an in-memory archive, decompressed and
/// CRC-checked; its declared size is checked against memory_limit() before it is read.
/// Throws InputError("NAME: ...") naming the member, and listing the archive's arrays
/// when it is missing.
std::vector<std::uint8_t> npz_member_bytes(std::span<const std::uint8_t> archive,
                                           std::string_view member,
                                           std::string_view name);

/// Reads array `member` of the archive at `file` (a regular file is read in place by
/// libzip; a pipe or device is read whole, within the memory limit) and parses it as NPY;
/// an empty `member` takes the archive's only array. Messages name "FILE:MEMBER".
/// Throws InputError.
Array read_npz_array(const std::filesystem::path& file,
                     std::string_view member,
                     Precision precision = Precision::f32);

/// One member of an archive to write: its array name (stored as NAME.npy) and NPY bytes.
struct NpzMember {
    std::string name;
    std::vector<std::uint8_t> npy;
};

/// An archive as numpy's np.savez writes it (uncompressed, "stored" members, in order),
/// that np.load reads back. Throws InputError when the archive would reach 4 GiB (no
/// ZIP64 here: write the arrays as .npy files instead).
std::vector<std::uint8_t> encode_npz(const std::vector<NpzMember>& members);

/// One member written from an array: float values as `type` (from the float64 values
/// when the array has them, as encode_npy), an "int64" array as encode_npy_int64.
struct NpzArray {
    std::string name;
    const Array* array = nullptr;
    NpyFloat type = NpyFloat::f32;
};

/// encode_npz's archive of these arrays' NPY encodings, written to `path` as write_npy_file
/// writes: a regular file gets each member's bytes as they are encoded, 1 MiB at a time,
/// its CRC-32 patched into its header after them (no encoded copy of a large result in
/// memory); "-" and devices get the whole encoding. Throws InputError past 4 GiB (before
/// anything is written), SystemError("PATH: cannot write: REASON").
void write_npz_file(const std::filesystem::path& path, const std::vector<NpzArray>& arrays);

} // namespace attn::io

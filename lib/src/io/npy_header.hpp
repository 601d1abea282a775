// The NPY header, shared by the NPY reader and writer: the magic, the dtypes we read,
// and the checked parse of a header against the size of its file.
#pragma once

#include "attn/io/npy.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace attn::io::detail {

constexpr std::array<std::uint8_t, 6> npy_magic = {0x93, 'N', 'U', 'M', 'P', 'Y'};

enum class ElementKind { floating, signed_int, unsigned_int, boolean };

/// One supported NPY element type, decoded from a descr string such as "<f4".
struct DType {
    ElementKind kind = ElementKind::floating;
    std::size_t size = 0;    ///< bytes per element
    bool big_endian = false; ///< swap bytes when reading
    const char* name = "";   ///< numpy's name: "float32", ...
};

/// Decodes a descr: an optional byte order ('<' little, '>' big, '=' and '|' native, which
/// we take as little endian) followed by a type code we read. Throws InputError.
DType parse_descr(std::string_view descr, std::string_view name);

/// Checks the magic, the version and the header length field (in the first 12 bytes, or
/// fewer when the file is shorter) against the file size; returns the payload offset.
std::size_t npy_header_end(std::span<const std::uint8_t> bytes,
                           std::uint64_t file_size,
                           const std::string& prefix);

/// parse_npy_header for a file of `file_size` bytes of which `bytes` holds at least the
/// preamble and the header.
NpyHeader parse_npy_header_sized(std::span<const std::uint8_t> bytes,
                                 std::uint64_t file_size,
                                 std::string_view name);

/// A regular .npy file read from `fd` (at its start), header first: nothing is allocated
/// for the payload before its size has been checked against the file size and the memory
/// limit, and the payload is decoded in chunks as it is read (no second copy of it in
/// memory). With a sink, the float32 values go where it says (see ValueSink).
Array read_npy_file(int fd,
                    std::uint64_t file_size,
                    const std::string& shown,
                    Precision precision,
                    const ValueSink* sink = nullptr);

} // namespace attn::io::detail

// NPY bytes built by the tests of the NPY reader (npy_test, npy_header_test, npy_encode_test):
// a file around any header dict, numpy's usual dict, payloads in either byte order, and the
// check of parse_npy's one-line errors.
#pragma once

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "unit/test_files.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace attn::testing {

/// An NPY file around `dict`: magic, version, header length (2 bytes for v1, 4 for v2/v3),
/// the dict padded with spaces and a '\n' the way numpy does (a multiple of 64 in all, or
/// exactly `total_header` bytes when given), then the payload. pad = false: the dict as is.
inline std::vector<std::uint8_t> make_npy(std::string_view dict,
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
inline std::string dict_for(std::string_view descr, std::string_view shape, bool fortran = false) {
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

/// parse_npy(file, "q.npy") must throw an InputError: one line, "q.npy: ..." containing
/// `needle`. Returns the message.
inline std::string expect_npy_error(const std::vector<std::uint8_t>& file,
                                    std::string_view needle) {
    return expect_error_message<InputError>(
        [&] { (void)io::parse_npy(file, "q.npy"); }, "q.npy: ", needle);
}

} // namespace attn::testing

// Helpers shared by the readers of io and of the layers above it (model, text), not by the
// front ends: message pieces, overflow-checked sizes, raw file descriptors, and the errors
// of reading and writing.
#pragma once

#include "attn/error.hpp"
#include "attn/half.hpp"
#include "attn/io/array.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/number_text.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace attn::io::detail {

/// A name from a file, quoted for a one-line message.
inline std::string quote_name(std::string_view s) {
    return "'" + message_text(s, 120) + "'";
}

/// strerror(err), but thread-safe (libstdc++ uses strerror_r).
inline std::string errno_text(int err) {
    return std::system_category().message(err);
}

/// `text` with control characters and DEL escaped as \xNN (and, with ascii_only, every
/// byte above 0x7f and the backslash too), cut to `max_chars` bytes with "..." appended.
/// message_text is the public form; printable the strict one.
std::string escaped_text(std::string_view text, std::size_t max_chars, bool ascii_only);

/// `text` with anything outside printable ASCII escaped as \xNN, cut to `max_chars`, so that
/// bytes from a hostile file can never break the one-line message rule.
inline std::string printable(std::string_view text, std::size_t max_chars = 40) {
    return escaped_text(text, max_chars, true);
}

/// "1 element", "3 elements".
inline std::string elements(std::size_t n) {
    return std::to_string(n) + (n == 1 ? " element" : " elements");
}

/// a * b, or false when it overflows size_t.
inline bool checked_mul(std::size_t a, std::size_t b, std::size_t& out) {
    if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) {
        return false;
    }
    out = a * b;
    return true;
}

/// Elements of a (validated) header's shape; () has one.
inline std::size_t element_count(const std::vector<std::size_t>& shape) {
    std::size_t count = 1;
    for (const std::size_t d : shape) {
        count *= d;
    }
    return count;
}

/// The columns of a matrix whose rows `rows` are asked for (read_rows). Throws
/// InputError("WHERE: expected a matrix, got shape [..]") or ("WHERE: row R of N rows").
inline std::size_t check_matrix_rows(const std::vector<std::size_t>& shape,
                                     std::span<const std::size_t> rows,
                                     const std::string& where) {
    if (shape.size() != 2) {
        throw InputError(where + "expected a matrix, got shape " + shape_string(shape));
    }
    for (const std::size_t r : rows) {
        if (r >= shape[0]) {
            throw InputError(where + "row " + std::to_string(r) + " of " +
                             std::to_string(shape[0]) + " rows");
        }
    }
    return shape[1];
}

/// The Python repr of a shape tuple, as numpy writes it: (), (3,), (2, 3).
inline std::string python_shape(const std::vector<std::size_t>& shape) {
    std::string out = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) {
            out += ", ";
        }
        out += std::to_string(shape[i]);
    }
    if (shape.size() == 1) {
        out += ',';
    }
    out += ')';
    return out;
}

/// True when an Array carries exact float64 values (a precision f64 result): writers use
/// them rather than their float32 rounding.
inline bool has_exact_values(const Array& a) {
    return !a.values64.empty() && a.values64.size() == a.values.size();
}

/// A path as messages show it: whole, but with control characters escaped.
inline std::string shown_path(const std::string& path) {
    return message_text(path, 4096);
}

/// Bytes of payload read and decoded at a time by the NPY reader and writer.
constexpr std::size_t npy_chunk_bytes = std::size_t{1} << 20;

/// Opens a file for reading. Throws InputError("PATH: cannot read: ...").
int open_for_reading(const std::string& file);

/// Reads up to n bytes (fewer only at the end of the file). Returns the count, or -errno.
std::ptrdiff_t read_some(int fd, std::uint8_t* dst, std::size_t n);

/// Exactly n bytes or InputError: "cannot read" on an error, "truncated" when the file
/// ends early (it shrank while we read it).
void read_exactly(int fd, std::uint8_t* dst, std::size_t n, const std::string& shown);

/// Exactly n bytes at `offset` (pread: the file position is not used) or InputError:
/// "cannot read" on an error, "truncated" when the file ends early.
void pread_exactly(
    int fd, std::uint8_t* dst, std::size_t n, std::uint64_t offset, const std::string& shown);

/// Throws SystemError("PATH: cannot write: REASON"); err 0 is reported as EIO.
[[noreturn]] void throw_write_error(const std::string& path, int err);

/// binary16 conversions (attn/half.hpp), for the NPY and safetensors readers and writers.
using attn::double_to_half;
using attn::floats_to_halves;
using attn::half_to_float;

/// JSON text of a file parsed by nlohmann after the guards of json_text.hpp, its errors as
/// "PATH: invalid JSON: byte N: DETAIL". Throws InputError.
nlohmann::json parse_json_file_text(std::string_view text, const std::string& shown);

} // namespace attn::io::detail

// The NPY header (versions 1, 2, 3): the preamble, the strict parse of its Python dict
// literal, the dtypes we read, and the overflow-checked payload size compared with the
// bytes actually present, all before anything is allocated for the payload.
#include "npy_header.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace attn::io {
namespace detail {
namespace {

constexpr std::size_t npy_max_rank = 32;

/// The dtypes we read, by type code (the descr without its byte-order character).
struct DTypeEntry {
    std::string_view code;
    ElementKind kind;
    std::size_t size;
    const char* name;
};
constexpr std::array<DTypeEntry, 13> dtype_table = {{
    {"f2", ElementKind::floating, 2, "float16"},
    {"f4", ElementKind::floating, 4, "float32"},
    {"f8", ElementKind::floating, 8, "float64"},
    {"i1", ElementKind::signed_int, 1, "int8"},
    {"i2", ElementKind::signed_int, 2, "int16"},
    {"i4", ElementKind::signed_int, 4, "int32"},
    {"i8", ElementKind::signed_int, 8, "int64"},
    {"u1", ElementKind::unsigned_int, 1, "uint8"},
    {"u2", ElementKind::unsigned_int, 2, "uint16"},
    {"u4", ElementKind::unsigned_int, 4, "uint32"},
    {"u8", ElementKind::unsigned_int, 8, "uint64"},
    {"b1", ElementKind::boolean, 1, "bool"},
    {"?", ElementKind::boolean, 1, "bool"},
}};

/// The strict parser of the header's Python dict literal, e.g.
/// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
/// Keys in any order, each exactly once; whitespace anywhere between tokens; trailing
/// commas allowed. No escapes, no string prefixes, no expressions.
class HeaderParser {
  public:
    HeaderParser(std::string_view text, std::string_view name, int major_version)
        : text_(text), name_(name), major_version_(major_version) {}

    void parse(NpyHeader& header) {
        bool seen_descr = false;
        bool seen_fortran = false;
        bool seen_shape = false;
        skip_ws();
        expect('{', "the header to start with '{'");
        for (;;) {
            skip_ws();
            if (peek() == '}') {
                ++pos_;
                break;
            }
            const std::string key = parse_string("a quoted key");
            skip_ws();
            expect(':', "':' after key '" + printable(key) + "'");
            skip_ws();
            if (key == "descr") {
                mark_seen(seen_descr, key);
                if (peek() == '[' || peek() == '(') {
                    fail("structured dtypes are not supported (descr is a list)");
                }
                header.descr = parse_string("a quoted string for 'descr'");
            } else if (key == "fortran_order") {
                mark_seen(seen_fortran, key);
                header.fortran_order = parse_bool();
            } else if (key == "shape") {
                mark_seen(seen_shape, key);
                header.shape = parse_shape();
            } else {
                fail("unexpected key '" + printable(key) +
                     "' (expected 'descr', 'fortran_order', 'shape')");
            }
            skip_ws();
            if (peek() == ',') {
                ++pos_;
            } else if (peek() != '}') {
                fail("expected ',' or '}' " + where());
            }
        }
        skip_ws();
        if (pos_ != text_.size()) {
            fail("unexpected text after the closing '}' " + where());
        }
        if (!seen_descr) {
            fail("missing key 'descr'");
        }
        if (!seen_fortran) {
            fail("missing key 'fortran_order'");
        }
        if (!seen_shape) {
            fail("missing key 'shape'");
        }
    }

  private:
    [[noreturn]] void fail(const std::string& detail) const {
        throw InputError(std::string(name_) + ": bad NPY header: " + detail);
    }

    std::string where() const {
        if (pos_ >= text_.size()) {
            return "at the end of the header";
        }
        return "at header byte " + std::to_string(pos_) + " ('" + printable(text_.substr(pos_, 1)) +
               "')";
    }

    /// The next character, or '\0' at the end (never a valid token character here).
    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

    void skip_ws() {
        // Inside brackets Python ignores spaces, tabs, form feeds and line breaks.
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                text_[pos_] == '\r' || text_[pos_] == '\f')) {
            ++pos_;
        }
    }

    void expect(char c, const std::string& what) {
        if (pos_ >= text_.size() || text_[pos_] != c) {
            fail("expected " + what + " " + where());
        }
        ++pos_;
    }

    void mark_seen(bool& seen, const std::string& key) const {
        if (seen) {
            fail("duplicate key '" + key + "'");
        }
        seen = true;
    }

    /// 'text' or "text", without escapes or line breaks.
    std::string parse_string(const std::string& what) {
        const char quote = peek();
        if (quote != '\'' && quote != '"') {
            fail("expected " + what + " " + where());
        }
        const std::size_t start = ++pos_;
        while (pos_ < text_.size() && text_[pos_] != quote) {
            const char c = text_[pos_];
            if (c == '\n' || c == '\r') {
                fail("unterminated string");
            }
            if (c == '\\') {
                fail("unsupported character in a string (escapes are not allowed) " + where());
            }
            ++pos_;
        }
        if (pos_ >= text_.size()) {
            fail("unterminated string");
        }
        std::string out(text_.substr(start, pos_ - start));
        ++pos_;
        return out;
    }

    bool parse_bool() {
        const std::size_t start = pos_;
        while (pos_ < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[pos_])) != 0 || text_[pos_] == '_')) {
            ++pos_;
        }
        const std::string_view word = text_.substr(start, pos_ - start);
        if (word == "True") {
            return true;
        }
        if (word == "False") {
            return false;
        }
        pos_ = start;
        fail("expected True or False for 'fortran_order' " + where());
    }

    /// (), (3,), (2, 3), (2, 3,) — a Python tuple of non-negative integers.
    std::vector<std::size_t> parse_shape() {
        expect('(', "a tuple such as (2, 3) for 'shape'");
        std::vector<std::size_t> dims;
        skip_ws();
        if (peek() == ')') {
            ++pos_;
            return dims;
        }
        bool trailing_comma = false;
        for (;;) {
            if (dims.size() == npy_max_rank) {
                fail("shape has more than " + std::to_string(npy_max_rank) + " dimensions");
            }
            dims.push_back(parse_dim());
            skip_ws();
            if (peek() == ',') {
                ++pos_;
                skip_ws();
                if (peek() == ')') {
                    ++pos_;
                    trailing_comma = true;
                    break;
                }
                continue;
            }
            if (peek() == ')') {
                ++pos_;
                break;
            }
            fail("expected ',' or ')' in 'shape' " + where());
        }
        if (dims.size() == 1 && !trailing_comma) {
            fail("'shape' is not a tuple (a 1-d shape is written (N,))");
        }
        return dims;
    }

    /// A Python int literal: digits, no sign, no leading zeros. NPY v1/v2 headers written
    /// by Python 2 may carry a long suffix 'L', which numpy itself still strips.
    std::size_t parse_dim() {
        if (peek() == '-') {
            fail("negative dimension in 'shape' " + where());
        }
        const std::size_t start = pos_;
        std::size_t value = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            const auto digit = static_cast<std::size_t>(text_[pos_] - '0');
            if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) {
                fail("dimension in 'shape' is too large");
            }
            value = value * 10 + digit;
            ++pos_;
        }
        if (pos_ == start) {
            fail("expected a dimension (a non-negative integer) in 'shape' " + where());
        }
        if (text_[start] == '0' && pos_ - start > 1) {
            fail("dimension with a leading zero in 'shape'");
        }
        if (major_version_ < 3 && peek() == 'L') {
            ++pos_;
        }
        return value;
    }

    std::string_view text_;
    std::string_view name_;
    int major_version_;
    std::size_t pos_ = 0;
};

/// NPY headers longer than this are refused (numpy itself refuses more than 10000 bytes
/// by default): a hostile length field cannot make us read or allocate gigabytes.
constexpr std::size_t max_npy_header_bytes = std::size_t{1} << 20;

} // namespace

DType parse_descr(std::string_view descr, std::string_view name) {
    std::string_view code = descr;
    char order = '=';
    if (!code.empty() && (code[0] == '<' || code[0] == '>' || code[0] == '=' || code[0] == '|')) {
        order = code[0];
        code.remove_prefix(1);
    }
    for (const DTypeEntry& entry : dtype_table) {
        if (entry.code == code) {
            return DType{.kind = entry.kind,
                         .size = entry.size,
                         .big_endian = order == '>' && entry.size > 1,
                         .name = entry.name};
        }
    }
    throw InputError(std::string(name) + ": unsupported dtype '" + printable(descr) +
                     "' (expected f2, f4, f8, i1-i8, u1-u8 or b1, in either byte order)");
}

std::size_t npy_header_end(std::span<const std::uint8_t> bytes,
                           std::uint64_t file_size,
                           const std::string& prefix) {
    if (file_size == 0) {
        throw InputError(prefix + ": not an NPY file (the file is empty)");
    }
    if (bytes.size() < npy_magic.size() ||
        !std::equal(npy_magic.begin(), npy_magic.end(), bytes.begin())) {
        throw InputError(prefix + ": not an NPY file (bad magic)");
    }
    if (bytes.size() < 8) {
        throw InputError(prefix + ": truncated header (the file ends inside the NPY preamble)");
    }
    const int major = bytes[6];
    const int minor = bytes[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0) {
        throw InputError(prefix + ": unsupported NPY version " + std::to_string(major) + "." +
                         std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)");
    }
    // v1: 2-byte little-endian header length; v2 and v3: 4 bytes.
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    const std::size_t preamble = 8 + length_bytes;
    if (bytes.size() < preamble) {
        throw InputError(prefix + ": truncated header (the file ends inside the NPY preamble)");
    }
    std::size_t header_length = 0;
    for (std::size_t k = length_bytes; k-- > 0;) {
        header_length = (header_length << 8) | bytes[8 + k];
    }
    if (header_length > file_size - preamble) {
        throw InputError(prefix + ": truncated header: it says " + std::to_string(header_length) +
                         " bytes, the file has " + std::to_string(file_size - preamble));
    }
    if (header_length > max_npy_header_bytes) {
        throw InputError(prefix + ": bad NPY header: " + std::to_string(header_length) +
                         " bytes is too long (at most " + std::to_string(max_npy_header_bytes) +
                         ")");
    }
    return preamble + header_length;
}

NpyHeader parse_npy_header_sized(std::span<const std::uint8_t> bytes,
                                 std::uint64_t file_size,
                                 std::string_view name) {
    const std::string prefix(name);
    const std::size_t end =
        npy_header_end(bytes.first(std::min<std::size_t>(bytes.size(), 12)), file_size, prefix);
    ATTN_ASSERT(end <= bytes.size());
    NpyHeader header;
    header.major_version = bytes[6];
    header.header_bytes = end;
    const std::size_t preamble = header.major_version == 1 ? 10 : 12;
    // v1/v2 headers are latin-1 and v3 headers UTF-8, but every valid token is ASCII, so a
    // byte-wise parse rejects exactly what a decoding parse would reject.
    const std::string_view text(reinterpret_cast<const char*>(bytes.data() + preamble),
                                end - preamble);
    HeaderParser(text, name, header.major_version).parse(header);

    const DType type = parse_descr(header.descr, name);
    header.item_size = type.size;
    header.dtype = type.name;

    // Overflow-checked size of the payload, compared with what is there before any
    // allocation: a hostile shape cannot make us allocate anything. The product of the
    // non-zero dimensions is checked too, so that an empty array cannot carry dimensions
    // whose products overflow further down.
    std::size_t count = 1;
    std::size_t nonzero = 1;
    std::size_t payload = 0;
    for (const std::size_t d : header.shape) {
        if (!checked_mul(count, d, count) || (d != 0 && !checked_mul(nonzero, d, nonzero))) {
            throw InputError(prefix + ": shape " + python_shape(header.shape) +
                             " is too large (its element count overflows)");
        }
    }
    if (!checked_mul(count, type.size, payload)) {
        throw InputError(prefix + ": shape " + python_shape(header.shape) +
                         " is too large (its byte size overflows)");
    }
    const std::uint64_t present = file_size - header.header_bytes;
    if (payload > present) {
        throw InputError(prefix + ": truncated: header says " + std::to_string(payload) +
                         " bytes of data, file has " + std::to_string(present));
    }
    return header;
}

} // namespace detail

NpyHeader parse_npy_header(std::span<const std::uint8_t> bytes, std::string_view name) {
    return detail::parse_npy_header_sized(bytes, bytes.size(), name);
}

} // namespace attn::io

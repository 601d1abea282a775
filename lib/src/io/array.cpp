// Strict readers and writers for arrays: NPY files (v1-v3; f2/f4/f8, i1-i8, u1-u8, b1 in
// either byte order, C or Fortran order), JSON array literals, shortest round-trip float
// text, and whole-or-nothing file writes. It never trusts a header: every size is checked
// against the bytes actually present before anything is allocated. It does not decide
// what an array means (which ranks a field takes is the caller's business).
#include "attn/io/array.hpp"

#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npz.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <pthread.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <utility>

namespace attn::io {
namespace {

namespace fs = std::filesystem;

/// strerror(err), but thread-safe (libstdc++ uses strerror_r).
std::string errno_text(int err) {
    return std::system_category().message(err);
}

/// `text` with anything outside printable ASCII escaped as \xNN, cut to `max_chars`, so that
/// bytes from a hostile file can never break the one-line message rule.
std::string printable(std::string_view text, std::size_t max_chars = 40) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (i == max_chars) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        }
    }
    return out;
}

/// "1 element", "3 elements".
std::string elements(std::size_t n) {
    return std::to_string(n) + (n == 1 ? " element" : " elements");
}

/// a * b, or false when it overflows size_t.
bool checked_mul(std::size_t a, std::size_t b, std::size_t& out) {
    if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) {
        return false;
    }
    out = a * b;
    return true;
}

// ---------------------------------------------------------------------------------------
// NPY
// ---------------------------------------------------------------------------------------

constexpr std::array<std::uint8_t, 6> npy_magic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t npy_max_rank = 32;

enum class ElementKind { floating, signed_int, unsigned_int, boolean };

/// One supported NPY element type, decoded from a descr string such as "<f4".
struct DType {
    ElementKind kind = ElementKind::floating;
    std::size_t size = 0;    ///< bytes per element
    bool big_endian = false; ///< swap bytes when reading
    const char* name = "";   ///< numpy's name: "float32", ...
};

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

/// Decodes a descr: an optional byte order ('<' little, '>' big, '=' and '|' native, which
/// we take as little endian) followed by a type code from dtype_table.
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

/// IEEE binary16 -> binary32, exact for every input (subnormals, infinities, NaN payloads).
float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    const std::uint32_t mantissa = h & 0x3ffu;
    std::uint32_t bits = 0;
    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24 is a normal float32, computed exactly.
        const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
        bits = sign | std::bit_cast<std::uint32_t>(magnitude);
    } else if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13); // inf, or NaN keeping its payload
    } else {
        bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
    }
    return std::bit_cast<float>(bits);
}

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

/// Reads one N-byte element starting at p as an unsigned integer, in the file's byte order.
template <std::size_t N> std::uint64_t load_raw(const std::uint8_t* p, bool big_endian) {
    std::uint64_t raw = 0;
    if (big_endian) {
        for (std::size_t k = 0; k < N; ++k) {
            raw = (raw << 8) | p[k];
        }
    } else {
        for (std::size_t k = N; k-- > 0;) {
            raw = (raw << 8) | p[k];
        }
    }
    return raw;
}

/// Decodes the source elements [first, first + n) of a payload (`src` points at element
/// `first`) into `dst`, the whole array in C order, converting each element with
/// `decode(raw bits)`. Fortran-ordered payloads are transposed on the way: an odometer over
/// the Fortran index (first axis fastest) keeps the matching C-order offset, so a payload
/// can be decoded in chunks as it is read.
template <std::size_t N, class Out, class Decode>
void decode_payload(const std::uint8_t* src,
                    std::size_t first,
                    std::size_t n,
                    const NpyHeader& header,
                    bool big_endian,
                    Out* dst,
                    Decode decode) {
    if (n == 0) {
        return; // and every dimension is non-zero below
    }
    const std::vector<std::size_t>& shape = header.shape;
    const std::size_t rank = shape.size();
    if (!header.fortran_order || rank < 2) {
        for (std::size_t i = 0; i < n; ++i) {
            dst[first + i] = decode(load_raw<N>(src + i * N, big_endian));
        }
        return;
    }
    std::vector<std::size_t> c_stride(rank, 1);
    for (std::size_t k = rank - 1; k-- > 0;) {
        c_stride[k] = c_stride[k + 1] * shape[k + 1]; // <= element count: no overflow
    }
    std::vector<std::size_t> index(rank, 0);
    std::size_t rest = first;
    std::size_t offset = 0;
    for (std::size_t k = 0; k < rank; ++k) {
        index[k] = rest % shape[k];
        rest /= shape[k];
        offset += index[k] * c_stride[k];
    }
    for (std::size_t i = 0; i < n; ++i) {
        dst[offset] = decode(load_raw<N>(src + i * N, big_endian));
        for (std::size_t k = 0; k < rank; ++k) { // next Fortran index: first axis fastest
            ++index[k];
            offset += c_stride[k];
            if (index[k] < shape[k]) {
                break;
            }
            offset -= c_stride[k] * shape[k];
            index[k] = 0;
        }
    }
}

/// Decodes source elements [first, first + count) (see decode_payload) of any dtype into
/// Out = float (rounded to nearest) or double (exact: every NPY dtype fits in a double
/// except 64-bit integers beyond 2^53, which round).
template <class Out>
void decode_npy(const std::uint8_t* src,
                std::size_t first,
                std::size_t count,
                const NpyHeader& header,
                const DType& type,
                Out* dst) {
    const bool be = type.big_endian;
    switch (type.kind) {
    case ElementKind::floating:
        if (type.size == 2) {
            decode_payload<2>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(half_to_float(static_cast<std::uint16_t>(r)));
            });
        } else if (type.size == 4) {
            decode_payload<4>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(std::bit_cast<float>(static_cast<std::uint32_t>(r)));
            });
        } else {
            // float: rounds to nearest; beyond float range gives ±inf, as numpy's astype(float32).
            decode_payload<8>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(std::bit_cast<double>(r));
            });
        }
        return;
    case ElementKind::signed_int:
        switch (type.size) {
        case 1:
            decode_payload<1>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(static_cast<std::int8_t>(r));
            });
            return;
        case 2:
            decode_payload<2>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(static_cast<std::int16_t>(r));
            });
            return;
        case 4:
            decode_payload<4>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(static_cast<std::int32_t>(r));
            });
            return;
        default:
            decode_payload<8>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(static_cast<std::int64_t>(r));
            });
            return;
        }
    case ElementKind::unsigned_int:
        switch (type.size) {
        case 1:
            decode_payload<1>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(r);
            });
            return;
        case 2:
            decode_payload<2>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(r);
            });
            return;
        case 4:
            decode_payload<4>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(r);
            });
            return;
        default:
            decode_payload<8>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(r);
            });
            return;
        }
    case ElementKind::boolean:
        // numpy reads any non-zero byte as True.
        decode_payload<1>(src, first, count, header, be, dst, [](std::uint64_t r) {
            return r != 0 ? Out(1) : Out(0);
        });
        return;
    }
}

/// Elements of a (validated) header's shape; () has one.
std::size_t element_count(const std::vector<std::size_t>& shape) {
    std::size_t count = 1;
    for (const std::size_t d : shape) {
        count *= d;
    }
    return count;
}

/// The Python repr of a shape tuple, as numpy writes it: (), (3,), (2, 3).
std::string python_shape(const std::vector<std::size_t>& shape) {
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

// ---------------------------------------------------------------------------------------
// JSON arrays
// ---------------------------------------------------------------------------------------

constexpr std::size_t json_max_rank = 4;

/// "a number", "an object", "null", ...
std::string json_kind(const nlohmann::json& j) {
    switch (j.type()) {
    case nlohmann::json::value_t::null:
        return "null";
    case nlohmann::json::value_t::object:
        return "an object";
    case nlohmann::json::value_t::array:
        return "an array";
    case nlohmann::json::value_t::string:
        return "a string";
    case nlohmann::json::value_t::boolean:
        return "a boolean";
    case nlohmann::json::value_t::binary:
        return "binary data";
    case nlohmann::json::value_t::discarded:
        return "a discarded value";
    default:
        return "a number";
    }
}

/// Walks a JSON array literal of a known shape, appending the leaves in C order.
class JsonArrayReader {
  public:
    JsonArrayReader(std::string_view name, ArrayKind kind, Array& out, bool f64)
        : name_(name), kind_(kind), out_(out), f64_(f64) {}

    void walk(const nlohmann::json& node, std::size_t depth) {
        const std::vector<std::size_t>& shape = out_.shape;
        if (depth == shape.size()) {
            leaf(node);
            return;
        }
        if (!node.is_array()) {
            fail("expected an array of " + elements(shape[depth]) + ", got " + json_kind(node));
        }
        if (node.size() != shape[depth]) {
            fail("expected " + elements(shape[depth]) + ", got " + std::to_string(node.size()));
        }
        const std::size_t path_length = path_.size();
        std::size_t i = 0;
        for (const nlohmann::json& child : node) {
            path_ += '[';
            path_ += std::to_string(i);
            path_ += ']';
            walk(child, depth + 1);
            path_.resize(path_length);
            ++i;
        }
    }

    std::size_t booleans() const { return booleans_; }

  private:
    [[noreturn]] void fail(const std::string& detail) const {
        throw InputError(std::string(name_) + ": " + (path_.empty() ? "" : path_ + ": ") + detail);
    }

    /// One element: rounded to float32, and exact in float64 when the reader keeps that.
    template <class N> void push(N exact) {
        // Rounds to nearest; beyond float range gives ±inf, as numpy's astype(float32).
        out_.values.push_back(static_cast<float>(exact));
        if (f64_) {
            out_.values64.push_back(static_cast<double>(exact));
        }
    }

    void leaf(const nlohmann::json& node) {
        switch (node.type()) {
        case nlohmann::json::value_t::number_float:
            push(node.get<double>());
            return;
        case nlohmann::json::value_t::number_integer:
            push(node.get<std::int64_t>());
            return;
        case nlohmann::json::value_t::number_unsigned:
            push(node.get<std::uint64_t>());
            return;
        case nlohmann::json::value_t::string: {
            const auto& text = node.get_ref<const std::string&>();
            if (text == "inf") {
                push(std::numeric_limits<double>::infinity());
            } else if (text == "-inf") {
                push(-std::numeric_limits<double>::infinity());
            } else if (text == "nan") {
                push(std::numeric_limits<double>::quiet_NaN());
            } else {
                fail("expected a number, got the string \"" + printable(text) +
                     "\" (only \"inf\", \"-inf\" and \"nan\" stand for numbers)");
            }
            return;
        }
        case nlohmann::json::value_t::boolean:
            if (kind_ != ArrayKind::mask) {
                fail("expected a number, got a boolean (booleans are allowed only in masks)");
            }
            push(node.get<bool>() ? 1.0 : 0.0);
            ++booleans_;
            return;
        case nlohmann::json::value_t::array:
            fail("expected a number, got an array (the array is ragged)");
        default:
            fail("expected a number, got " + json_kind(node));
        }
    }

    std::string_view name_;
    ArrayKind kind_;
    Array& out_;
    bool f64_; ///< also keep the exact values in out_.values64
    std::string path_;
    std::size_t booleans_ = 0;
};

// ---------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------

[[noreturn]] void throw_write_error(const std::string& path, int err) {
    throw SystemError(message_text(path, 4096) +
                      ": cannot write: " + errno_text(err != 0 ? err : EIO));
}

/// Writes everything to fd, retrying partial writes and EINTR. Returns 0 or an errno.
int write_all(int fd, std::span<const std::uint8_t> bytes) {
    constexpr std::size_t max_chunk = std::size_t{1} << 30;
    std::size_t done = 0;
    while (done < bytes.size()) {
        const std::size_t chunk = std::min(bytes.size() - done, max_chunk);
        const ssize_t n = ::write(fd, bytes.data() + done, chunk);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno;
        }
        if (n == 0) {
            return ENOSPC; // a regular file that takes nothing is full
        }
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

/// Six characters for a temp file name. Uniqueness is enforced by O_EXCL, not by this.
std::string temp_suffix() {
    static std::atomic<std::uint64_t> counter{0};
    std::uint64_t x =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<std::uint64_t>(::getpid()) << 32) ^
        (counter.fetch_add(1) * 0x9e3779b97f4a7c15ULL);
    // splitmix64 finaliser
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    static constexpr char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::string out;
    for (int i = 0; i < 6; ++i) {
        out += alphabet[x % 62];
        x /= 62;
    }
    return out;
}

/// stdout, for the path "-".
void write_stdout(std::span<const std::uint8_t> bytes) {
    errno = 0;
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) {
        throw_write_error("stdout", errno);
    }
    if (std::fflush(stdout) != 0) {
        throw_write_error("stdout", errno);
    }
}

/// True when an Array carries exact float64 values (a precision f64 result): writers use
/// them rather than their float32 rounding.
bool has_exact_values(const Array& a) {
    return !a.values64.empty() && a.values64.size() == a.values.size();
}

/// True for an existing device or pipe (/dev/null, /dev/stdout, a FIFO): such outputs are
/// written in place (write_special), not through a temp file and a rename.
bool written_in_place(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode);
}

/// Devices and pipes (/dev/null, /dev/stdout, a FIFO) cannot be replaced by a rename and
/// have no partial-file problem: write to them directly.
void write_special(const std::string& path, std::span<const std::uint8_t> bytes) {
    int fd = -1;
    do {
        fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        throw_write_error(path, errno);
    }
    const int err = write_all(fd, bytes);
    if (err != 0) {
        ::close(fd);
        throw_write_error(path, err);
    }
    if (::close(fd) != 0) {
        throw_write_error(path, errno);
    }
}

// ---------------------------------------------------------------------------------------
// Signal cleanup of temp files
// ---------------------------------------------------------------------------------------

/// Temp files in progress, for the signal handlers. A slot is free (0), being filled (1),
/// armed (2) or taken by a handler (3). Writers claim a free slot with a CAS, copy the path
/// and arm it; handlers take armed slots with a CAS and unlink them; writers disarm with a
/// CAS that fails harmlessly when a handler got there first. Lock-free and static: a
/// handler allocates nothing and never waits.
constexpr std::size_t temp_slot_count = 64;
constexpr std::size_t temp_path_max = 4096;
struct TempSlot {
    std::atomic<int> state{0};
    std::array<char, temp_path_max> path{};
};
static_assert(std::atomic<int>::is_always_lock_free);
std::array<TempSlot, temp_slot_count> temp_slots;

constexpr std::array<int, 3> cleanup_signals = {SIGINT, SIGTERM, SIGHUP};

/// Registers `path` for the signal handlers; returns its slot, or -1 when the path is too
/// long or every slot is taken (the file is then only removed by the normal error paths).
int arm_temp(const std::string& path) {
    if (path.size() >= temp_path_max) {
        return -1;
    }
    for (std::size_t i = 0; i < temp_slots.size(); ++i) {
        int expected = 0;
        if (temp_slots[i].state.compare_exchange_strong(expected, 1)) {
            std::memcpy(temp_slots[i].path.data(), path.c_str(), path.size() + 1);
            temp_slots[i].state.store(2, std::memory_order_release);
            return static_cast<int>(i);
        }
    }
    return -1;
}

void disarm_temp(int slot) {
    if (slot >= 0) {
        int expected = 2;
        temp_slots[static_cast<std::size_t>(slot)].state.compare_exchange_strong(expected, 0);
    }
}

/// The handler: unlink every armed temp file, then let the signal's default action run
/// (SA_RESETHAND restored it on entry; the raised signal is delivered when we return).
void remove_temps_and_reraise(int sig) {
    const int saved_errno = errno;
    for (TempSlot& slot : temp_slots) {
        int expected = 2;
        if (slot.state.compare_exchange_strong(expected, 3)) {
            ::unlink(slot.path.data());
        }
    }
    errno = saved_errno;
    ::raise(sig);
}

/// Blocks the cleanup signals in this thread while a temp file is created or renamed and
/// its registration changes, so that a handler never sees a file without its slot.
class CleanupSignalsBlocked {
  public:
    CleanupSignalsBlocked() {
        sigset_t set;
        sigemptyset(&set);
        for (const int sig : cleanup_signals) {
            sigaddset(&set, sig);
        }
        ::pthread_sigmask(SIG_BLOCK, &set, &old_);
    }
    CleanupSignalsBlocked(const CleanupSignalsBlocked&) = delete;
    CleanupSignalsBlocked& operator=(const CleanupSignalsBlocked&) = delete;
    ~CleanupSignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

  private:
    sigset_t old_{};
};

// ---------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------

/// NPY headers longer than this are refused (numpy itself refuses more than 10000 bytes
/// by default): a hostile length field cannot make us read or allocate gigabytes.
constexpr std::size_t max_npy_header_bytes = std::size_t{1} << 20;

/// Bytes of payload read and decoded at a time by read_array_file.
constexpr std::size_t npy_chunk_bytes = std::size_t{1} << 20;

/// JSON text of n bytes may take up to this many times n to parse (nlohmann's values are
/// 24 bytes with JSON_DIAGNOSTICS, plus vectors): refused beyond memory_limit().
constexpr std::uint64_t json_parse_factor = 16;

/// Checks the magic, the version and the header length field (in the first 12 bytes, or
/// fewer when the file is shorter) against the file size; returns the payload offset.
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

/// parse_npy_header for a file of `file_size` bytes of which `bytes` holds at least the
/// preamble and the header.
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

/// Refuses arrays whose float32 copy does not fit memory_limit(), before allocating it.
void check_array_fits(const NpyHeader& header, std::string_view name) {
    std::size_t bytes = 0;
    const std::size_t count = element_count(header.shape);
    const std::uint64_t limit = memory_limit();
    const bool fits = checked_mul(count, sizeof(float), bytes);
    if (!fits || bytes > limit) {
        throw InputError(std::string(name) + ": the array of shape " + python_shape(header.shape) +
                         " needs " + format_size(fits ? bytes : unlimited_memory) +
                         " as float32, more than the memory limit of " + format_size(limit) +
                         " (--max-memory)");
    }
}

/// Refuses JSON text that may not fit memory_limit() once parsed.
void check_json_fits(std::size_t text_bytes, std::string_view name) {
    const std::uint64_t limit = memory_limit();
    if (text_bytes > limit / json_parse_factor) {
        throw InputError(std::string(name) + ": JSON text of " + format_size(text_bytes) +
                         " may need up to " + std::to_string(json_parse_factor) +
                         " times that to parse, more than the memory limit of " +
                         format_size(limit) + " (--max-memory); store large arrays as .npy");
    }
}

/// "PATH: invalid JSON: byte N: DETAIL" from nlohmann's parse_error.
[[noreturn]] void throw_json_error(const nlohmann::json::parse_error& e, const std::string& shown) {
    // what(): "[json.exception.parse_error.101] parse error at line 1, column 2: DETAIL"
    std::string detail = e.what();
    const std::size_t at = detail.find("parse error");
    if (at != std::string::npos) {
        const std::size_t colon = detail.find(": ", at);
        if (colon != std::string::npos) {
            detail = detail.substr(colon + 2);
        }
    }
    throw InputError(shown + ": invalid JSON: byte " + std::to_string(e.byte) + ": " +
                     message_text(detail, 300));
}

/// A file descriptor closed on scope exit.
class Fd {
  public:
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    int get() const { return fd_; }

  private:
    int fd_;
};

/// A path as messages show it: whole, but with control characters escaped.
std::string shown_path(const std::string& path) {
    return message_text(path, 4096);
}

/// Opens a file for reading. Throws InputError("PATH: cannot read: ...").
int open_for_reading(const std::string& file) {
    int fd = -1;
    do {
        fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        throw InputError(shown_path(file) + ": cannot read: " + errno_text(errno));
    }
    return fd;
}

/// Reads up to n bytes (fewer only at the end of the file). Returns the count, or -errno.
std::ptrdiff_t read_some(int fd, std::uint8_t* dst, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
        const ssize_t got = ::read(fd, dst + done, n - done);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -static_cast<std::ptrdiff_t>(errno);
        }
        if (got == 0) {
            break;
        }
        done += static_cast<std::size_t>(got);
    }
    return static_cast<std::ptrdiff_t>(done);
}

/// Exactly n bytes or InputError: "cannot read" on an error, "truncated" when the file
/// ends early (it shrank while we read it).
void read_exactly(int fd, std::uint8_t* dst, std::size_t n, const std::string& shown) {
    const std::ptrdiff_t got = read_some(fd, dst, n);
    if (got < 0) {
        throw InputError(shown + ": cannot read: " + errno_text(static_cast<int>(-got)));
    }
    if (static_cast<std::size_t>(got) != n) {
        throw InputError(shown + ": truncated: the file ended while it was read");
    }
}

/// A regular .npy file, header first: nothing is allocated for the payload before its
/// size has been checked against the file size and the memory limit, and the payload is
/// decoded in chunks as it is read (no second copy of it in memory).
Array read_npy_file(int fd,
                    std::uint64_t file_size,
                    const std::string& shown,
                    Precision precision,
                    const ValueSink* sink = nullptr) {
    std::vector<std::uint8_t> head(
        static_cast<std::size_t>(std::min<std::uint64_t>(file_size, 12)));
    read_exactly(fd, head.data(), head.size(), shown);
    const std::size_t end = npy_header_end(head, file_size, shown);
    if (end > head.size()) {
        const std::size_t have = head.size();
        head.resize(end);
        read_exactly(fd, head.data() + have, end - have, shown);
    } else if (::lseek(fd, static_cast<off_t>(end), SEEK_SET) < 0) {
        throw InputError(shown + ": cannot read: " + errno_text(errno));
    }
    const NpyHeader header = parse_npy_header_sized(head, file_size, shown);
    const DType type = parse_descr(header.descr, shown);
    const std::size_t count = element_count(header.shape);
    const std::size_t payload = count * header.item_size; // checked by the header parse
    const std::uint64_t present = file_size - header.header_bytes;
    if (present != payload) {
        throw InputError(shown + ": trailing bytes: header says " + std::to_string(payload) +
                         " bytes of data, file has " + std::to_string(present));
    }
    check_array_fits(header, shown);
    Array out;
    out.shape = header.shape;
    out.dtype = header.dtype;
    out.is_bool = type.kind == ElementKind::boolean;
    float* values = nullptr;
    if (sink != nullptr && *sink && precision == Precision::f32) {
        values = (*sink)(header.shape);
    }
    if (values == nullptr) {
        out.values.resize(count);
        values = out.values.data();
    }
    if (precision == Precision::f64) {
        out.values64.resize(count);
    }
    std::vector<std::uint8_t> chunk(std::min(payload, npy_chunk_bytes));
    const std::size_t per_chunk = npy_chunk_bytes / header.item_size;
    for (std::size_t first = 0; first < count; first += per_chunk) {
        const std::size_t n = std::min(per_chunk, count - first);
        read_exactly(fd, chunk.data(), n * header.item_size, shown);
        decode_npy(chunk.data(), first, n, header, type, values);
        if (precision == Precision::f64) {
            decode_npy(chunk.data(), first, n, header, type, out.values64.data());
        }
    }
    std::uint8_t extra = 0;
    if (read_some(fd, &extra, 1) != 0) {
        throw InputError(shown + ": trailing bytes: the file grew while it was read");
    }
    return out;
}

} // namespace

// ---------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------

NpyHeader parse_npy_header(std::span<const std::uint8_t> bytes, std::string_view name) {
    return parse_npy_header_sized(bytes, bytes.size(), name);
}

Array parse_npy(std::span<const std::uint8_t> bytes, std::string_view name, Precision precision) {
    const NpyHeader header = parse_npy_header(bytes, name);
    const DType type = parse_descr(header.descr, name);
    const std::size_t count = element_count(header.shape);
    const std::size_t payload = count * header.item_size; // checked by parse_npy_header
    const std::size_t present = bytes.size() - header.header_bytes;
    if (present != payload) {
        throw InputError(std::string(name) + ": trailing bytes: header says " +
                         std::to_string(payload) + " bytes of data, file has " +
                         std::to_string(present));
    }
    check_array_fits(header, name);
    Array out;
    out.shape = header.shape;
    out.dtype = header.dtype;
    out.is_bool = type.kind == ElementKind::boolean;
    out.values.resize(count);
    decode_npy(bytes.data() + header.header_bytes, 0, count, header, type, out.values.data());
    if (precision == Precision::f64) {
        out.values64.resize(count);
        decode_npy(bytes.data() + header.header_bytes, 0, count, header, type, out.values64.data());
    }
    return out;
}

Array parse_json_array(const nlohmann::json& j,
                       std::string_view name,
                       ArrayKind kind,
                       Precision precision) {
    if (!j.is_array()) {
        throw InputError(std::string(name) +
                         ": expected an array (nested lists of rank 1 to 4), got " + json_kind(j));
    }
    Array out;
    out.dtype = "json";
    // The shape follows the first element down; the walk below checks every other one.
    // Never looks deeper than json_max_rank + 1 levels, whatever the nesting.
    const nlohmann::json* node = &j;
    while (node->is_array()) {
        if (out.shape.size() == json_max_rank) {
            throw InputError(std::string(name) + ": the array is nested deeper than rank " +
                             std::to_string(json_max_rank));
        }
        out.shape.push_back(node->size());
        if (node->empty()) {
            break;
        }
        node = &node->front();
    }
    JsonArrayReader reader(name, kind, out, precision == Precision::f64);
    reader.walk(j, 0);
    out.is_bool = reader.booleans() > 0 && reader.booleans() == out.values.size();
    return out;
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
    const std::string file = path.string();
    const std::string shown = shown_path(file);
    const Fd fd(open_for_reading(file));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        throw InputError(shown + ": cannot read: " + errno_text(errno));
    }
    if (S_ISDIR(st.st_mode)) {
        throw InputError(shown + ": cannot read: " + errno_text(EISDIR));
    }
    const std::uint64_t limit = memory_limit();
    auto too_big = [&](std::uint64_t size, const char* how) {
        return InputError(shown + ": cannot read: the file is " + how + format_size(size) +
                          ", more than the memory limit of " + format_size(limit) +
                          " (--max-memory)");
    };
    std::vector<std::uint8_t> out;
    if (S_ISREG(st.st_mode)) {
        const auto size = static_cast<std::uint64_t>(st.st_size);
        if (size > limit) {
            throw too_big(size, "");
        }
        out.reserve(static_cast<std::size_t>(size));
    }
    // Pipes and devices have no size: read in chunks, refusing them once over the limit.
    std::vector<std::uint8_t> buffer(std::size_t{1} << 16);
    for (;;) {
        const std::ptrdiff_t got = read_some(fd.get(), buffer.data(), buffer.size());
        if (got < 0) {
            throw InputError(shown + ": cannot read: " + errno_text(static_cast<int>(-got)));
        }
        if (out.size() + static_cast<std::size_t>(got) > limit) {
            throw too_big(out.size() + static_cast<std::size_t>(got), "at least ");
        }
        out.insert(out.end(), buffer.begin(), buffer.begin() + got);
        if (static_cast<std::size_t>(got) < buffer.size()) {
            break;
        }
    }
    return out;
}

Array read_array_file(const std::filesystem::path& path, ArrayKind kind, Precision precision) {
    return read_array_file(path, kind, precision, ValueSink());
}

Array read_array_file(const std::filesystem::path& path,
                      ArrayKind kind,
                      Precision precision,
                      const ValueSink& sink,
                      std::string_view npz_member) {
    if (const std::optional<NpzRef> ref = parse_npz_ref(path.string())) {
        return read_npz_array(ref->file, npz_member_for(*ref, npz_member), precision);
    }
    const ArrayFormat format = array_format_for(path);
    const std::string shown = shown_path(path.string());
    if (format == ArrayFormat::npy) {
        const Fd fd(open_for_reading(path.string()));
        struct stat st {};
        if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
            return read_npy_file(
                fd.get(), static_cast<std::uint64_t>(st.st_size), shown, precision, &sink);
        }
        // A pipe or device named .npy: read it whole (within the limit), then parse.
        return parse_npy(read_file(path), shown, precision);
    }
    const std::vector<std::uint8_t> bytes = read_file(path);
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    check_json_fits(text.size(), shown);
    check_json_depth(text, shown);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw_json_error(e, shown);
    } catch (const nlohmann::json::exception& e) {
        // Not a syntax error but still the file's fault, e.g. out_of_range.406 "number
        // overflow parsing '1e400'" (beyond double range).
        std::string detail = e.what();
        const std::size_t at = detail.find("] ");
        if (at != std::string::npos) {
            detail = detail.substr(at + 2);
        }
        throw InputError(shown + ": invalid JSON: " + message_text(detail, 300));
    }
    return parse_json_array(j, shown, kind, precision);
}

void check_json_depth(std::string_view text, std::string_view name, std::size_t max_depth) {
    std::size_t depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i; // the escaped character, whatever it is
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                throw InputError(std::string(name) + ": JSON nested deeper than " +
                                 std::to_string(max_depth) + " levels (at byte " +
                                 std::to_string(i) + ")");
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
}

std::string message_text(std::string_view text, std::size_t max_chars) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (i == max_chars) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

namespace {

/// Shortest decimal text that reads back as the same T; "nan", "inf", "-inf", "-0.0".
template <class T> std::string format_shortest(T x) {
    if (std::isnan(x)) {
        return "nan";
    }
    if (std::isinf(x)) {
        return x > 0 ? "inf" : "-inf";
    }
    if (x == T{0} && std::signbit(x)) {
        return "-0.0"; // JSON readers take "-0" for the integer 0 and lose the sign
    }
    std::array<char, 40> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), x);
    ATTN_ASSERT(result.ec == std::errc());
    return std::string(buffer.data(), result.ptr);
}

} // namespace

std::string format_float(float x) {
    return format_shortest(x);
}

std::string format_double(double x) {
    return format_shortest(x);
}

namespace {

std::string format_number(float x) {
    return format_float(x);
}
std::string format_number(double x) {
    return format_double(x);
}

template <class T>
std::string encode_json_array_impl(const std::vector<std::size_t>& shape, const T* values) {
    const std::size_t rank = shape.size();
    auto write_number = [](std::string& out, T x) {
        if (std::isfinite(x)) {
            out += format_number(x);
        } else {
            out += '"';
            out += format_number(x);
            out += '"';
        }
    };
    std::string out;
    if (rank == 0) {
        write_number(out, values[0]);
        return out;
    }
    const std::size_t count = element_count(shape);
    if (count == 0) {
        // Nesting stops at the first zero dimension: [] for [0, 3], [[],[]] for [2, 0].
        std::size_t zero_at = 0;
        while (shape[zero_at] != 0) {
            ++zero_at;
        }
        std::string inner = "[]";
        for (std::size_t depth = zero_at; depth-- > 0;) {
            std::string level = "[";
            for (std::size_t i = 0; i < shape[depth]; ++i) {
                if (i > 0) {
                    level += ',';
                }
                level += inner;
            }
            level += ']';
            inner = std::move(level);
        }
        return inner;
    }
    out.reserve(count * 12 + 2 * rank);
    // An odometer over the C index: open brackets as indices reset, close them as they wrap.
    out.append(rank, '[');
    std::vector<std::size_t> index(rank, 0);
    for (std::size_t i = 0; i < count; ++i) {
        write_number(out, values[i]);
        std::size_t k = rank;
        while (k-- > 0) {
            if (++index[k] < shape[k]) {
                break;
            }
            index[k] = 0;
            out += ']';
        }
        if (i + 1 < count) {
            // k is the axis that advanced; every axis after it starts a new list.
            out += ',';
            out.append(rank - 1 - k, '[');
        }
    }
    return out;
}

} // namespace

std::string encode_json_array(const std::vector<std::size_t>& shape, const float* values) {
    return encode_json_array_impl(shape, values);
}

std::string encode_json_array64(const std::vector<std::size_t>& shape, const double* values) {
    return encode_json_array_impl(shape, values);
}

std::string encode_json_array(const Array& a) {
    return has_exact_values(a) ? encode_json_array64(a.shape, a.values64.data())
                               : encode_json_array(a.shape, a.values.data());
}

namespace {

/// The preamble and header of an NPY v1.0 file (v2.0 when the v1.0 length field cannot
/// hold it), C order, "<f4" or "<f8", padded as numpy pads it.
std::string npy_header_text(const std::vector<std::size_t>& shape, bool f64) {
    const std::string dict = std::string("{'descr': '") + (f64 ? "<f8" : "<f4") +
                             "', 'fortran_order': False, 'shape': " + python_shape(shape) + ", }";
    // numpy pads with spaces and ends with '\n' so that magic + length + header is a
    // multiple of 64; v2.0 (4-byte length) only when the v1.0 length field cannot hold it.
    constexpr std::size_t align = 64;
    std::size_t preamble = 10;
    std::size_t header_length = dict.size() + 1;
    header_length += (align - (preamble + header_length) % align) % align;
    int major = 1;
    if (header_length > 0xffff) {
        major = 2;
        preamble = 12;
        header_length = dict.size() + 1;
        header_length += (align - (preamble + header_length) % align) % align;
    }
    std::string head(npy_magic.begin(), npy_magic.end());
    head += static_cast<char>(major);
    head += '\0';
    for (std::size_t k = 0; k < preamble - 8; ++k) {
        head += static_cast<char>((header_length >> (8 * k)) & 0xffu);
    }
    head += dict;
    head.append(header_length - dict.size() - 1, ' ');
    head += '\n';
    return head;
}

/// Writes n values as little-endian "<f4" or "<f8" (whatever the host) from `out` on.
template <class T>
void encode_npy_payload(const T* values, std::size_t n, bool f64, std::uint8_t* out) {
    for (std::size_t i = 0; i < n; ++i) {
        if (f64) {
            const auto bits = std::bit_cast<std::uint64_t>(static_cast<double>(values[i]));
            for (std::size_t k = 0; k < 8; ++k) {
                *out++ = static_cast<std::uint8_t>((bits >> (8 * k)) & 0xffu);
            }
        } else {
            const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(values[i]));
            for (std::size_t k = 0; k < 4; ++k) {
                *out++ = static_cast<std::uint8_t>((bits >> (8 * k)) & 0xffu);
            }
        }
    }
}

template <class T>
std::vector<std::uint8_t>
encode_npy_impl(const std::vector<std::size_t>& shape, const T* values, bool f64) {
    const std::string head = npy_header_text(shape, f64);
    const std::size_t count = element_count(shape);
    const std::size_t item = f64 ? 8 : 4;
    // Sized once and filled in place: no per-byte push_back.
    std::vector<std::uint8_t> out(head.size() + count * item);
    std::transform(
        head.begin(), head.end(), out.begin(), [](char c) { return static_cast<std::uint8_t>(c); });
    encode_npy_payload(values, count, f64, out.data() + head.size());
    return out;
}

/// write_npy_file's streaming half: header, then the payload 1 MiB at a time.
template <class T>
void write_npy_stream(AtomicWriter& out,
                      const std::vector<std::size_t>& shape,
                      const T* values,
                      bool f64) {
    const std::string head = npy_header_text(shape, f64);
    out.write(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(head.data()),
                                            head.size()));
    const std::size_t count = element_count(shape);
    const std::size_t item = f64 ? 8 : 4;
    const std::size_t per_chunk = npy_chunk_bytes / item;
    std::vector<std::uint8_t> chunk(std::min(count, per_chunk) * item);
    for (std::size_t first = 0; first < count; first += per_chunk) {
        const std::size_t n = std::min(per_chunk, count - first);
        encode_npy_payload(values + first, n, f64, chunk.data());
        out.write(std::span<const std::uint8_t>(chunk.data(), n * item));
    }
}

} // namespace

std::vector<std::uint8_t>
encode_npy(const std::vector<std::size_t>& shape, const float* values, bool f64) {
    return encode_npy_impl(shape, values, f64);
}

std::vector<std::uint8_t>
encode_npy64(const std::vector<std::size_t>& shape, const double* values, bool f64) {
    return encode_npy_impl(shape, values, f64);
}

std::vector<std::uint8_t> encode_npy(const Array& a, bool f64) {
    return has_exact_values(a) ? encode_npy64(a.shape, a.values64.data(), f64)
                               : encode_npy(a.shape, a.values.data(), f64);
}

ArrayFormat array_format_for(const std::filesystem::path& path) {
    std::string ext = path.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](char c) {
        return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    });
    if (ext == ".npy") {
        return ArrayFormat::npy;
    }
    if (ext == ".json") {
        return ArrayFormat::json;
    }
    // Files users have that we do not read: say what to do instead.
    std::string hint = "; an input may also be a .npz archive (x.npz or x.npz:NAME)";
    if (ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt") {
        hint = "; PyTorch files are pickles (loading one can run code): save the tensor with "
               "np.save('x.npy', t.numpy()) or a checkpoint as .safetensors";
    } else if (ext == ".gguf") {
        hint = "; GGUF files are not read: export the tensors as .npy or .safetensors";
    } else if (ext == ".npz") {
        hint = "; .npz archives are read as inputs only";
    }
    throw InputError(shown_path(path.string()) + ": unknown array format (expected .npy or .json)" +
                     hint);
}

AtomicWriter::AtomicWriter(const std::filesystem::path& path) : shown_(path.string()) {
    struct stat st {};
    if (::stat(shown_.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            throw_write_error(shown_, EISDIR);
        }
        if (!S_ISREG(st.st_mode)) {
            // A rename would replace the device or FIFO itself (as root, even /dev/null).
            throw SystemError(message_text(shown_, 4096) + ": cannot write: not a regular file");
        }
    }
    if (path.filename().empty()) {
        throw_write_error(shown_, EISDIR); // "out/"
    }
    // Through a symlink, replace the file it points to, not the link itself (as `>` does).
    fs::path target = path;
    struct stat link {};
    if (::lstat(shown_.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        std::error_code ec;
        fs::path resolved = fs::weakly_canonical(path, ec);
        if (!ec && !resolved.filename().empty()) {
            target = std::move(resolved);
        }
    }
    target_ = target.string();
    // Cut long names so that the temp name stays within NAME_MAX when the target's does.
    const std::string file_name = target.filename().string().substr(0, 200);
    const fs::path dir = target.parent_path();
    dir_ = dir.empty() ? std::string(".") : dir.string();

    // A sibling temp file, created exclusively with mode 0666 so that the kernel applies
    // the umask (and any default ACL) itself: no racy umask() read-and-restore needed.
    // The cleanup signals wait until it is registered.
    const CleanupSignalsBlocked blocked;
    std::string temp;
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
        temp = (dir / ("." + file_name + ".tmp." + temp_suffix())).string();
        do {
            fd_ = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        } while (fd_ < 0 && errno == EINTR);
        if (fd_ < 0 && errno != EEXIST) {
            throw_write_error(shown_, errno);
        }
    }
    if (fd_ < 0) {
        throw_write_error(shown_, EEXIST);
    }
    temp_ = std::move(temp);
    slot_ = arm_temp(temp_);
}

AtomicWriter::~AtomicWriter() {
    abandon();
}

void AtomicWriter::abandon() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    if (!temp_.empty()) {
        const CleanupSignalsBlocked blocked;
        ::unlink(temp_.c_str());
        disarm_temp(slot_);
        slot_ = -1;
        temp_.clear();
    }
}

void AtomicWriter::fail(int err) {
    abandon();
    throw_write_error(shown_, err);
}

void AtomicWriter::write(std::span<const std::uint8_t> bytes) {
    if (fd_ < 0) {
        throw SystemError(message_text(shown_, 4096) +
                          ": cannot write: the file is already committed or abandoned");
    }
    if (const int err = write_all(fd_, bytes); err != 0) {
        fail(err);
    }
}

void AtomicWriter::commit() {
    if (fd_ < 0) {
        throw SystemError(message_text(shown_, 4096) +
                          ": cannot write: the file is already committed or abandoned");
    }
    if (::fsync(fd_) != 0) {
        fail(errno);
    }
    const int closed = ::close(fd_);
    fd_ = -1; // closed even when close() fails: never close twice
    if (closed != 0) {
        fail(errno);
    }
    {
        const CleanupSignalsBlocked blocked;
        if (::rename(temp_.c_str(), target_.c_str()) != 0) {
            const int err = errno;
            fail(err);
        }
        disarm_temp(slot_);
        slot_ = -1;
        temp_.clear();
    }
    // Make the rename itself durable; best effort, the data is already in place.
    const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        ::fsync(dir_fd);
        ::close(dir_fd);
    }
}

void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
    const std::string shown = path.string();
    if (shown == "-") {
        write_stdout(bytes);
        return;
    }
    if (written_in_place(shown)) {
        write_special(shown, bytes);
        return;
    }
    AtomicWriter out(path);
    out.write(bytes);
    out.commit();
}

void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
    write_file_atomic(path,
                      std::span<const std::uint8_t>(
                          reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

void write_npy_file(const std::filesystem::path& path, const Array& a, bool f64) {
    const std::string shown = path.string();
    if (shown == "-" || written_in_place(shown)) {
        write_file_atomic(path, encode_npy(a, f64)); // stdout and devices: the whole encoding
        return;
    }
    AtomicWriter out(path);
    if (has_exact_values(a)) {
        write_npy_stream(out, a.shape, a.values64.data(), f64);
    } else {
        write_npy_stream(out, a.shape, a.values.data(), f64);
    }
    out.commit();
}

void install_signal_cleanup() {
    for (const int sig : cleanup_signals) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) {
            continue; // nohup and friends: stay ignored
        }
        struct sigaction action {};
        action.sa_handler = remove_temps_and_reraise;
        sigemptyset(&action.sa_mask);
        action.sa_flags = static_cast<int>(SA_RESETHAND);
        ::sigaction(sig, &action, nullptr);
    }
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGXFSZ, &ignore, nullptr);
}

} // namespace attn::io

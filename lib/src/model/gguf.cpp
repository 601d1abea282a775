// The strict GGUF header reader: magic, version, counts, metadata (every value type, nested
// arrays), tensor infos and the data section's alignment, each count, length and offset
// checked against the bytes that remain before it is used. Mapping the file and reading
// tensors is in gguf_file.cpp; dequantization in gguf_quants.cpp.
#include "attn/model/gguf.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/limits.hpp"
#include "detail.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <unordered_set>
#include <utility>

namespace attn::model {
namespace {

using detail::quote_name;

/// ggml's GGML_MAX_DIMS.
constexpr std::uint64_t max_dims = 4;

/// Bytes of one element of a scalar type; 0 for string and array.
std::size_t scalar_size(GgufType t) {
    switch (t) {
    case GgufType::u8:
    case GgufType::i8:
    case GgufType::boolean:
        return 1;
    case GgufType::u16:
    case GgufType::i16:
        return 2;
    case GgufType::u32:
    case GgufType::i32:
    case GgufType::f32:
        return 4;
    case GgufType::u64:
    case GgufType::i64:
    case GgufType::f64:
        return 8;
    case GgufType::string:
    case GgufType::array:
        return 0;
    }
    return 0;
}

/// The fewest bytes one value of type t takes in the file (a string: its length; an array:
/// its element type and count).
std::size_t min_encoded_size(GgufType t) {
    if (t == GgufType::string) {
        return 8;
    }
    if (t == GgufType::array) {
        return 12;
    }
    return scalar_size(t);
}

/// Reads the header front to back; every read checks the bytes left first.
class Cursor {
  public:
    Cursor(std::span<const std::uint8_t> bytes, std::uint64_t file_size, std::string name)
        : bytes_(bytes), file_size_(file_size), name_(std::move(name)) {}

    std::uint64_t pos() const { return pos_; }
    std::uint64_t left() const { return bytes_.size() - pos_; }
    const std::string& name() const { return name_; }

    /// "NAME: truncated: WHAT needs N bytes at offset P, but the file ends at E".
    [[noreturn]] void truncated(std::string_view what, std::uint64_t need) const {
        throw InputError(name_ + ": truncated: " + std::string(what) + " needs " +
                         std::to_string(need) + " bytes at offset " + std::to_string(pos_) +
                         ", but the file ends at " + std::to_string(file_size_));
    }

    std::uint64_t uint(std::size_t n, std::string_view what) {
        if (left() < n) {
            truncated(what, n);
        }
        std::uint64_t v = 0;
        for (std::size_t k = n; k-- > 0;) {
            v = (v << 8) | bytes_[pos_ + k];
        }
        pos_ += n;
        return v;
    }
    std::uint32_t u32(std::string_view what) { return static_cast<std::uint32_t>(uint(4, what)); }
    std::uint64_t u64(std::string_view what) { return uint(8, what); }

    std::string string(std::string_view what) {
        const std::uint64_t length = u64(what);
        if (length > left()) {
            throw InputError(name_ + ": " + std::string(what) + ": string length " +
                             std::to_string(length) + " at offset " + std::to_string(pos_ - 8) +
                             " reaches past the end of the file (" + std::to_string(left()) +
                             " bytes left)");
        }
        std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_),
                      static_cast<std::size_t>(length));
        pos_ += length;
        return s;
    }

    void take(std::size_t n, std::vector<std::uint8_t>& out) {
        out.assign(bytes_.begin() + static_cast<std::ptrdiff_t>(pos_),
                   bytes_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
        pos_ += n;
    }

    /// Refuses `count` items of at least `each` bytes when they cannot fit what is left.
    void check_count(std::uint64_t count, std::size_t each, std::string_view what) const {
        if (each != 0 && count > left() / each) {
            throw InputError(name_ + ": " + std::string(what) + ": count " + std::to_string(count) +
                             " at offset " + std::to_string(pos_) + " needs at least " +
                             std::to_string(each) + " bytes each, more than the " +
                             std::to_string(left()) + " bytes left in the file");
        }
    }

  private:
    std::span<const std::uint8_t> bytes_;
    std::uint64_t file_size_;
    std::string name_;
    std::uint64_t pos_ = 0;
};

GgufType read_type(Cursor& c, const std::string& what) {
    const std::uint64_t at = c.pos();
    const std::uint32_t t = c.u32(what + ": value type");
    if (t > static_cast<std::uint32_t>(GgufType::f64)) {
        throw InputError(c.name() + ": " + what + ": unknown value type " + std::to_string(t) +
                         " at offset " + std::to_string(at) + " (GGUF defines 0 to 12)");
    }
    return static_cast<GgufType>(t);
}

GgufValue read_value(Cursor& c, GgufType type, const std::string& what, std::size_t depth) {
    GgufValue v;
    v.type = type;
    if (type == GgufType::string) {
        v.text = c.string(what);
        return v;
    }
    if (type != GgufType::array) {
        v.bits = c.uint(scalar_size(type), what);
        if (type == GgufType::boolean && v.bits > 1) {
            throw InputError(c.name() + ": " + what + ": bool value " + std::to_string(v.bits) +
                             " (expected 0 or 1)");
        }
        return v;
    }
    if (depth >= gguf_max_array_depth) {
        throw InputError(c.name() + ": " + what + ": arrays nested more than " +
                         std::to_string(gguf_max_array_depth) + " deep");
    }
    v.element = read_type(c, what);
    v.count = c.u64(what + ": array count");
    const std::size_t each = min_encoded_size(v.element);
    c.check_count(v.count, each, what);
    const auto n = static_cast<std::size_t>(v.count);
    if (v.element == GgufType::string) {
        // Each string costs its std::string as well as its bytes: bound that by the limit.
        if (n > io::memory_limit() / sizeof(std::string)) {
            throw InputError(c.name() + ": " + what + ": " + std::to_string(n) +
                             " strings need more than the memory limit of " +
                             io::format_size(io::memory_limit()) + " (--max-memory)");
        }
        v.strings.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            v.strings.push_back(c.string(what));
        }
    } else if (v.element == GgufType::array) {
        if (n > io::memory_limit() / sizeof(GgufValue)) {
            throw InputError(c.name() + ": " + what + ": " + std::to_string(n) +
                             " arrays need more than the memory limit of " +
                             io::format_size(io::memory_limit()) + " (--max-memory)");
        }
        v.items.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            v.items.push_back(read_value(c, GgufType::array, what, depth + 1));
        }
    } else {
        c.take(n * each, v.raw);
        if (v.element == GgufType::boolean) {
            for (const std::uint8_t b : v.raw) {
                if (b > 1) {
                    throw InputError(c.name() + ": " + what + ": bool value " + std::to_string(b) +
                                     " in an array (expected 0 or 1)");
                }
            }
        }
    }
    return v;
}

/// general.alignment: a uint32 power of two (ggml's rule), or the default 32.
std::uint64_t read_alignment(const GgufHeader& h, const std::string& name) {
    const GgufValue* v = h.find_value("general.alignment");
    if (v == nullptr) {
        return 32;
    }
    if (v->type != GgufType::u32) {
        throw InputError(name + ": general.alignment: expected a uint32, got " +
                         std::string(gguf_type_name(v->type)));
    }
    if (v->bits == 0 || !std::has_single_bit(v->bits)) {
        throw InputError(name + ": general.alignment " + std::to_string(v->bits) +
                         " is not a power of two");
    }
    return v->bits;
}

GgufTensor read_tensor_info(Cursor& c, std::size_t index) {
    const std::string what = "tensor " + std::to_string(index);
    GgufTensor t;
    t.name = c.string(what + ": name");
    const std::string where = "tensor " + quote_name(t.name);
    const std::uint32_t n_dims = c.u32(where + ": dimension count");
    if (n_dims == 0 || n_dims > max_dims) {
        throw InputError(c.name() + ": " + where + ": " + std::to_string(n_dims) +
                         " dimensions (ggml allows 1 to " + std::to_string(max_dims) + ")");
    }
    std::uint64_t count = 1;
    for (std::uint32_t i = 0; i < n_dims; ++i) {
        const std::uint64_t d = c.u64(where + ": dimension");
        if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
            (d != 0 &&
             count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / d)) {
            throw InputError(c.name() + ": " + where + ": dimension " + std::to_string(d) +
                             " makes the element count overflow");
        }
        count *= d;
        t.dims.push_back(d);
    }
    const std::uint64_t type_at = c.pos();
    t.type = c.u32(where + ": type");
    const GgmlTypeTraits* traits = ggml_type_traits(t.type);
    if (traits == nullptr) {
        throw InputError(c.name() + ": " + where + ": unknown ggml type " + std::to_string(t.type) +
                         " at offset " + std::to_string(type_at));
    }
    if (t.dims[0] % traits->block != 0) {
        throw InputError(c.name() + ": " + where + ": its rows of " + std::to_string(t.dims[0]) +
                         " elements are not a whole number of " + std::string(traits->name) +
                         " blocks of " + std::to_string(traits->block));
    }
    // count < 2^63 and block_bytes / block <= 4 keep this from overflowing.
    t.bytes = count / traits->block * traits->block_bytes;
    t.offset = c.u64(where + ": offset");
    for (std::size_t i = t.dims.size(); i-- > 0;) {
        if (t.dims[i] > std::numeric_limits<std::size_t>::max()) {
            throw InputError(c.name() + ": " + where + ": dimension too large");
        }
        t.shape.push_back(static_cast<std::size_t>(t.dims[i]));
    }
    return t;
}

std::uint64_t pad_to(std::uint64_t n, std::uint64_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

/// ggml's rule: the tensors follow each other in file order, each padded to the alignment.
void check_offsets(const GgufHeader& h, const std::string& name) {
    std::uint64_t expected = 0;
    for (const GgufTensor& t : h.tensors) {
        const std::string where = name + ": tensor " + quote_name(t.name) + ": ";
        if (t.offset % h.alignment != 0) {
            throw InputError(where + "offset " + std::to_string(t.offset) +
                             " is not a multiple of the alignment " + std::to_string(h.alignment));
        }
        if (t.offset != expected) {
            throw InputError(where + "offset " + std::to_string(t.offset) + ", expected " +
                             std::to_string(expected) +
                             " (tensors follow each other, each padded to the alignment)");
        }
        if (t.offset > h.data_size || t.bytes > h.data_size - t.offset) {
            throw InputError(where + "its " + std::to_string(t.bytes) + " bytes at data offset " +
                             std::to_string(t.offset) + " reach past the end of the file (" +
                             std::to_string(h.data_size) + " bytes of data)");
        }
        expected = pad_to(t.offset + t.bytes, h.alignment);
    }
    if (expected > h.data_size) { // ggml reads the last tensor's padding too
        throw InputError(name + ": truncated: the data section needs " + std::to_string(expected) +
                         " bytes (the last tensor padded to the alignment), the file holds " +
                         std::to_string(h.data_size));
    }
}

} // namespace

std::string_view gguf_type_name(GgufType type) {
    static constexpr std::array<std::string_view, 13> names = {"uint8",
                                                               "int8",
                                                               "uint16",
                                                               "int16",
                                                               "uint32",
                                                               "int32",
                                                               "float32",
                                                               "bool",
                                                               "string",
                                                               "array",
                                                               "uint64",
                                                               "int64",
                                                               "float64"};
    const auto i = static_cast<std::size_t>(type);
    return i < names.size() ? names[i] : "unknown";
}

std::optional<std::uint64_t> GgufValue::as_uint() const {
    const std::size_t size = scalar_size(type);
    const bool is_signed = type == GgufType::i8 || type == GgufType::i16 || type == GgufType::i32 ||
                           type == GgufType::i64;
    if (size == 0 || type == GgufType::f32 || type == GgufType::f64) {
        return std::nullopt;
    }
    if (is_signed && ((bits >> (8 * size - 1)) & 1u) != 0) {
        return std::nullopt;
    }
    return bits;
}

std::optional<double> GgufValue::as_double() const {
    switch (type) {
    case GgufType::f32:
        return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    case GgufType::f64:
        return std::bit_cast<double>(bits);
    case GgufType::i8:
        return static_cast<std::int8_t>(bits);
    case GgufType::i16:
        return static_cast<std::int16_t>(bits);
    case GgufType::i32:
        return static_cast<std::int32_t>(bits);
    case GgufType::i64:
        return static_cast<double>(static_cast<std::int64_t>(bits));
    case GgufType::u8:
    case GgufType::u16:
    case GgufType::u32:
    case GgufType::u64:
        return static_cast<double>(bits);
    default:
        return std::nullopt;
    }
}

std::optional<double> GgufValue::as_decimal() const {
    if (type != GgufType::f32) {
        return as_double();
    }
    std::array<char, 64> buf{};
    const auto [end, ec] = std::to_chars(buf.data(),
                                         buf.data() + buf.size() - 1,
                                         std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
    ATTN_ASSERT(ec == std::errc());
    *end = '\0';
    return std::strtod(buf.data(), nullptr);
}

std::optional<std::string> GgufValue::as_string() const {
    if (type != GgufType::string) {
        return std::nullopt;
    }
    return text;
}

GgufValue GgufValue::element_at(std::size_t i) const {
    const std::size_t size = scalar_size(element);
    ATTN_ASSERT(type == GgufType::array && size != 0 && (i + 1) * size <= raw.size());
    GgufValue v;
    v.type = element;
    for (std::size_t k = size; k-- > 0;) {
        v.bits = (v.bits << 8) | raw[i * size + k];
    }
    return v;
}

const GgufValue* GgufHeader::find_value(std::string_view key) const {
    for (const auto& [k, v] : metadata) {
        if (k == key) {
            return &v;
        }
    }
    return nullptr;
}

const GgufTensor* GgufHeader::find(std::string_view name) const {
    for (const GgufTensor& t : tensors) {
        if (t.name == name) {
            return &t;
        }
    }
    return nullptr;
}

GgufHeader parse_gguf_header(std::span<const std::uint8_t> bytes,
                             std::uint64_t file_size,
                             std::string_view name_in) {
    const std::string name(name_in);
    if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0) {
        throw InputError(name + ": not a GGUF file (it does not start with \"GGUF\")");
    }
    Cursor c(bytes, file_size, name);
    c.u32("magic");
    GgufHeader h;
    h.version = c.u32("version");
    if (h.version == 1) {
        throw InputError(name + ": GGUF version 1 is not supported (ggml reads 2 and 3)");
    }
    if (h.version != 2 && h.version != 3) {
        const bool big_endian = (h.version & 0xFFFFu) == 0 && h.version != 0;
        throw InputError(name + (big_endian ? ": a big-endian GGUF file (version " +
                                                  std::to_string(__builtin_bswap32(h.version)) +
                                                  "); attn reads little-endian files only"
                                            : ": GGUF version " + std::to_string(h.version) +
                                                  " is not supported (attn reads 2 and 3)"));
    }
    const std::uint64_t n_tensors = c.u64("tensor count");
    const std::uint64_t n_kv = c.u64("metadata count");
    c.check_count(n_kv, 8 + 4 + 1, "metadata count");

    std::set<std::string> keys;
    for (std::uint64_t i = 0; i < n_kv; ++i) {
        std::string key = c.string("metadata key " + std::to_string(i));
        const std::string what = "metadata " + quote_name(key);
        if (!keys.insert(key).second) {
            throw InputError(name + ": " + what + " appears twice");
        }
        const GgufType type = read_type(c, what);
        GgufValue value = read_value(c, type, what, 0);
        h.metadata.emplace_back(std::move(key), std::move(value));
    }
    h.alignment = read_alignment(h, name);

    c.check_count(n_tensors, 8 + 4 + 8 + 4 + 8, "tensor count");
    h.tensors.reserve(static_cast<std::size_t>(n_tensors));
    std::unordered_set<std::string> names;
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensor t = read_tensor_info(c, static_cast<std::size_t>(i));
        if (!names.insert(t.name).second) {
            throw InputError(name + ": tensor " + quote_name(t.name) + " appears twice");
        }
        h.tensors.push_back(std::move(t));
    }
    const std::uint64_t data_start = pad_to(c.pos(), h.alignment);
    if (n_tensors != 0 && data_start > file_size) {
        throw InputError(name + ": truncated: the data section starts at offset " +
                         std::to_string(data_start) + ", past the end of the file (" +
                         std::to_string(file_size) + " bytes)");
    }
    h.data_start = std::min(data_start, file_size);
    h.data_size = file_size - h.data_start;
    check_offsets(h, name);
    return h;
}

bool is_gguf_path(std::string_view path) {
    if (io::has_extension(path, ".gguf")) {
        return true;
    }
    // Whatever its name (Ollama's blobs are sha256-<hex>): a regular file that starts with
    // the magic. The header itself is checked when the file is read.
    std::error_code ec;
    if (path.empty() || !std::filesystem::is_regular_file(std::string(path), ec)) {
        return false;
    }
    std::ifstream in(std::string(path), std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

} // namespace attn::model

// llama.cpp's GGUF checkpoints: a strict reader (versions 2 and 3, little-endian) of the
// header, the metadata (every value type, nested arrays included), the tensor infos and
// the aligned data section, memory-mapped; each tensor is dequantized to float32 only when
// asked (attn/model/quants.hpp). Like the safetensors reader it never trusts a count, a
// length or an offset before checking it against the bytes present. It does not write GGUF.
#pragma once

#include "attn/io/array.hpp"
#include "attn/io/file_read.hpp"
#include "attn/model/quants.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {

/// The value types of GGUF metadata, numbered as the format numbers them.
enum class GgufType : std::uint32_t {
    u8 = 0,
    i8 = 1,
    u16 = 2,
    i16 = 3,
    u32 = 4,
    i32 = 5,
    f32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    u64 = 10,
    i64 = 11,
    f64 = 12,
};

/// "uint8", "int32", "float32", "bool", "string", "array", ... (gguf-py's names).
std::string_view gguf_type_name(GgufType type);

/// One metadata value. A scalar keeps its little-endian bits zero-extended in `bits`; a
/// string its bytes; an array its element type and count, with the elements as raw
/// little-endian bytes (numbers and bools), as strings, or as values (arrays of arrays).
struct GgufValue {
    GgufType type = GgufType::u8;
    std::uint64_t bits = 0;
    std::string text;
    GgufType element = GgufType::u8;  ///< arrays only
    std::uint64_t count = 0;          ///< arrays only
    std::vector<std::uint8_t> raw;    ///< arrays of numbers and bools: count * element size
    std::vector<std::string> strings; ///< arrays of strings
    std::vector<GgufValue> items;     ///< arrays of arrays

    /// An integer of any width (or a bool) as a non-negative integer; empty for a negative
    /// value or another type.
    std::optional<std::uint64_t> as_uint() const;
    /// A float32/float64, or an integer, as double; empty for strings, arrays and bools.
    std::optional<double> as_double() const;
    /// as_double(), but a float32 as the shortest decimal that rounds to it (what the writer
    /// was given: 1e-06, not 9.999999974752427e-07), read as double.
    std::optional<double> as_decimal() const;
    /// A string's text; empty for another type.
    std::optional<std::string> as_string() const;
    /// Element i of an array of numbers or bools (as a scalar value).
    GgufValue element_at(std::size_t i) const;
};

/// One tensor of the header.
struct GgufTensor {
    std::string name;
    std::vector<std::uint64_t> dims; ///< ggml's ne[]: dims[0] is the fastest-varying
    std::vector<std::size_t> shape;  ///< numpy order: dims reversed (the Hugging Face shape)
    std::uint32_t type = 0;          ///< ggml_type (ggml_type_traits() names it)
    std::uint64_t offset = 0;        ///< relative to the data section
    std::uint64_t bytes = 0;         ///< its data's size, without padding
};

/// A parsed and checked GGUF header.
struct GgufHeader {
    std::uint32_t version = 0;
    std::uint64_t alignment = 32; ///< general.alignment, or the default 32
    std::uint64_t data_start = 0; ///< file offset of the data section
    std::uint64_t data_size = 0;  ///< bytes from data_start to the end of the file
    std::vector<std::pair<std::string, GgufValue>> metadata; ///< in file order
    std::vector<GgufTensor> tensors;                         ///< in file order

    /// The value of `key`, or null.
    const GgufValue* find_value(std::string_view key) const;
    /// The tensor called `name`, or null.
    const GgufTensor* find(std::string_view name) const;
};

/// The largest nesting of arrays in metadata we read (the format sets none; ggml reads one
/// level, so anything deeper is either hostile or unusable).
inline constexpr std::size_t gguf_max_array_depth = 8;

/// Parses and checks a GGUF header from `bytes`, the whole file (or at least its header:
/// then `file_size` is the whole file's size). Checks: the magic "GGUF"; version 2 or 3
/// (version 1 and big-endian files are refused by name); the tensor and metadata counts fit
/// the bytes that remain; every string length fits; keys are unique; every value type is
/// known, arrays nest at most gguf_max_array_depth deep and their counts fit the bytes;
/// general.alignment, when present, is a uint32 power of two; every tensor has 1 to 4
/// dimensions whose product does not overflow, a known ggml type whose block size divides
/// dims[0], a unique name, and an offset that is where ggml expects it (the running sum of
/// the tensors before it, each padded to the alignment) with its data inside the file.
/// Throws InputError("NAME: ...") naming the field, key or tensor.
GgufHeader parse_gguf_header(std::span<const std::uint8_t> bytes,
                             std::uint64_t file_size,
                             std::string_view name);

/// A tensor's raw bytes dequantized to float32 in numpy order (shape = tensor.shape).
/// Refuses a type attn cannot dequantize, naming it, and (before allocating) a copy larger
/// than memory_limit(). Throws InputError("NAME: tensor 'T': ...").
io::Array decode_gguf_tensor(const GgufTensor& tensor,
                             std::span<const std::uint8_t> data,
                             std::string_view name);

/// A GGUF file opened for reading: the constructor maps the file (a pipe or device is read
/// whole, within memory_limit()) and parses the header; read() dequantizes one tensor when
/// asked, so one layer of a large model costs only that layer. Throws InputError("PATH: ...").
class GgufFile {
  public:
    explicit GgufFile(const std::filesystem::path& path);
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const GgufHeader& header() const { return header_; }
    /// The path as messages show it.
    const std::string& shown() const { return shown_; }
    /// The tensor's raw bytes, inside the mapping.
    std::span<const std::uint8_t> raw(const GgufTensor& tensor) const;
    /// The tensor as float32 (decode_gguf_tensor).
    io::Array read(const GgufTensor& tensor) const;
    /// read(*header().find(name)), or InputError naming the missing tensor.
    io::Array read(std::string_view name) const;
    /// Rows `rows` (in that order, repeats allowed) of a matrix tensor as float32, shape
    /// [rows.size(), columns]: only those rows' blocks are dequantized (a row is a whole
    /// number of blocks). Throws InputError as read() does, and for a tensor that is not a
    /// matrix or a row past its end.
    io::Array read_rows(const GgufTensor& tensor, std::span<const std::size_t> rows) const;

  private:
    /// Throws InputError when the mapped file shrank since it was mapped.
    void check_unchanged() const;

    std::string shown_;
    std::optional<io::MappedFile> map_; ///< the mapping, or none
    std::vector<std::uint8_t> whole_;   ///< or a pipe/device, read whole
    GgufHeader header_;
};

/// True when a path ends in ".gguf" (case-insensitive), or names a regular file that begins
/// with GGUF's magic whatever its name (Ollama's blobs).
bool is_gguf_path(std::string_view path);

} // namespace attn::model

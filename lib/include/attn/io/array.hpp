// Arrays as they arrive from files and JSON literals, and their strict readers and
// writers. We parse NPY and JSON arrays ourselves: xtensor's load_npy trusts the header
// (a hostile shape allocates anything, a truncated payload yields garbage) and its JSON
// bridge overflows on ragged input. Nothing here allocates for a payload before its
// size has been checked against the bytes actually present.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::io {

/// An n-d array converted to float32, row-major (C order).
struct Array {
    std::vector<std::size_t> shape;
    std::vector<float> values;  ///< product(shape) elements, C order
    std::string dtype;          ///< what the source held: "float32", "float16", "int64", "bool", ...
    bool is_bool = false;       ///< the source was boolean (NPY b1, or JSON true/false)
};

/// What an array field may hold: numbers only, or numbers and booleans (masks).
enum class ArrayKind { numeric, mask };

/// The header of an NPY file.
struct NpyHeader {
    int major_version = 1;
    std::string descr;          ///< e.g. "<f4", ">i2", "|b1"
    bool fortran_order = false;
    std::vector<std::size_t> shape;
    std::size_t header_bytes = 0;  ///< offset of the payload
    std::size_t item_size = 0;
    std::string dtype;          ///< numpy name: "float32", "int16", "bool", ...
};

/// Parses and validates an NPY header (versions 1, 2, 3; descr f2/f4/f8, i1-i8, u1-u8, b1
/// in either byte order; fortran_order; shape with overflow-checked product; payload
/// length at least product·item_size). `name` prefixes every message.
/// Throws InputError("NAME: ...").
NpyHeader parse_npy_header(std::span<const std::uint8_t> bytes, std::string_view name);

/// Parses a whole NPY file into float32, C order. Throws InputError.
Array parse_npy(std::span<const std::uint8_t> bytes, std::string_view name);

/// Converts a JSON array literal: nested lists of rank 1 to 4, rectangular; numbers or
/// the strings "inf", "-inf", "nan" (also "Infinity"/"NaN" are NOT accepted); booleans
/// only when kind == mask (then true = 1, false = 0). `name` (a field name or a file)
/// prefixes every message, with the JSON index path of the culprit, e.g.
/// "query: [1][2]: expected a number, got an object". Throws InputError.
Array parse_json_array(const nlohmann::json& j, std::string_view name, ArrayKind kind);

/// Reads all bytes of a file. Throws InputError("PATH: cannot read: REASON").
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

/// Reads a .npy or .json array file (by extension, case-insensitive). A .json file holds
/// one array literal. Throws InputError naming the file.
Array read_array_file(const std::filesystem::path& path, ArrayKind kind);

/// Shortest decimal text that reads back as the same float32 ("0.70710677", "1e-07").
/// Non-finite values give "inf", "-inf", "nan" (without quotes).
std::string format_float(float x);

/// A JSON array literal (nested lists) of the given shape; non-finite numbers are written
/// as the strings "inf", "-inf", "nan". Rank 0 gives a bare number.
std::string encode_json_array(const std::vector<std::size_t>& shape, const float* values);

/// An NPY v1.0 file (v2.0 if the header needs it), C order, "<f4" or "<f8" (f64 = true).
std::vector<std::uint8_t> encode_npy(const std::vector<std::size_t>& shape,
                                     const float* values,
                                     bool f64);

/// Output formats by extension: ".npy" or ".json" (case-insensitive); anything else
/// throws InputError naming the path.
enum class ArrayFormat { npy, json };
ArrayFormat array_format_for(const std::filesystem::path& path);

/// Writes bytes to `path` whole or not at all: a sibling temp file, fsync, then rename;
/// the temp file is removed on any failure and an existing file is left untouched.
/// Throws SystemError("PATH: cannot write: REASON").
void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

}  // namespace attn::io

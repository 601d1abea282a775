// Arrays as they arrive from files and JSON literals, and the format dispatch of array
// files (.npy or .json). The formats are units of their own: npy.hpp, json_array.hpp
// (strict readers and writers), file_read.hpp, atomic_file.hpp, json_text.hpp and
// number_text.hpp; this header includes them all, so one include serves every caller.
// We parse NPY and JSON arrays ourselves: xtensor's load_npy trusts the header (a hostile
// shape allocates anything, a truncated payload yields garbage) and its JSON bridge
// overflows on ragged input.
#pragma once

#include "attn/io/atomic_file.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/number_text.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::io {

/// The precision of a computation (`"precision"` / `--precision`): float32, or float64
/// throughout, with inputs read into double without passing through float32.
enum class Precision { f32, f64 };

/// An n-d array converted to float32, row-major (C order); read with Precision::f64, also
/// held exactly in float64 (values64), for the f64 computation.
struct Array {
    std::vector<std::size_t> shape;
    std::vector<float> values; ///< product(shape) elements, C order
    /// Precision::f64 only (empty otherwise, so f32 runs pay nothing): the same elements as
    /// read, in float64 (NPY f8 and JSON decimals exactly; values is their float32 rounding).
    std::vector<double> values64;
    std::string dtype;    ///< what the source held: "float32", "float16", "int64", "bool", ...
    bool is_bool = false; ///< the source was boolean (NPY b1, or JSON true/false)
    /// Float32 values its caller owns, read in place instead of `values` (which is then
    /// empty): product(shape) floats in C order, unchanged while any copy of the pointer
    /// lives, whose owner it keeps alive (an aliasing shared_ptr). A numpy array handed
    /// over by the Python module; decode_problem reads a rank-4 query, key or value
    /// through it without a copy (problem.hpp, InputTensor).
    std::shared_ptr<const float> borrowed;

    /// The float32 values: the borrowed ones, or `values`.
    std::span<const float> floats() const;
    /// A borrowed array made an ordinary one: its values copied into `values`, its owner
    /// let go. Does nothing to an array that owns its values.
    void copy_borrowed();
};

/// What an array field may hold: numbers only, or numbers and booleans (masks).
enum class ArrayKind { numeric, mask };

/// Reads a .npy or .json array file (by extension, case-insensitive). A .json file holds
/// one array literal. A regular .npy file is read header first: its shape is checked
/// against the file size and memory_limit() before the payload is read or allocated.
/// With Precision::f64 the array is also held exactly in double (Array::values64).
/// Throws InputError naming the file.
Array read_array_file(const std::filesystem::path& path,
                      ArrayKind kind,
                      Precision precision = Precision::f32);

/// Where a regular .npy file's float32 values may go instead of Array::values: called with
/// the validated shape before the payload is read; returns storage for product(shape)
/// floats (e.g. the data of a tensor it allocates), or nullptr to use Array::values.
using ValueSink = std::function<float*(const std::vector<std::size_t>& shape)>;

/// read_array_file, with a regular .npy file's values decoded straight into what `sink`
/// returns (then Array::values stays empty): no second copy of a large input. Other
/// files, Precision::f64 and a null return read as read_array_file does.
/// A path naming a .npz archive ("x.npz" or "x.npz:name", attn/io/npz.hpp) reads one
/// member: the one it names, else `npz_member` (the field's name: "query", or "w_q" for
/// "params.w_q"), else the archive's only array.
Array read_array_file(const std::filesystem::path& path,
                      ArrayKind kind,
                      Precision precision,
                      const ValueSink& sink,
                      std::string_view npz_member = {});

/// Refuses the files users have that attn does not read (.pt, .pth, .bin, .ckpt: PyTorch
/// pickles; .gguf) with what to do instead: InputError "PATH: unknown FORMAT_OF format
/// (expected EXPECTED); HINT". read_array_file calls it with ("array", ".npy, .json or
/// .npz"), a params file with ("params", ".json, .npz or .safetensors").
void refuse_foreign_formats(const std::filesystem::path& path,
                            std::string_view format_of,
                            std::string_view expected);

/// Output formats by extension: ".npy" or ".json" (case-insensitive); anything else
/// throws InputError naming the path. (read_array_file refuses .pt, .pth, .bin, .ckpt and
/// .gguf inputs with a hint of what to do instead.)
enum class ArrayFormat { npy, json };
ArrayFormat array_format_for(const std::filesystem::path& path);

/// Bytes read as text (for the JSON parser), without a copy.
std::string_view as_text(std::span<const std::uint8_t> bytes);

/// True when `bytes` start with the NPY magic "\x93NUMPY" (the reader's own constant):
/// how input of no known name (stdin, a file without .npy/.json) is told apart.
bool looks_like_npy(std::span<const std::uint8_t> bytes);

/// An array from bytes of unknown format: NPY when it has the NPY magic, else one JSON
/// array literal. `name` prefixes every message. With Precision::f64 the values are also
/// kept exactly in double (Array::values64). Throws InputError.
Array parse_array_bytes(std::span<const std::uint8_t> bytes,
                        std::string_view name,
                        ArrayKind kind,
                        Precision precision = Precision::f32);

} // namespace attn::io

// The units that take and return Array (they include this header first).
#include "attn/io/json_array.hpp" // IWYU pragma: export
#include "attn/io/npy.hpp"        // IWYU pragma: export

// NPY files: the strict reader (versions 1-3; f2/f4/f8, i1-i8, u1-u8, b1 in either byte
// order, C or Fortran order) and the "<f4"/"<f8" writer. A header is never trusted: every
// size is checked against the bytes actually present before anything is allocated.
#pragma once

#include "attn/io/array.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn {
template <class T> struct WeightsDestination; // attn/attention.hpp
} // namespace attn

namespace attn::io {

/// The header of an NPY file.
struct NpyHeader {
    int major_version = 1;
    std::string descr; ///< e.g. "<f4", ">i2", "|b1"
    bool fortran_order = false;
    std::vector<std::size_t> shape;
    std::size_t header_bytes = 0; ///< offset of the payload
    std::size_t item_size = 0;
    std::string dtype; ///< numpy name: "float32", "int16", "bool", ...
};

/// Parses and validates an NPY header (versions 1, 2, 3; descr f2/f4/f8, i1-i8, u1-u8, b1
/// in either byte order; fortran_order; shape with overflow-checked product; payload
/// length at least product·item_size). `name` prefixes every message.
/// Throws InputError("NAME: ...").
NpyHeader parse_npy_header(std::span<const std::uint8_t> bytes, std::string_view name);

/// Parses a whole NPY file into float32, C order (and float64 too with Precision::f64).
/// Throws InputError.
Array parse_npy(std::span<const std::uint8_t> bytes,
                std::string_view name,
                Precision precision = Precision::f32);

/// An array already in memory, as numpy holds one: C-order elements of the NPY dtype `descr`
/// (numpy's dtype.str: "<f4", ">i2", "|b1", ...) in `shape`, decoded as parse_npy decodes a
/// file's payload (float32, and float64 too with Precision::f64; dtype and is_bool set), so a
/// front end handing over arrays (Python) reads every dtype exactly as a .npy file of the
/// same data. Throws InputError("NAME: ...") for a dtype NPY files may not hold, a payload
/// whose size is not the shape's, or an array over memory_limit().
Array decode_npy_values(std::span<const std::uint8_t> payload,
                        std::string_view descr,
                        const std::vector<std::size_t>& shape,
                        std::string_view name,
                        Precision precision = Precision::f32);

/// The element type of a float NPY file we write: "<f2" (each value rounded to nearest,
/// double_to_half), "<f4" (rounded to nearest from float64 values), "<f8".
enum class NpyFloat { f16, f32, f64 };

/// NpyFloat::f64 when `f64`, else f32: the outputs' --dtype.
constexpr NpyFloat npy_float(bool f64) {
    return f64 ? NpyFloat::f64 : NpyFloat::f32;
}

/// An NPY v1.0 file (v2.0 if the header needs it), C order, "<f4" or "<f8" (f64 = true).
std::vector<std::uint8_t>
encode_npy(const std::vector<std::size_t>& shape, const float* values, bool f64);
/// From float64 values: "<f8" exactly, or "<f4" rounded to nearest (f64 = false).
std::vector<std::uint8_t>
encode_npy(const std::vector<std::size_t>& shape, const double* values, bool f64);
/// An Array as NPY: from its float64 values when it has them (so an f64 result written with
/// f64 = true is exact), else from its float32 values.
std::vector<std::uint8_t> encode_npy(const Array& a, bool f64);
/// The same in any float element type (from the float64 values when the Array has them).
std::vector<std::uint8_t> encode_npy(const Array& a, NpyFloat type);
/// An array of integers (token ids, held exactly in `values`; counts past 2^24 in
/// `values64`) as "<i8" NPY bytes.
std::vector<std::uint8_t> encode_npy_int64(const Array& a);

/// encode_npy(a, f64) written to `path` as write_file_atomic writes, without holding the
/// encoded file in memory: a regular file gets the header and then the payload 1 MiB at a
/// time (so a large output costs no second copy); "-" and devices get the whole encoding.
/// Throws SystemError("PATH: cannot write: REASON").
void write_npy_file(const std::filesystem::path& path, const Array& a, bool f64);
/// The same in any float element type.
void write_npy_file(const std::filesystem::path& path, const Array& a, NpyFloat type);

/// Where a streamed encoding goes, piece by piece in order.
using ByteSink = std::function<void(std::span<const std::uint8_t>)>;
/// encode_npy(a, type)'s bytes handed to `sink` in order: the header, then the payload in
/// pieces of at most 1 MiB (a little-endian host's float32 values: their own bytes).
void stream_npy(const Array& a, NpyFloat type, const ByteSink& sink);
/// The size of encode_npy's encoding of an array of `shape` in `type` (an array held in
/// memory: its values fit).
std::uint64_t npy_size(const std::vector<std::size_t>& shape, NpyFloat type);

/// An "<f4" NPY file ("<f2" with NpyFloat::f16: each value rounded as it is written) of
/// `shape` whose values arrive in blocks, in any order, from any thread: an unnamed temp file in
/// the target's folder (AtomicWriter's `unnamed`), sized and reserved at construction (a full disk
/// or RLIMIT_FSIZE fails here, before any work), each block written at its place with pwrite (so
/// the values never enter the process's memory: they go from the caller's buffer to the page
/// cache), renamed over `path` by commit(). The file's bytes are encode_npy(shape, values,
/// false)'s. Destroyed uncommitted, or if the process dies, nothing is left and `path` is
/// untouched. A little-endian host and a regular file only (npy_mappable). Throws
/// SystemError("PATH: cannot write: REASON") (a failed block write: from commit()).
///
/// Example:
///     io::NpyFileWriter out("w.npy", {8, 4096, 4096});
///     out.write(first, block.data(), block.size());   // each block, from any thread
///     out.commit();
class NpyFileWriter {
  public:
    NpyFileWriter(const std::filesystem::path& path,
                  const std::vector<std::size_t>& shape,
                  NpyFloat type = NpyFloat::f32);

    std::size_t size() const { return count_; }
    /// Stores elements [first, first + count) (C order) from `values`; never throws (a
    /// failure is commit()'s).
    void write(std::size_t first, const float* values, std::size_t count) noexcept;
    /// The kernel's destination for these values (WeightsDestination's `store`: each
    /// finished block goes to write()). Borrows this writer.
    WeightsDestination<float> destination();
    void commit();

  private:
    AtomicWriter out_;
    std::size_t header_ = 0;
    std::size_t count_ = 0;
    bool f16_ = false;
};

/// A .npy file's values as float32, read in place: the file mapped read-only
/// (MappedFile), its header checked as strictly as parse_npy checks it (and the payload's
/// length exactly the shape's). A little-endian "<f4" C-order payload is not copied:
/// values() points into the mapping; any other dtype or layout is decoded as parse_npy
/// decodes it (from the mapping, without reading the file into memory first).
/// Throws InputError naming `name`.
class NpyView {
  public:
    NpyView(const std::filesystem::path& path, std::string_view name);

    const std::vector<std::size_t>& shape() const { return shape_; }
    const std::string& dtype() const { return dtype_; }
    std::span<const float> values() const { return values_; }
    /// Values [first, first + count) are no longer needed: a mapped payload's pages leave
    /// the process (read again if touched later); nothing for a decoded one.
    void release(std::size_t first, std::size_t count) const noexcept;
    /// Throws InputError naming the file when it shrank while its values were read
    /// (MappedFile::check_unchanged): call it before writing anything made from them.
    void check_unchanged() const;

  private:
    void read_header(std::string_view name);

    MappedFile file_;
    Array decoded_;
    std::vector<std::size_t> shape_;
    std::string dtype_;
    std::span<const float> values_;
    std::size_t offset_ = 0; ///< of the values in the file; 0 when decoded
};

/// True when NpyFileWriter can write `path`: a little-endian host, and a path that is not
/// "-" (stdout) nor a device or FIFO (written_in_place).
bool npy_mappable(const std::filesystem::path& path);

} // namespace attn::io

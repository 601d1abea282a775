// Arrays as they arrive from files and JSON literals, and their strict readers and
// writers. We parse NPY and JSON arrays ourselves: xtensor's load_npy trusts the header
// (a hostile shape allocates anything, a truncated payload yields garbage) and its JSON
// bridge overflows on ragged input. Nothing here allocates for a payload before its
// size has been checked against the bytes actually present.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
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
};

/// What an array field may hold: numbers only, or numbers and booleans (masks).
enum class ArrayKind { numeric, mask };

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

/// Converts a JSON array literal: nested lists of rank 1 to 4, rectangular; numbers or
/// the strings "inf", "-inf", "nan" (also "Infinity"/"NaN" are NOT accepted); booleans
/// only when kind == mask (then true = 1, false = 0). `name` (a field name or a file)
/// prefixes every message, with the JSON index path of the culprit, e.g.
/// "query: [1][2]: expected a number, got an object". With Precision::f64 the numbers are
/// also kept exactly as parsed, in double (Array::values64). Throws InputError.
Array parse_json_array(const nlohmann::json& j,
                       std::string_view name,
                       ArrayKind kind,
                       Precision precision = Precision::f32);

/// Reads all bytes of a file. A file larger than memory_limit() (attn/io/limits.hpp) is
/// refused before anything is read: by its size for regular files, as the bytes arrive
/// for pipes and devices. Throws InputError("PATH: cannot read: REASON").
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

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

/// JSON nested deeper than this (arrays and objects) is refused before it is parsed:
/// nlohmann's copies, comparisons and dumps recurse once per level, so a hostile
/// "[[[[...]]]]" of a million levels would overflow the stack.
inline constexpr std::size_t max_json_depth = 128;

/// Throws InputError("NAME: JSON nested deeper than 128 levels") when the text nests
/// arrays and objects deeper than `max_depth`. A linear scan that skips strings; it does
/// not validate the text (the parser does that afterwards).
void check_json_depth(std::string_view text,
                      std::string_view name,
                      std::size_t max_depth = max_json_depth);

/// `text` made safe for a one-line message: control characters (line breaks, NUL, ESC,
/// ...) and DEL are written as \xNN, other bytes are kept; cut to `max_chars` bytes
/// with "..." appended. Use it for anything quoted from the input (keys, paths, strings).
std::string message_text(std::string_view text, std::size_t max_chars = 200);

/// Shortest decimal text that reads back as the same float32 ("0.70710677", "1e-07").
/// Non-finite values give "inf", "-inf", "nan" (without quotes).
std::string format_float(float x);

/// Shortest decimal text that reads back as the same float64 ("0.1", "0.7071067811865476");
/// non-finite values as format_float.
std::string format_double(double x);

/// A JSON array literal (nested lists) of the given shape; non-finite numbers are written
/// as the strings "inf", "-inf", "nan". Rank 0 gives a bare number.
std::string encode_json_array(const std::vector<std::size_t>& shape, const float* values);
/// The same with float64 numbers, each the shortest text that reads back as that double.
std::string encode_json_array64(const std::vector<std::size_t>& shape, const double* values);
/// An Array as a JSON literal: its float64 values when it has them (an f64 result), else its
/// float32 values.
std::string encode_json_array(const Array& a);

/// An NPY v1.0 file (v2.0 if the header needs it), C order, "<f4" or "<f8" (f64 = true).
std::vector<std::uint8_t>
encode_npy(const std::vector<std::size_t>& shape, const float* values, bool f64);
/// From float64 values: "<f8" exactly, or "<f4" rounded to nearest (f64 = false).
std::vector<std::uint8_t>
encode_npy64(const std::vector<std::size_t>& shape, const double* values, bool f64);
/// An Array as NPY: from its float64 values when it has them (so an f64 result written with
/// f64 = true is exact), else from its float32 values.
std::vector<std::uint8_t> encode_npy(const Array& a, bool f64);

/// encode_npy(a, f64) written to `path` as write_file_atomic writes, without holding the
/// encoded file in memory: a regular file gets the header and then the payload 1 MiB at a
/// time (so a large output costs no second copy); "-" and devices get the whole encoding.
/// Throws SystemError("PATH: cannot write: REASON").
void write_npy_file(const std::filesystem::path& path, const Array& a, bool f64);

/// Output formats by extension: ".npy" or ".json" (case-insensitive); anything else
/// throws InputError naming the path, with a hint for the files users have that attn does
/// not read (.pt, .pth, .bin, .ckpt, .gguf) and for .npz (an input format only).
enum class ArrayFormat { npy, json };
ArrayFormat array_format_for(const std::filesystem::path& path);

/// Writes bytes to `path` whole or not at all: a sibling temp file, fsync, then rename;
/// the temp file is removed on any failure and an existing file is left untouched.
/// "-" writes to stdout; devices and FIFOs (which a rename cannot replace) are written in
/// place. Throws SystemError("PATH: cannot write: REASON").
void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

/// A regular file written whole or not at all, in pieces: the constructor creates a sibling
/// temp file (".NAME.tmp.XXXXXX"), write() appends to it, commit() fsyncs it and renames it
/// over `path` (through a symlink, over the file it points to). Destroyed uncommitted, or
/// after any failure, it removes the temp file and leaves `path` untouched. While it
/// exists, the temp file is registered for install_signal_cleanup().
/// Throws SystemError("PATH: cannot write: REASON").
///
/// Example:
///     io::AtomicWriter out("big.npy");
///     out.write(header);
///     out.write(payload);
///     out.commit();
class AtomicWriter {
  public:
    explicit AtomicWriter(const std::filesystem::path& path);
    AtomicWriter(const AtomicWriter&) = delete;
    AtomicWriter& operator=(const AtomicWriter&) = delete;
    ~AtomicWriter();

    void write(std::span<const std::uint8_t> bytes);
    void commit();

    /// The temp file being written (empty once committed or abandoned).
    const std::string& temp_path() const { return temp_; }

  private:
    [[noreturn]] void fail(int err);
    void abandon() noexcept;

    std::string shown_;  ///< the path as the user gave it, for messages
    std::string target_; ///< what the rename replaces
    std::string dir_;    ///< the folder, fsynced after the rename
    std::string temp_;
    int fd_ = -1;
    int slot_ = -1; ///< signal-cleanup registration, -1 if none
};

/// Installs SIGINT, SIGTERM and SIGHUP handlers that remove the temp files of the
/// AtomicWriters in progress (write_file_atomic uses one), then re-raise the signal with
/// its default action, so the exit status still says "killed by SIGINT". Signals the
/// process ignores (nohup) stay ignored. Also ignores SIGXFSZ, so a write beyond
/// RLIMIT_FSIZE fails with EFBIG (and is cleaned up) instead of killing the process.
/// The handlers only call unlink() and raise() (async-signal-safe); registration is
/// lock-free. Call once, early in main(). SIGKILL cannot be handled: nothing can clean
/// up after it.
void install_signal_cleanup();

} // namespace attn::io

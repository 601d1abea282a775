// Fuzz target: the NPY reader (io::parse_npy_header, io::parse_npy, and the header-first
// file reader behind io::read_array_file). Properties: nothing but InputError escapes, its
// message is one line; the in-memory and the file reader agree; whatever parses
// round-trips: read -> write (f32) -> read gives the same values and shape, and writing
// that again gives the same bytes; the f64 writer keeps every value too.
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <span>

using namespace attn;

namespace {

/// A scratch file per process for the file reader: on tmpfs when there is one (ext4 flushes
/// a file rewritten after a truncation on close, which would make every input wait on the
/// disk), removed at exit.
const std::filesystem::path& scratch_file() {
    static const std::filesystem::path path = [] {
        std::error_code ec;
        const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm", ec)
                                              ? std::filesystem::path("/dev/shm")
                                              : std::filesystem::temp_directory_path();
        std::filesystem::path file = dir / ("attn_npy_fuzz_" + std::to_string(::getpid()) + ".npy");
        fuzz::remove_at_exit(file);
        return file;
    }();
    return path;
}

} // namespace

ATTN_FUZZ_TARGET(npy) {
    fuzz::set_limits();
    const std::span<const std::uint8_t> bytes(data, size);

    fuzz::only_input_errors("parse_npy_header", [&] {
        const io::NpyHeader h = io::parse_npy_header(bytes, "fuzz.npy");
        fuzz::expect(h.header_bytes <= size, "header_bytes beyond the input");
        fuzz::expect(h.item_size >= 1 && h.item_size <= 8, "odd item size");
    });

    io::Array a;
    const bool parsed =
        fuzz::only_input_errors("parse_npy", [&] { a = io::parse_npy(bytes, "fuzz.npy"); });

    // The file reader reads the header first and decodes the payload in chunks: it must
    // accept exactly what the in-memory reader accepts, with the same values.
    {
        std::ofstream(scratch_file(), std::ios::binary | std::ios::trunc)
            .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
        io::Array from_file;
        const bool file_parsed = fuzz::only_input_errors("read_array_file", [&] {
            from_file = io::read_array_file(scratch_file(), io::ArrayKind::numeric);
        });
        fuzz::expect(file_parsed == parsed, "read_array_file and parse_npy disagree on success");
        if (parsed) {
            fuzz::expect_same_array(a, from_file, "read_array_file vs parse_npy");
        }
    }
    if (!parsed) {
        return 0;
    }
    fuzz::expect(a.values.size() == fuzz::element_count(a.shape), "values do not fill the shape");

    const io::Array b = fuzz::expect_npy_round_trip(a, false, "f32 round trip");
    fuzz::expect(io::encode_npy(b.shape, b.values.data(), false) ==
                     io::encode_npy(a.shape, a.values.data(), false),
                 "f32 NPY bytes change on a second round trip");
    (void)fuzz::expect_npy_round_trip(a, true, "f64 round trip");
    return 0;
}

// A .npy file read in place (attn/io/npy.hpp's NpyView): mapped, its header checked
// strictly, float32 values borrowed from the mapping when the payload already holds them.
#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/npy.hpp"

#include <bit>
#include <string>

namespace attn::io {

NpyView::NpyView(const std::filesystem::path& path, std::string_view name) : file_(path) {
    try {
        read_header(name);
    } catch (const InputError&) {
        file_.check_unchanged(); // zeros where the file was cut say nothing of the file
        throw;
    }
    file_.check_unchanged();
}

void NpyView::read_header(std::string_view name) {
    const std::span<const std::uint8_t> bytes = file_.bytes();
    const NpyHeader header = parse_npy_header(bytes, name);
    const bool in_place = std::endian::native == std::endian::little && header.descr == "<f4" &&
                          !header.fortran_order && header.header_bytes % alignof(float) == 0;
    if (!in_place) {
        decoded_ = parse_npy(bytes, name);
        shape_ = decoded_.shape;
        dtype_ = decoded_.dtype;
        values_ = decoded_.values;
        return;
    }
    std::size_t count = 1;
    for (const std::size_t d : header.shape) {
        count *= d; // checked by parse_npy_header against the bytes present
    }
    const std::size_t present = bytes.size() - header.header_bytes;
    if (present != count * sizeof(float)) {
        throw InputError::trailing_bytes(name, count * sizeof(float), present);
    }
    shape_ = header.shape;
    dtype_ = header.dtype;
    offset_ = header.header_bytes;
    // The mapping is page-aligned and the payload's offset a multiple of 4 (checked above).
    values_ = {reinterpret_cast<const float*>(bytes.data() + offset_), count};
}

void NpyView::check_unchanged() const {
    file_.check_unchanged();
}

void NpyView::release(std::size_t first, std::size_t count) const noexcept {
    if (offset_ != 0) {
        file_.release(offset_ + first * sizeof(float), count * sizeof(float));
    }
}

} // namespace attn::io

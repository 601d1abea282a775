// A GGUF file opened for reading: mapped read-only (io::MappedFile; a pipe or device is read
// whole), its header parsed once, and each tensor dequantized to float32 only when asked, within
// the memory limit. The header rules are in gguf.cpp, the dequantizers in gguf_quants.cpp.
#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/limits.hpp"
#include "attn/model/gguf.hpp"
#include "detail.hpp"

#include <cerrno>
#include <limits>
#include <sys/stat.h>

namespace attn::model {

using detail::quote_name;

io::Array
decode_gguf_tensor(const GgufTensor& t, std::span<const std::uint8_t> data, std::string_view name) {
    const std::string where = std::string(name) + ": tensor " + quote_name(t.name) + ": ";
    const GgmlTypeTraits* traits = ggml_type_traits(t.type);
    ATTN_ASSERT(traits != nullptr); // parse_gguf_header refuses unknown types
    if (!traits->dequantizable) {
        throw InputError(where + "ggml type " + std::string(traits->name) +
                         " is not supported (attn dequantizes " +
                         std::string(dequantizable_type_names()) + ")");
    }
    if (data.size() != t.bytes) {
        throw InputError(where + "truncated: expected " + std::to_string(t.bytes) + " bytes, got " +
                         std::to_string(data.size()));
    }
    const std::size_t count = io::detail::element_count(t.shape);
    const std::uint64_t limit = io::memory_limit();
    if (count > limit / sizeof(float)) {
        throw InputError(where + "the array of shape " + shape_string(t.shape) + " needs " +
                         io::format_size(static_cast<std::uint64_t>(count) * sizeof(float)) +
                         " to load as float32, more than the memory limit of " +
                         io::format_size(limit) + " (--max-memory)");
    }
    io::Array out;
    out.shape = t.shape;
    out.dtype = "float32";
    out.values.resize(count);
    dequantize_ggml(t.type, data, out.values);
    return out;
}

GgufFile::GgufFile(const std::filesystem::path& path)
    : shown_(io::detail::shown_path(path.string())) {
    io::Fd fd(io::detail::open_for_reading(path.string()));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        throw InputError::cannot_read(shown_, errno);
    }
    if (S_ISDIR(st.st_mode)) {
        throw InputError::cannot_read(shown_, EISDIR);
    }
    fd.close();
    std::span<const std::uint8_t> bytes;
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        bytes = map_.emplace(path).bytes();
    } else {
        whole_ = io::read_file(path);
        bytes = whole_;
    }
    try {
        header_ = parse_gguf_header(bytes, bytes.size(), shown_);
    } catch (const InputError&) {
        check_unchanged(); // zeros where the file was cut say nothing of the file
        throw;
    }
    check_unchanged();
}

void GgufFile::check_unchanged() const {
    if (map_) {
        map_->check_unchanged();
    }
}

std::span<const std::uint8_t> GgufFile::raw(const GgufTensor& t) const {
    const std::span<const std::uint8_t> all =
        map_ ? map_->bytes() : std::span<const std::uint8_t>(whole_);
    // parse_gguf_header checked that the tensor lies inside the file.
    return all.subspan(static_cast<std::size_t>(header_.data_start + t.offset),
                       static_cast<std::size_t>(t.bytes));
}

io::Array GgufFile::read(const GgufTensor& t) const {
    io::Array out = decode_gguf_tensor(t, raw(t), shown_);
    check_unchanged();
    return out;
}

io::Array GgufFile::read_rows(const GgufTensor& t, std::span<const std::size_t> rows) const {
    const std::size_t columns = io::detail::check_matrix_rows(
        t.shape, rows, shown_ + ": tensor " + quote_name(t.name) + ": ");
    const GgmlTypeTraits* traits = ggml_type_traits(t.type);
    ATTN_ASSERT(traits != nullptr); // parse_gguf_header refuses unknown types
    // parse_gguf_header checked that the block size divides dims[0], the columns.
    const std::uint64_t row_bytes =
        static_cast<std::uint64_t>(columns / traits->block) * traits->block_bytes;
    io::Array out;
    out.shape = {rows.size(), columns};
    out.dtype = "float32";
    out.values.reserve(rows.size() * columns);
    GgufTensor one = t; // a one-row tensor inside t's data: decode_gguf_tensor checks it
    one.dims = {columns, 1};
    one.shape = {1, columns};
    one.bytes = row_bytes;
    for (const std::size_t r : rows) {
        one.offset = t.offset + r * row_bytes;
        const io::Array row = decode_gguf_tensor(one, raw(one), shown_);
        out.values.insert(out.values.end(), row.values.begin(), row.values.end());
    }
    check_unchanged();
    return out;
}

io::Array GgufFile::read(std::string_view name) const {
    const GgufTensor* t = header_.find(name);
    if (t == nullptr) {
        throw InputError(shown_ + ": no tensor " + quote_name(name));
    }
    return read(*t);
}

} // namespace attn::model

// The format dispatch of array files: .npy or .json by extension, read with the strict
// readers of npy.cpp and json_array.cpp, and .npz archives (npz.cpp). It does not decide what an
// array means (which ranks a field takes is the caller's business).
#include "attn/io/array.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/path_name.hpp"
#include "npy_header.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace attn::io {

using namespace detail;

std::string lower_extension(const std::filesystem::path& path) {
    std::string ext = path.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](char c) {
        return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    });
    return ext;
}

void refuse_foreign_formats(const std::filesystem::path& path,
                            std::string_view format_of,
                            std::string_view expected) {
    const std::string ext = lower_extension(path);
    std::string hint;
    if (ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt") {
        hint = "PyTorch files are pickles (loading one can run code): save the tensor with "
               "np.save('x.npy', t.numpy()) or a checkpoint as .safetensors";
    } else if (ext == ".gguf") {
        hint = "a GGUF file is a whole model, not an array: give it as --params (attn info "
               "lists its tensors)";
    }
    if (!hint.empty()) {
        throw InputError(shown_path(path.string()) + ": unknown " + std::string(format_of) +
                         " format (expected " + std::string(expected) + "); " + hint);
    }
}

std::span<const float> Array::floats() const {
    if (borrowed) {
        std::size_t n = 1;
        for (const std::size_t d : shape) {
            n *= d;
        }
        return {borrowed.get(), n};
    }
    return values;
}

void Array::copy_borrowed() {
    if (borrowed) {
        const std::span<const float> v = floats();
        values.assign(v.begin(), v.end());
        borrowed.reset();
    }
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
    refuse_foreign_formats(path, "array", ".npy, .json or .npz");
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
    const nlohmann::json j = parse_json_file_text(text, shown);
    return parse_json_array(j, shown, kind, precision);
}

ArrayFormat array_format_for(const std::filesystem::path& path) {
    const std::string ext = lower_extension(path);
    if (ext == ".npy") {
        return ArrayFormat::npy;
    }
    if (ext == ".json") {
        return ArrayFormat::json;
    }
    throw InputError(shown_path(path.string()) + ": unknown array format (expected .npy or .json)");
}

std::string_view as_text(std::span<const std::uint8_t> bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

bool looks_like_npy(std::span<const std::uint8_t> bytes) {
    return bytes.size() >= npy_magic.size() &&
           std::equal(npy_magic.begin(), npy_magic.end(), bytes.begin());
}

Array parse_array_bytes(std::span<const std::uint8_t> bytes,
                        std::string_view name,
                        ArrayKind kind,
                        Precision precision) {
    if (looks_like_npy(bytes)) {
        return parse_npy(bytes, name, precision);
    }
    const nlohmann::json j = parse_json_text(as_text(bytes), name);
    return parse_json_array(j, name, kind, precision);
}

} // namespace attn::io

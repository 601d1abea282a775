// The format dispatch of array files: .npy or .json by extension, read with the strict
// readers of npy.cpp and json_array.cpp. It does not decide what an array means (which
// ranks a field takes is the caller's business).
#include "attn/io/array.hpp"

#include "attn/error.hpp"
#include "io_detail.hpp"
#include "npy_header.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace attn::io {

using namespace detail;

Array read_array_file(const std::filesystem::path& path, ArrayKind kind, Precision precision) {
    return read_array_file(path, kind, precision, ValueSink());
}

Array read_array_file(const std::filesystem::path& path,
                      ArrayKind kind,
                      Precision precision,
                      const ValueSink& sink) {
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
    std::string ext = path.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](char c) {
        return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    });
    if (ext == ".npy") {
        return ArrayFormat::npy;
    }
    if (ext == ".json") {
        return ArrayFormat::json;
    }
    throw InputError(shown_path(path.string()) + ": unknown array format (expected .npy or .json)");
}

} // namespace attn::io

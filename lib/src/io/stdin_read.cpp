// "-" as stdin: read once per process, within the memory limit.
#include "attn/io/stdin_read.hpp"

#include "attn/error.hpp"
#include "attn/io/limits.hpp"

#include <cerrno>
#include <mutex>

namespace attn::io {

std::vector<std::uint8_t> read_stream(std::FILE* stream, std::string_view what) {
    std::vector<std::uint8_t> out;
    std::vector<std::uint8_t> buffer(std::size_t{1} << 16);
    const std::uint64_t limit = memory_limit();
    for (;;) {
        const std::size_t got = std::fread(buffer.data(), 1, buffer.size(), stream);
        if (out.size() + got > limit) {
            throw InputError(std::string(what) + ": <stdin>: more than the memory limit of " +
                             format_size(limit) + " (--max-memory)");
        }
        out.insert(out.end(), buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(got));
        if (got < buffer.size()) {
            if (std::ferror(stream) != 0) {
                throw InputError::cannot_read(std::string(what) + ": <stdin>",
                                              errno != 0 ? errno : EIO);
            }
            break;
        }
    }
    return out;
}

std::vector<std::uint8_t> read_stdin(std::string_view what) {
    static std::mutex mutex;
    static std::string first_user;
    {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!first_user.empty()) {
            throw InputError(std::string(what) + ": stdin (-) is already read by " + first_user +
                             "; only one input can be -");
        }
        first_user = what;
    }
    return read_stream(stdin, what);
}

Array read_array_arg(const std::string& path, ArrayKind kind) {
    if (path == "-") {
        const auto bytes = read_stdin("<stdin>");
        return parse_array_bytes(bytes, "<stdin>", kind);
    }
    return read_array_file(path, kind);
}

} // namespace attn::io

// "-" as stdin for every input: read once per process, format sniffed by
// io::parse_array_bytes (NPY or JSON).
#include "attn/error.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <utility>

namespace attn::app {

namespace fs = std::filesystem;
using nlohmann::json;

// --- stdin ------------------------------------------------------------------------------------

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
    std::vector<std::uint8_t> out;
    std::vector<std::uint8_t> buffer(std::size_t{1} << 16);
    const std::uint64_t limit = io::memory_limit();
    for (;;) {
        const std::size_t got = std::fread(buffer.data(), 1, buffer.size(), stdin);
        if (out.size() + got > limit) {
            throw InputError(std::string(what) + ": <stdin>: more than the memory limit of " +
                             io::format_size(limit) + " (--max-memory)");
        }
        out.insert(out.end(), buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(got));
        if (got < buffer.size()) {
            if (std::ferror(stdin) != 0) {
                throw InputError(std::string(what) + ": <stdin>: cannot read: " +
                                 std::strerror(errno != 0 ? errno : EIO));
            }
            break;
        }
    }
    return out;
}

io::Array read_array_arg(const std::string& path, io::ArrayKind kind) {
    if (path == "-") {
        const auto bytes = read_stdin("<stdin>");
        return io::parse_array_bytes(bytes, "<stdin>", kind);
    }
    return io::read_array_file(path, kind);
}

} // namespace attn::app

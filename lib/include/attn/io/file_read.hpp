// Reading a whole file within the memory limit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace attn::io {

/// Reads all bytes of a file. A file larger than memory_limit() (attn/io/limits.hpp) is
/// refused before anything is read: by its size for regular files, as the bytes arrive
/// for pipes and devices. Throws InputError("PATH: cannot read: REASON").
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

} // namespace attn::io

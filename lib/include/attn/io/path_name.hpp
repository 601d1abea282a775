// What a path's name says, read the one way every reader and writer reads it.
#pragma once

#include <filesystem>
#include <string>

namespace attn::io {

/// The path's extension in lower case (ASCII): "x.NPY" -> ".npy"; "" for none.
std::string lower_extension(const std::filesystem::path& path);

} // namespace attn::io

// PNG encoding of rendered images, in memory (stbi_write_png_to_func): the caller decides
// where the bytes go (write_file_atomic, stdout, a test's decoder). No file I/O here.
#pragma once

#include "attn/render/image.hpp"

#include <cstdint>
#include <vector>

namespace attn::render {

/// An 8-bit RGB PNG of `image` (zlib level 8, stb's per-row filter choice). Deterministic:
/// the same image always gives the same bytes. Throws SystemError if encoding fails
/// (out of memory) and InputError for an empty image.
std::vector<std::uint8_t> encode_png(const Image& image);

} // namespace attn::render

// PNG encoding of rendered images, in memory: the caller decides
// where the bytes go (write_file_atomic, stdout, a test's decoder). No file I/O here.
#pragma once

#include "attn/render/image.hpp"

#include <cstdint>
#include <vector>

namespace attn::render {

/// An 8-bit RGB PNG of `image`: each row with the filter whose bytes have the least sum of
/// magnitudes, the rows deflated (zlib level 1) in fixed parts of about 256 KiB on
/// `threads` threads (0: all cores) and joined as one zlib stream. Deterministic: the same
/// image always gives the same bytes, whatever the thread count. Throws SystemError if
/// encoding fails (out of memory) and InputError for an empty image.
std::vector<std::uint8_t> encode_png(const Image& image, unsigned threads = 0);

} // namespace attn::render

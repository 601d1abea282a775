// zlib streams (RFC 1950) made of parts deflated one at a time and joined (RFC 1951): each
// part ends on a byte boundary and refers to nothing before it, so parts can be made on any
// thread, in any order, and the stream is the same bytes for any thread count. Used by the
// HTML view's blocks and the PNG's picture. In memory only; inflating is not here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace attn::render {

/// Appends one raw-deflate part for `bytes` (not empty) to `out`: one dynamic-Huffman block
/// of literals only (no matches, code lengths built from the part's byte counts, at most 15
/// bits), not final, then an empty stored block to reach a byte boundary (what zlib's
/// Z_SYNC_FLUSH writes). On bytes few of which repeat in runs (an attention map's colour
/// indices) it is as small as zlib's Z_HUFFMAN_ONLY and several times faster. Returns the
/// Adler-32 of `bytes` (zlib's adler32 of them), counted in the same pass.
std::uint32_t deflate_literals(std::span<const std::uint8_t> bytes, std::vector<std::uint8_t>& out);

/// zlib's own deflate of one part at a time (raw, `level` 1-9, `strategy` Z_DEFAULT_STRATEGY,
/// Z_RLE, ...), each started afresh and ended like deflate_literals' parts. One per thread;
/// reusable. Throws SystemError when zlib fails (out of memory).
class ZlibParts {
  public:
    ZlibParts(int level, int strategy);
    ZlibParts(const ZlibParts&) = delete;
    ZlibParts& operator=(const ZlibParts&) = delete;
    ~ZlibParts();

    /// Appends `bytes`' part (not empty) to `out`.
    void append(std::span<const std::uint8_t> bytes, std::vector<std::uint8_t>& out);

  private:
    struct State;
    State* state_;
};

/// The zlib header every stream here starts with (deflate, 32 KiB window, "fastest").
void zlib_begin(std::vector<std::uint8_t>& out);

/// Ends a zlib stream of parts: an empty final block, then `adler` (the Adler-32 of all
/// the bytes the parts hold, in order; zlib's adler32/adler32_combine) big-endian.
void zlib_end(std::uint32_t adler, std::vector<std::uint8_t>& out);

} // namespace attn::render

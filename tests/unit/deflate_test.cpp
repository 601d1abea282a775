// zlib streams of parts (attn/render/deflate.hpp) inflated by zlib's own inflate (an
// independent decoder): literal-only blocks on uniform, skewed, one- and two-valued bytes,
// and counts that make Huffman codes longer than deflate's 15 bits; zlib parts and literal
// parts mixed in one stream; the literal blocks' size against zlib's Z_HUFFMAN_ONLY.
#include "attn/render/deflate.hpp"

#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <random>
#include <span>
#include <vector>
#include <zlib.h>

namespace attn::render {
namespace {

std::vector<std::uint8_t> inflated(const std::vector<std::uint8_t>& z, std::size_t size) {
    std::vector<std::uint8_t> out(size + 1);
    uLongf got = static_cast<uLongf>(out.size());
    const int status = uncompress(out.data(), &got, z.data(), static_cast<uLong>(z.size()));
    EXPECT_EQ(status, Z_OK) << "zlib's inflate refused the stream";
    out.resize(status == Z_OK ? got : 0);
    return out;
}

std::uint32_t adler_of(std::span<const std::uint8_t> b) {
    return static_cast<std::uint32_t>(adler32_z(adler32(0, nullptr, 0), b.data(), b.size()));
}

/// `bytes` as one zlib stream of literal parts of at most `part` bytes.
std::vector<std::uint8_t> literal_stream(const std::vector<std::uint8_t>& bytes, std::size_t part) {
    std::vector<std::uint8_t> z;
    zlib_begin(z);
    for (std::size_t at = 0; at < bytes.size(); at += part) {
        const auto piece = std::span(bytes).subspan(at, std::min(part, bytes.size() - at));
        EXPECT_EQ(deflate_literals(piece, z), adler_of(piece)) << "the part's Adler-32";
    }
    zlib_end(adler_of(bytes), z);
    return z;
}

/// Inputs with every shape of code: uniform, skewed (about 63 % zeros, then geometric),
/// one value, two values, one byte, each value once.
std::vector<std::vector<std::uint8_t>> inputs() {
    std::mt19937 rng(3);
    std::vector<std::vector<std::uint8_t>> in(6);
    for (int i = 0; i < 70000; ++i) {
        in[0].push_back(static_cast<std::uint8_t>(rng()));
        std::geometric_distribution<int> g(0.63);
        in[1].push_back(static_cast<std::uint8_t>(std::min(g(rng), 255)));
    }
    in[2].assign(5000, 42);
    for (int i = 0; i < 3000; ++i) {
        in[3].push_back(rng() % 5 == 0 ? 7 : 200);
    }
    in[4] = {9};
    for (int i = 0; i < 256; ++i) {
        in[5].push_back(static_cast<std::uint8_t>(255 - i));
    }
    return in;
}

TEST(Deflate, LiteralPartsInflateToTheirBytes) {
    for (const auto& bytes : inputs()) {
        for (const std::size_t part : {std::size_t{1} << 16, std::size_t{1000}}) {
            EXPECT_EQ(inflated(literal_stream(bytes, part), bytes.size()), bytes)
                << bytes.size() << " bytes in parts of " << part;
        }
    }
}

TEST(Deflate, CodesLongerThanFifteenBitsAreFolded) {
    // Counts growing like the Fibonacci numbers (1, 2, 3, 5, ...: with the end of block's
    // count of 1 the Fibonacci sequence itself) give a minimum-redundancy code one bit
    // longer per symbol: 27 symbols, codes up to 26 bits before folding.
    std::vector<std::uint8_t> bytes;
    std::uint32_t a = 1, b = 2;
    for (std::uint8_t s = 0; s < 26; ++s) {
        bytes.insert(bytes.end(), a, s);
        const std::uint32_t c = a + b;
        a = b;
        b = c;
    }
    std::shuffle(bytes.begin(), bytes.end(), std::mt19937(5));
    ASSERT_GT(bytes.size(), 500000u);
    EXPECT_EQ(inflated(literal_stream(bytes, bytes.size()), bytes.size()), bytes);
}

TEST(Deflate, LiteralPartsAreAsSmallAsZlibsHuffmanOnly) {
    const std::vector<std::uint8_t> bytes = inputs()[1];
    std::vector<std::uint8_t> z(compressBound(static_cast<uLong>(bytes.size())));
    z_stream s{};
    ASSERT_EQ(deflateInit2(&s, 1, Z_DEFLATED, 15, 8, Z_HUFFMAN_ONLY), Z_OK);
    s.next_in = const_cast<Bytef*>(bytes.data());
    s.avail_in = static_cast<uInt>(bytes.size());
    s.next_out = z.data();
    s.avail_out = static_cast<uInt>(z.size());
    ASSERT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
    const std::size_t zlib_size = s.total_out;
    deflateEnd(&s);
    const std::size_t ours = literal_stream(bytes, std::size_t{1} << 16).size();
    EXPECT_LE(ours, zlib_size + zlib_size / 100) << "zlib's Z_HUFFMAN_ONLY: " << zlib_size;
}

TEST(Deflate, ZlibAndLiteralPartsJoinAsOneStream) {
    const auto in = inputs();
    std::vector<std::uint8_t> all, z;
    zlib_begin(z);
    ZlibParts runs(1, Z_RLE), best(9, Z_DEFAULT_STRATEGY);
    for (std::size_t k = 0; k < in.size(); ++k) {
        all.insert(all.end(), in[k].begin(), in[k].end());
        if (k % 3 == 0) {
            deflate_literals(in[k], z);
        } else {
            (k % 3 == 1 ? runs : best).append(in[k], z);
        }
    }
    zlib_end(adler_of(all), z);
    EXPECT_EQ(inflated(z, all.size()), all);
}

} // namespace
} // namespace attn::render

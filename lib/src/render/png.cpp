// encode_png: an 8-bit RGB PNG (ISO/IEC 15948) written here: each row filtered by the
// filter whose output has the least sum of magnitudes (stb's and libpng's heuristic), the
// rows deflated in fixed parts on the threads given and joined as one zlib stream
// (attn/render/deflate.hpp). No file I/O; no decoding.
#include "attn/render/png.hpp"

#include "attn/error.hpp"
#include "attn/parallel.hpp"
#include "attn/render/deflate.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <zlib.h>

namespace attn::render {

namespace {

/// Filtered bytes deflated as one part: about this many (whole rows, at least one).
constexpr std::size_t kPartBytes = std::size_t{1} << 18;

std::uint8_t paeth(int a, int b, int c) {
    const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    return static_cast<std::uint8_t>(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

/// `row` filtered by PNG filter `F` (PNG 9.2: 0 none, 1 sub, 2 up, 3 average, 4 Paeth;
/// 3 bytes a pixel) against the row above `up` into `dst`; the sum of the bytes'
/// magnitudes read as signed.
template <int F>
std::uint64_t
filtered(const std::uint8_t* row, const std::uint8_t* up, std::size_t n, std::uint8_t* dst) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const int a = i >= 3 ? row[i - 3] : 0, b = up[i], c = i >= 3 ? up[i - 3] : 0;
        const int pred = F == 0   ? 0
                         : F == 1 ? a
                         : F == 2 ? b
                         : F == 3 ? (a + b) / 2
                                  : paeth(a, b, c);
        dst[i] = static_cast<std::uint8_t>(row[i] - pred);
        sum += static_cast<std::uint64_t>(std::abs(static_cast<std::int8_t>(dst[i])));
    }
    return sum;
}

/// Row `y` of `image` as the PNG stores it, into `out` (its filter type, then width * 3
/// bytes): the first of the five filters whose bytes have the least sum of magnitudes
/// (the row above the first is zeros). `trial`, `zeros`: width * 3 bytes of scratch, and
/// of zeros.
void filter_row(const Image& image,
                std::size_t y,
                std::uint8_t* out,
                std::vector<std::uint8_t>& trial,
                const std::vector<std::uint8_t>& zeros) {
    const std::size_t n = trial.size();
    const std::uint8_t* row = image.pixels.data() + y * n;
    const std::uint8_t* up = y > 0 ? row - n : zeros.data();
    std::uint64_t best = filtered<0>(row, up, n, out + 1);
    out[0] = 0;
    const std::array<std::uint64_t (*)(
                         const std::uint8_t*, const std::uint8_t*, std::size_t, std::uint8_t*),
                     4>
        rest = {&filtered<1>, &filtered<2>, &filtered<3>, &filtered<4>};
    for (std::size_t f = 0; f < rest.size(); ++f) {
        const std::uint64_t cost = rest[f](row, up, n, trial.data());
        if (cost < best) {
            best = cost;
            out[0] = static_cast<std::uint8_t>(f + 1);
            std::copy(trial.begin(), trial.end(), out + 1);
        }
    }
}

void chunk(std::vector<std::uint8_t>& out,
           std::string_view type,
           std::span<const std::uint8_t> data) {
    const auto be32 = [&out](std::uint32_t v) {
        out.insert(out.end(),
                   {static_cast<std::uint8_t>(v >> 24),
                    static_cast<std::uint8_t>(v >> 16),
                    static_cast<std::uint8_t>(v >> 8),
                    static_cast<std::uint8_t>(v)});
    };
    be32(static_cast<std::uint32_t>(data.size()));
    const std::size_t at = out.size();
    out.insert(out.end(), type.begin(), type.end());
    out.insert(out.end(), data.begin(), data.end());
    be32(static_cast<std::uint32_t>(crc32_z(0, out.data() + at, out.size() - at)));
}

} // namespace

std::vector<std::uint8_t> encode_png(const Image& image, unsigned threads) {
    if (image.width <= 0 || image.height <= 0 ||
        image.pixels.size() !=
            static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height) * 3) {
        throw InputError("png: cannot encode an empty or inconsistent image");
    }
    const std::size_t h = static_cast<std::size_t>(image.height);
    const std::size_t line = static_cast<std::size_t>(image.width) * 3 + 1;
    const std::size_t rows = std::max<std::size_t>(1, kPartBytes / line); // per part
    const std::size_t parts = (h + rows - 1) / rows;
    // Each part: its rows filtered, deflated alone (zlib level 1) and its Adler-32; the
    // parts are fixed by the picture, so the bytes are the same for any thread count.
    std::vector<std::vector<std::uint8_t>> z(parts);
    std::vector<std::uint32_t> adler(parts);
    const unsigned workers = attn::detail::resolve_threads(threads, parts);
    std::vector<std::unique_ptr<ZlibParts>> coder(workers);
    attn::detail::parallel_for(parts, workers, [&](unsigned w, std::size_t p) {
        const std::size_t y0 = p * rows, y1 = std::min(h, y0 + rows);
        std::vector<std::uint8_t> filtered((y1 - y0) * line), trial(line - 1), zeros(line - 1);
        for (std::size_t y = y0; y < y1; ++y) {
            filter_row(image, y, filtered.data() + (y - y0) * line, trial, zeros);
        }
        if (!coder[w]) {
            coder[w] = std::make_unique<ZlibParts>(1, Z_DEFAULT_STRATEGY);
        }
        coder[w]->append(filtered, z[p]);
        adler[p] = static_cast<std::uint32_t>(adler32_z(1, filtered.data(), filtered.size()));
    });
    std::vector<std::uint8_t> idat;
    zlib_begin(idat);
    uLong sum = adler32(0, nullptr, 0);
    for (std::size_t p = 0; p < parts; ++p) {
        idat.insert(idat.end(), z[p].begin(), z[p].end());
        const std::size_t y0 = p * rows, y1 = std::min(h, y0 + rows);
        sum = adler32_combine(sum, adler[p], static_cast<z_off_t>((y1 - y0) * line));
    }
    zlib_end(static_cast<std::uint32_t>(sum), idat);
    std::vector<std::uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const auto w32 = static_cast<std::uint32_t>(image.width), h32 = static_cast<std::uint32_t>(h);
    const std::array<std::uint8_t, 13> ihdr = {
        static_cast<std::uint8_t>(w32 >> 24),
        static_cast<std::uint8_t>(w32 >> 16),
        static_cast<std::uint8_t>(w32 >> 8),
        static_cast<std::uint8_t>(w32),
        static_cast<std::uint8_t>(h32 >> 24),
        static_cast<std::uint8_t>(h32 >> 16),
        static_cast<std::uint8_t>(h32 >> 8),
        static_cast<std::uint8_t>(h32),
        8,
        2,
        0,
        0,
        0}; // 8 bits, truecolour, deflate, adaptive filters, no interlace
    chunk(out, "IHDR", ihdr);
    chunk(out, "IDAT", idat);
    chunk(out, "IEND", {});
    return out;
}

} // namespace attn::render

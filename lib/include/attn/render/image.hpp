// The pixel buffer every renderer draws into: RGB8, row-major, no alpha, no file I/O.
// Encoding to PNG lives in attn/render/png.hpp; this header is shared by both so that a
// test can render and decode without touching the disk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn::render {

/// An sRGB colour, 8 bits per channel.
struct Rgb {
    std::uint8_t r = 0, g = 0, b = 0;
    friend bool operator==(const Rgb&, const Rgb&) = default;
};

/// An axis-aligned box in pixels; (x, y) is the top-left corner.
struct Box {
    double x = 0.0, y = 0.0, w = 0.0, h = 0.0;
};

/// A plain RGB8 image: pixel (x, y) is at pixels[3·(y·width + x)].
struct Image {
    int width = 0;
    int height = 0;
    std::vector<std::uint8_t> pixels;

    Image() = default;
    /// A width x height image filled with `fill`.
    Image(int w, int h, Rgb fill = {255, 255, 255})
        : width(w), height(h),
          pixels(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3) {
        for (std::size_t i = 0; i < pixels.size(); i += 3) {
            pixels[i] = fill.r;
            pixels[i + 1] = fill.g;
            pixels[i + 2] = fill.b;
        }
    }

    /// Byte offset of pixel (x, y); the caller keeps 0 <= x < width, 0 <= y < height.
    std::size_t offset(int x, int y) const {
        return (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                static_cast<std::size_t>(x)) *
               3;
    }
    Rgb at(int x, int y) const {
        const std::size_t o = offset(x, y);
        return {pixels[o], pixels[o + 1], pixels[o + 2]};
    }
    void set(int x, int y, Rgb c) {
        const std::size_t o = offset(x, y);
        pixels[o] = c.r;
        pixels[o + 1] = c.g;
        pixels[o + 2] = c.b;
    }
};

} // namespace attn::render

// What the heatmap tests share (heatmap_test, heatmap_svg_test, terminal_test): a PNG
// decoded by stb_image (an independent decoder), a figure's PNG round trip, a colour as SVG's
// #rrggbb, and the labelled 3x3 map.
#pragma once

#include "attn/render/heatmap.hpp"
#include "attn/render/png.hpp"

#include <cstdint>
#include <cstdio>
#include <gtest/gtest.h>
#include <stb_image.h>
#include <string>
#include <vector>

namespace attn::render::testing {

/// Decodes PNG bytes with stb_image (an independent decoder) into an Image.
inline Image decode_png(const std::vector<std::uint8_t>& bytes) {
    int w = 0, h = 0, channels = 0;
    unsigned char* data =
        stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &channels, 3);
    EXPECT_NE(data, nullptr) << stbi_failure_reason();
    Image img;
    if (data == nullptr) {
        return img;
    }
    img.width = w;
    img.height = h;
    img.pixels.assign(data, data + static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3);
    stbi_image_free(data);
    return img;
}

/// A figure as a PNG round trip: render, encode, decode.
inline Image png_round_trip(const HeatmapFigure& hf) {
    return decode_png(render::encode_png(rasterize(hf.figure)));
}

inline std::string hex(Rgb c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
    return buf;
}

inline const std::vector<float> k3x3 = {0.7f, 0.2f, 0.1f, 0.25f, 0.5f, 0.25f, 0.05f, 0.15f, 0.8f};

inline HeatmapInput input_3x3(const std::vector<float>& values = k3x3) {
    HeatmapInput in;
    in.rows = in.cols = 3;
    in.panels.push_back({"", values, {}});
    in.row_labels = {"the", "cat", "sat"};
    in.col_labels = {"the", "cat", "sat"};
    return in;
}

} // namespace attn::render::testing

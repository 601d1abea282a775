// Colormap lookup by name and matplotlib's index rule; the tables themselves are data:
// colormaps.txt (generated once from matplotlib, checked in), embedded at build time and
// decoded here once.
#include "attn/render/colormap.hpp"

#include "attn/error.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <sstream>

namespace attn::render {

namespace detail {
extern const char kColormapsBytes[];
extern const std::size_t kColormapsByteCount;
} // namespace detail

namespace {

struct NamedTable {
    std::string name;
    ColormapTable table;
};

/// The embedded colormaps.txt, decoded on first use: `#` comment lines, "NAME:" on a line
/// of its own, then the map's 256 colours as RRGGBB hex (our own file: a malformed one is
/// a bug, caught by the checksums of tests/unit/colormap_test.cpp).
const std::vector<NamedTable>& tables() {
    static const std::vector<NamedTable> decoded = [] {
        std::vector<NamedTable> maps;
        std::size_t filled = 256;
        std::istringstream text(std::string(detail::kColormapsBytes, detail::kColormapsByteCount));
        std::string line;
        while (std::getline(text, line)) {
            if (line.empty() || line[0] == '#') {
                continue;
            }
            if (line.back() == ':') {
                ATTN_ASSERT(filled == 256);
                maps.push_back({line.substr(0, line.size() - 1), {}});
                filled = 0;
                continue;
            }
            std::istringstream colours(line);
            std::string hex;
            while (colours >> hex) {
                std::uint32_t v = 0;
                [[maybe_unused]] const auto [end, err] =
                    std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
                ATTN_ASSERT(!maps.empty() && filled < 256 && hex.size() == 6 &&
                            err == std::errc() && end == hex.data() + hex.size());
                maps.back().table[filled++] = {static_cast<std::uint8_t>(v >> 16),
                                               static_cast<std::uint8_t>(v >> 8),
                                               static_cast<std::uint8_t>(v)};
            }
        }
        ATTN_ASSERT(filled == 256);
        return maps;
    }();
    return decoded;
}

double srgb_to_linear(std::uint8_t v) {
    const double c = static_cast<double>(v) / 255.0;
    return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

} // namespace

std::size_t Colormap::colormap_index(double t) {
    // matplotlib: xa = t·N, truncated; t = 1 (xa == N) is the last entry; below 0 is
    // "under" and above 1 "over", which default to the end colours.
    if (!(t > 0.0)) {
        return 0;
    }
    const double x = t * 256.0;
    if (x >= 255.0) {
        return 255;
    }
    return static_cast<std::size_t>(x);
}

const std::vector<std::string>& colormap_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto& t : tables()) {
            v.push_back(t.name);
        }
        return v;
    }();
    return names;
}

std::optional<Colormap> find_colormap(std::string_view name) {
    std::string key(name);
    std::transform(key.begin(), key.end(), key.begin(), [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
    bool reversed = false;
    if (key.size() > 2 && key.compare(key.size() - 2, 2, "_r") == 0) {
        reversed = true;
        key.resize(key.size() - 2);
    }
    for (const auto& t : tables()) {
        if (key == t.name) {
            return Colormap{reversed ? key + "_r" : key, &t.table, reversed};
        }
    }
    return std::nullopt;
}

double relative_luminance(Rgb c) {
    return 0.2126 * srgb_to_linear(c.r) + 0.7152 * srgb_to_linear(c.g) +
           0.0722 * srgb_to_linear(c.b);
}

Rgb contrast_text_color(Rgb cell) {
    return relative_luminance(cell) > 0.408 ? Rgb{38, 38, 38} : Rgb{255, 255, 255};
}

} // namespace attn::render

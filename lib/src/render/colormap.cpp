// Colormap lookup by name and matplotlib's index rule; the tables themselves are in
// colormap_tables.cpp (generated once from matplotlib, checked in).
#include "attn/render/colormap.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace attn::render {

namespace detail {
extern const ColormapTable kViridisTable, kMagmaTable, kInfernoTable, kPlasmaTable, kCividisTable,
    kBluesTable, kGreysTable;
} // namespace detail

namespace {

struct NamedTable {
    const char* name;
    const ColormapTable* table;
};

const NamedTable kTables[] = {{"viridis", &detail::kViridisTable},
                              {"magma", &detail::kMagmaTable},
                              {"inferno", &detail::kInfernoTable},
                              {"plasma", &detail::kPlasmaTable},
                              {"cividis", &detail::kCividisTable},
                              {"blues", &detail::kBluesTable},
                              {"greys", &detail::kGreysTable}};

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
        for (const auto& t : kTables) {
            v.emplace_back(t.name);
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
    for (const auto& t : kTables) {
        if (key == t.name) {
            return Colormap{reversed ? key + "_r" : key, t.table, reversed};
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

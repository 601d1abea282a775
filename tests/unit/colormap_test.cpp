// Colormap tables against matplotlib's published float tables (independent literals,
// truncated to bytes as matplotlib's Colormap(bytes=True) does), the lookup rule at the
// edges, name lookup, and the annotation-contrast rule.
#include "attn/render/colormap.hpp"

#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <iterator>
#include <limits>
#include <utility>

namespace attn::render {
namespace {

/// matplotlib's float entry as bytes: (x * 255).astype(uint8), i.e. truncation.
Rgb from_float(double r, double g, double b) {
    return {static_cast<std::uint8_t>(r * 255.0),
            static_cast<std::uint8_t>(g * 255.0),
            static_cast<std::uint8_t>(b * 255.0)};
}

TEST(Colormap, NamesInDocumentedOrder) {
    const std::vector<std::string> want{
        "viridis", "magma", "inferno", "plasma", "cividis", "blues", "greys", "rdbu"};
    EXPECT_EQ(colormap_names(), want);
}

TEST(Colormap, ListedTablesMatchMatplotlib) {
    // Entries 0, 128 and 255 of matplotlib's _cm_listed.py data: a name, then r g b of each.
    std::istringstream table(R"(
        viridis  0.267004 0.004874 0.329415  0.127568 0.566949 0.550556  0.993248 0.906157 0.143936
        magma    0.001462 0.000466 0.013866  0.716387 0.214982 0.47529   0.987053 0.991438 0.749504
        inferno  0.001462 0.000466 0.013866  0.735683 0.215906 0.330245  0.988362 0.998364 0.644924
        plasma   0.050383 0.029803 0.527975  0.798216 0.280197 0.469538  0.940015 0.975158 0.131326
        cividis  0.0      0.135112 0.304751  0.488697 0.485318 0.471008  0.995737 0.909344 0.217772
    )");
    std::string name;
    int maps = 0;
    while (table >> name) {
        const auto cmap = find_colormap(name);
        ASSERT_TRUE(cmap) << name;
        for (const std::size_t index : {0u, 128u, 255u}) {
            double r = 0.0, g = 0.0, b = 0.0;
            ASSERT_TRUE(table >> r >> g >> b) << name;
            EXPECT_EQ(cmap->entry(index), from_float(r, g, b)) << name << " entry " << index;
        }
        ++maps;
    }
    EXPECT_EQ(maps, 5);
}

TEST(Colormap, SegmentedTablesHaveTheirEndsAndAreMonotone) {
    // Blues runs from #f7fbff to #08306b, Greys from white to black (matplotlib's _cm.py).
    const auto blues = find_colormap("Blues");
    ASSERT_TRUE(blues);
    EXPECT_EQ(blues->entry(0), (Rgb{247, 251, 255}));
    EXPECT_EQ(blues->entry(255), (Rgb{8, 48, 107}));
    const auto greys = find_colormap("greys");
    ASSERT_TRUE(greys);
    EXPECT_EQ(greys->entry(0), (Rgb{255, 255, 255}));
    EXPECT_EQ(greys->entry(255), (Rgb{0, 0, 0}));
    for (std::size_t i = 1; i < 256; ++i) {
        const Rgb a = greys->entry(i - 1), b = greys->entry(i);
        EXPECT_LE(b.r, a.r) << i;
        EXPECT_EQ(b.r, b.g);
        EXPECT_EQ(b.g, b.b);
        EXPECT_LE(relative_luminance(blues->entry(i)), relative_luminance(blues->entry(i - 1)))
            << i;
    }
}

TEST(Colormap, IndexRuleIsMatplotlibs) {
    using C = Colormap;
    EXPECT_EQ(C::colormap_index(0.0), 0u);
    EXPECT_EQ(C::colormap_index(1.0 / 256.0), 1u);
    EXPECT_EQ(C::colormap_index(0.5), 128u);
    EXPECT_EQ(C::colormap_index(255.0 / 256.0), 255u);
    EXPECT_EQ(C::colormap_index(0.9999), 255u);
    EXPECT_EQ(C::colormap_index(1.0), 255u); // xa == N is not "over"
    EXPECT_EQ(C::colormap_index(-0.5), 0u);  // under: the first colour
    EXPECT_EQ(C::colormap_index(7.0), 255u); // over: the last colour
    EXPECT_EQ(C::colormap_index(std::numeric_limits<double>::infinity()), 255u);
    EXPECT_EQ(C::colormap_index(std::numeric_limits<double>::quiet_NaN()), 0u);
}

TEST(Colormap, LookupIsCaseInsensitiveAndReversible) {
    const auto v = find_colormap("VIRIDIS");
    const auto r = find_colormap("viridis_r");
    ASSERT_TRUE(v);
    ASSERT_TRUE(r);
    EXPECT_EQ(v->name, "viridis");
    EXPECT_EQ(r->name, "viridis_r");
    for (std::size_t i = 0; i < 256; ++i) {
        EXPECT_EQ(r->entry(i), v->entry(255 - i));
    }
    EXPECT_EQ((*r)(0.0), v->entry(255));
    EXPECT_FALSE(find_colormap("jet"));
    EXPECT_FALSE(find_colormap("_r"));
    EXPECT_FALSE(find_colormap(""));
}

TEST(Colormap, ContrastTextFollowsLuminance) {
    EXPECT_DOUBLE_EQ(relative_luminance({255, 255, 255}), 1.0);
    EXPECT_DOUBLE_EQ(relative_luminance({0, 0, 0}), 0.0);
    const auto v = find_colormap("viridis");
    ASSERT_TRUE(v);
    EXPECT_EQ(contrast_text_color(v->entry(255)), (Rgb{38, 38, 38}));  // dark on yellow
    EXPECT_EQ(contrast_text_color(v->entry(0)), (Rgb{255, 255, 255})); // white on purple
    EXPECT_EQ(contrast_text_color({255, 255, 255}), (Rgb{38, 38, 38}));
}

TEST(Colormap, EveryTableIsPinnedByItsChecksum) {
    // FNV-1a (64 bit) over the r, g, b bytes of entries 0..255: any changed byte of any
    // table changes its sum. Pinned from the tables generated from matplotlib 3.6.3 (rdbu:
    // from its transcription, which gives blues and greys byte for byte).
    const auto fnv1a = [](const Colormap& c) {
        std::uint64_t h = 0xcbf29ce484222325u;
        for (std::size_t i = 0; i < 256; ++i) {
            for (const std::uint8_t byte : {c.entry(i).r, c.entry(i).g, c.entry(i).b}) {
                h = (h ^ byte) * 0x100000001b3u;
            }
        }
        return h;
    };
    const std::pair<const char*, std::uint64_t> pinned[] = {
        {"viridis", 0x90c6ad65c23a4182u},
        {"magma", 0x31dde46d7e819339u},
        {"inferno", 0x6141c43a197621e9u},
        {"plasma", 0xf6c435109a1ec502u},
        {"cividis", 0x4ba40aeb8cf0b6c5u},
        {"blues", 0xb45d22e41bc2e108u},
        {"greys", 0x3083aeeefcac300du},
        {"rdbu", 0xdcfe4dcf92ee5385u}, // scripts/colormap_segmented.py
    };
    ASSERT_EQ(std::size(pinned), colormap_names().size());
    for (const auto& [name, sum] : pinned) {
        const auto c = find_colormap(name);
        ASSERT_TRUE(c) << name;
        EXPECT_EQ(fnv1a(*c), sum) << name;
    }
}

} // namespace
} // namespace attn::render

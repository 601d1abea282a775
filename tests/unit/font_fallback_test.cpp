// The fallback font: glyphs DejaVu Sans lacks (CJK) are drawn from a Debian font package
// found at run time, per glyph (a label mixing scripts draws every glyph), and code points
// no font has are recorded for one warning. Compared against the missing-glyph box.
#include "attn/io/fallback_font.hpp"
#include "attn/render/text.hpp"

#include <gtest/gtest.h>
#include <string>

namespace attn::render {
namespace {

const char* const kCat = "\xE7\x8C\xAB";            // U+732B 猫
const char* const kHieroglyph = "\xF0\x93\x80\x80"; // U+13000: in no font we use

Image draw(const std::string& s) {
    Image img(120, 40);
    draw_text(img, s, 10.0, 28.0, 20.0, {0, 0, 0});
    return img;
}

std::size_t ink(const Image& img, int x0 = 0, int x1 = -1) {
    std::size_t n = 0;
    x1 = x1 < 0 ? img.width : x1;
    for (int y = 0; y < img.height; ++y) {
        for (int x = x0; x < x1; ++x) {
            n += img.at(x, y).r < 128 ? 1u : 0u;
        }
    }
    return n;
}

/// Restores a run-time fallback source after each test.
class FontFallback : public ::testing::Test {
  protected:
    void TearDown() override { set_fallback_font_source(&io::read_fallback_font); }
};

TEST_F(FontFallback, CjkIsDrawnNotTheMissingGlyphBox) {
    if (!io::read_fallback_font()) {
        GTEST_SKIP() << "no fallback font installed (scripts/setup.sh installs "
                        "fonts-wqy-microhei)";
    }
    set_fallback_font_source([] { return std::optional<std::vector<unsigned char>>{}; });
    const Image box = draw(kCat); // DejaVu's .notdef box
    EXPECT_EQ(missing_glyphs(), std::vector<char32_t>{0x732B});

    set_fallback_font_source(&io::read_fallback_font);
    const Image cat = draw(kCat);
    EXPECT_TRUE(missing_glyphs().empty());
    EXPECT_NE(cat.pixels, box.pixels);
    EXPECT_GT(ink(cat), 40u);
    // Also not the box of a code point that no font has.
    const Image none = draw(kHieroglyph);
    EXPECT_EQ(none.pixels, box.pixels);
    EXPECT_NE(cat.pixels, none.pixels);
    EXPECT_EQ(missing_glyphs(), std::vector<char32_t>{0x13000});
}

TEST_F(FontFallback, MixedScriptsDrawEveryGlyph) {
    if (!io::read_fallback_font()) {
        GTEST_SKIP() << "no fallback font installed";
    }
    set_fallback_font_source(&io::read_fallback_font);
    const std::string mixed = std::string("ab") + kCat + "cd";
    const double w = text_width(mixed, 20.0);
    EXPECT_NEAR(w, text_width("ab", 20.0) + text_width(kCat, 20.0) + text_width("cd", 20.0), 1.0);
    EXPECT_GT(text_width(kCat, 20.0), 15.0); // a full-width ideograph, not a zero advance
    const Image img = draw(mixed);
    const int cat_x0 = static_cast<int>(10.0 + text_width("ab", 20.0));
    const int cat_x1 = static_cast<int>(10.0 + text_width(std::string("ab") + kCat, 20.0));
    EXPECT_GT(ink(img, 10, cat_x0), 20u);                             // "ab"
    EXPECT_GT(ink(img, cat_x0 + 1, cat_x1 - 1), 40u);                 // the ideograph
    EXPECT_GT(ink(img, cat_x1, static_cast<int>(10.0 + w) + 1), 20u); // "cd"
    EXPECT_TRUE(missing_glyphs().empty());
}

TEST(FallbackFontPaths, FixedDebianPaths) {
    const auto& paths = io::fallback_font_paths();
    ASSERT_FALSE(paths.empty());
    EXPECT_EQ(paths.front(), "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc");
    for (const auto& p : paths) {
        EXPECT_EQ(p.rfind("/usr/share/fonts/", 0), 0u) << p;
    }
}

} // namespace
} // namespace attn::render

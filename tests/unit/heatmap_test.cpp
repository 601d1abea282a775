// The heatmap end to end without the disk: figures rendered, encoded to PNG, decoded
// again with stb_image, and checked pixel by pixel against the colormap tables (cells,
// colorbar, masked hatching, max pooling), for ink under every label, and for bounded
// sizes. The SVG is heatmap_svg_test.cpp, the terminal output terminal_test.cpp.
#include "attn/error.hpp"
#include "attn/render/heatmap.hpp"
#include "attn/render/png.hpp"
#include "attn/render/text.hpp"
#include "unit/heatmap_images.hpp"

#include <cstdint>
#include <cstdlib>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>
#include <zlib.h>

namespace attn::render {
namespace {

using namespace testing;

// --- helpers -------------------------------------------------------------------------------

int darkest(const Image& img, const Box& b) {
    int best = 255;
    for (int y = std::max(0, static_cast<int>(b.y));
         y < std::min(img.height, static_cast<int>(b.y + b.h) + 1);
         ++y) {
        for (int x = std::max(0, static_cast<int>(b.x));
             x < std::min(img.width, static_cast<int>(b.x + b.w) + 1);
             ++x) {
            const Rgb c = img.at(x, y);
            best = std::min(best, (c.r + c.g + c.b) / 3);
        }
    }
    return best;
}

// --- PNG ----------------------------------------------------------------------------------

TEST(HeatmapPng, DimensionsAndCellColoursMatchTheColormap) {
    HeatmapOptions o;
    o.vmin = 0.0;
    o.vmax = 1.0;
    const HeatmapFigure hf = heatmap_figure(input_3x3(), o);
    const Image img = png_round_trip(hf);
    ASSERT_EQ(img.width, hf.figure.width);
    ASSERT_EQ(img.height, hf.figure.height);
    EXPECT_LT(img.width, 800);
    const Colormap v = *find_colormap("viridis");
    const Box& p = hf.panels[0];
    EXPECT_EQ(p.w, p.h); // square cells for a square map
    const double cell = p.w / 3;
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) {
            const double value = static_cast<double>(
                k3x3[static_cast<std::size_t>(r) * 3 + static_cast<std::size_t>(c)]);
            const Rgb want = v.entry(Colormap::colormap_index(value));
            // Near the cell's corners, away from the annotation in its middle.
            for (const auto& [dx, dy] : {std::pair{2, 2}, std::pair{-3, -3}}) {
                const int x = static_cast<int>(p.x + (dx > 0 ? c : c + 1) * cell) + dx;
                const int y = static_cast<int>(p.y + (dy > 0 ? r : r + 1) * cell) + dy;
                EXPECT_EQ(img.at(x, y), want) << "cell " << r << "," << c;
            }
        }
    }
}

TEST(HeatmapPng, AnnotationsUseContrastingText) {
    const HeatmapFigure hf = heatmap_figure(input_3x3(), {});
    ASSERT_TRUE(hf.annotated);
    const Colormap v = *find_colormap("viridis");
    int found = 0;
    for (const auto& t : hf.figure.texts) {
        if (t.text == "0.80") { // the maximum: yellow, dark text
            EXPECT_EQ(t.color, contrast_text_color(v.entry(255)));
            EXPECT_EQ(t.color, (Rgb{38, 38, 38}));
            ++found;
        }
        if (t.text == "0.05") { // the minimum: purple, white text
            EXPECT_EQ(t.color, (Rgb{255, 255, 255}));
            ++found;
        }
    }
    EXPECT_EQ(found, 2);
    // The text colour is actually drawn inside the cell of 0.05 (row 2, column 0).
    const Image img = png_round_trip(hf);
    const Box& p = hf.panels[0];
    const double cell = p.w / 3;
    int white = 0;
    for (int y = static_cast<int>(p.y + 2 * cell); y < static_cast<int>(p.y + 3 * cell); ++y) {
        for (int x = static_cast<int>(p.x); x < static_cast<int>(p.x + cell); ++x) {
            white += img.at(x, y) == Rgb{255, 255, 255} ? 1 : 0;
        }
    }
    EXPECT_GT(white, 10);
}

TEST(HeatmapPng, LabelsTitlesAndColorbarPutInkWhereTheyAre) {
    HeatmapOptions o;
    o.title = "Attention of a 3x3 map";
    const HeatmapFigure hf = heatmap_figure(input_3x3(), o);
    const Image img = png_round_trip(hf);
    // Every text item outside the cells leaves dark ink inside its box.
    std::size_t checked = 0;
    for (const auto& t : hf.figure.texts) {
        if (t.color != Rgb{0, 0, 0}) {
            continue; // annotations (on cells) and grey notes
        }
        EXPECT_LT(darkest(img, text_extent(t)), 100) << "no ink for '" << t.text << "'";
        ++checked;
    }
    // title + 3 x labels + 3 y labels + Keys + Queries + colorbar ticks (>= 2)
    EXPECT_GE(checked, 11u);
    // The colorbar runs from the last colour at the top to the first at the bottom.
    const Colormap v = *find_colormap("viridis");
    const Box& cb = hf.colorbar;
    const int cx = static_cast<int>(cb.x + cb.w / 2);
    EXPECT_EQ(img.at(cx, static_cast<int>(cb.y)), v.entry(255));
    EXPECT_EQ(img.at(cx, static_cast<int>(cb.y + cb.h) - 1), v.entry(0));
    EXPECT_EQ(img.at(cx, static_cast<int>(cb.y + cb.h / 2)), v.entry(127));
    // Its frame is black and the margin right of the title is blank.
    EXPECT_EQ(img.at(cx, static_cast<int>(cb.y) - 1), (Rgb{0, 0, 0}));
    EXPECT_EQ(img.at(img.width - 2, 2), (Rgb{255, 255, 255}));
}

TEST(HeatmapPng, MaskedCellsAreHatched) {
    std::vector<std::uint8_t> mask = {0, 1, 1, 0, 0, 1, 0, 0, 0}; // causal
    std::vector<float> w = {1.0f, 0.0f, 0.0f, 0.4f, 0.6f, 0.0f, 0.2f, 0.3f, 0.5f};
    HeatmapInput in = input_3x3(w);
    in.panels[0].masked = mask;
    const HeatmapFigure hf = heatmap_figure(in, {});
    EXPECT_TRUE(hf.map.any_masked);
    const Image img = png_round_trip(hf);
    const Box& p = hf.panels[0];
    const double cell = p.w / 3;
    std::size_t hatch = 0, background = 0;
    for (int y = static_cast<int>(p.y); y < static_cast<int>(p.y + cell); ++y) {
        for (int x = static_cast<int>(p.x + 2 * cell); x < static_cast<int>(p.x + 3 * cell); ++x) {
            const Rgb c = img.at(x, y);
            hatch += c == kHatchLine ? 1u : 0u;
            background += c == kHatchBackground ? 1u : 0u;
        }
    }
    EXPECT_GT(hatch, 0u);
    EXPECT_GT(background, hatch);
    // Masked zeros do not stretch the colour range: it spans the unmasked 0.2 .. 1.
    EXPECT_FLOAT_EQ(static_cast<float>(hf.map.norm.vmin), 0.2f);
    bool legend = false;
    for (const auto& t : hf.figure.texts) {
        legend = legend || t.text == "masked";
        EXPECT_NE(t.text, "0.00"); // no annotation on masked cells
    }
    EXPECT_TRUE(legend);
}

TEST(HeatmapPng, MaxPoolingKeepsTheMaximum) {
    const std::size_t n = 1000;
    std::vector<float> w(n * n);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> small(0.0f, 0.1f);
    for (auto& x : w) {
        x = small(rng);
    }
    const std::size_t si = 537, sj = 811;
    w[si * n + sj] = 1.0f;
    HeatmapInput in;
    in.rows = in.cols = n;
    in.panels.push_back({"", w, {}});
    const HeatmapFigure hf = heatmap_figure(in, {});
    const PreparedHeatmap& m = hf.map;
    ASSERT_GT(m.pool_rows, 1u);
    EXPECT_EQ(m.pool_rows, m.pool_cols);
    const std::size_t di = si / m.pool_rows, dj = sj / m.pool_cols;
    EXPECT_FLOAT_EQ(m.values[0][di * m.cols + dj], 1.0f);
    EXPECT_FLOAT_EQ(static_cast<float>(m.norm.vmax), 1.0f);
    EXPECT_FALSE(hf.annotated);
    // The spike's pixel has the top colour, and the figure says it is max-pooled.
    const Image img = png_round_trip(hf);
    const Box& p = hf.panels[0];
    const double cw = p.w / static_cast<double>(m.cols), ch = p.h / static_cast<double>(m.rows);
    EXPECT_EQ(img.at(static_cast<int>(p.x + (static_cast<double>(dj) + 0.5) * cw),
                     static_cast<int>(p.y + (static_cast<double>(di) + 0.5) * ch)),
              find_colormap("viridis")->entry(255));
    bool noted = false;
    for (const auto& t : hf.figure.texts) {
        noted = noted || t.text.find("max-pooled") != std::string::npos;
    }
    EXPECT_TRUE(noted);

    // Mean pooling averages the block instead.
    HeatmapOptions mean;
    mean.pool = PoolMode::mean;
    const PreparedHeatmap mm = prepare_heatmap(in, mean, 480, 480);
    EXPECT_LT(mm.values[0][di * mm.cols + dj], 0.2f);
    EXPECT_NE(mm.notes.front().find("mean-pooled"), std::string::npos);
}

TEST(HeatmapPng, LongSequencesGiveABoundedImage) {
    const std::size_t n = 4096;
    std::vector<float> w(n * n, 0.0f);
    for (std::size_t i = 0; i < n; ++i) {
        w[i * n + i / 2] = 1.0f;
    }
    HeatmapInput in;
    in.rows = in.cols = n;
    in.panels.push_back({"", w, {}});
    const HeatmapFigure hf = heatmap_figure(in, {});
    EXPECT_LE(hf.figure.width, 800);
    EXPECT_LE(hf.figure.height, 800);
    EXPECT_EQ(hf.map.pool_rows, 9u);  // ceil(4096 / 480)
    EXPECT_GE(hf.x_label_step, 500u); // index ticks thinned
    // One row of many keys (a KV-cache step) is still a visible strip.
    HeatmapInput strip;
    strip.rows = 1;
    strip.cols = n;
    strip.panels.push_back({"", std::span<const float>(w).subspan(0, n), {}});
    const HeatmapFigure hs = heatmap_figure(strip, {});
    EXPECT_GE(hs.panels[0].h, 40.0);
    EXPECT_EQ(hs.map.pool_rows, 1u);
}

TEST(HeatmapPng, HeadsShareOneColourScale) {
    std::vector<float> a(9, 0.1f), b(9, 0.9f);
    HeatmapInput in;
    in.rows = in.cols = 3;
    in.panels.push_back({"head 0", a, {}});
    in.panels.push_back({"head 1", b, {}});
    const HeatmapFigure hf = heatmap_figure(in, {});
    ASSERT_EQ(hf.panels.size(), 2u);
    EXPECT_FLOAT_EQ(static_cast<float>(hf.map.norm.vmin), 0.1f);
    EXPECT_FLOAT_EQ(static_cast<float>(hf.map.norm.vmax), 0.9f);
    EXPECT_EQ(hf.panels[0].y, hf.panels[1].y); // side by side
    const Image img = png_round_trip(hf);
    const Colormap v = *find_colormap("viridis");
    EXPECT_EQ(img.at(static_cast<int>(hf.panels[0].x) + 2, static_cast<int>(hf.panels[0].y) + 2),
              v.entry(0));
    EXPECT_EQ(img.at(static_cast<int>(hf.panels[1].x) + 2, static_cast<int>(hf.panels[1].y) + 2),
              v.entry(255));
    int titles = 0;
    for (const auto& t : hf.figure.texts) {
        titles += (t.text == "head 0" || t.text == "head 1") ? 1 : 0;
    }
    EXPECT_EQ(titles, 2);
    // Eight heads: a 4 x 2 grid.
    HeatmapInput eight;
    eight.rows = eight.cols = 3;
    for (int h = 0; h < 8; ++h) {
        eight.panels.push_back({"head " + std::to_string(h), a, {}});
    }
    const HeatmapFigure h8 = heatmap_figure(eight, {});
    EXPECT_EQ(h8.panels[3].y, h8.panels[0].y);
    EXPECT_GT(h8.panels[4].y, h8.panels[0].y);
    EXPECT_EQ(h8.panels[4].x, h8.panels[0].x);
}

TEST(HeatmapScale, VminVmaxLogAndClip) {
    const Colormap v = *find_colormap("viridis");
    HeatmapOptions o;
    o.scale = ColorScale::log;
    o.vmin = 1e-4;
    o.vmax = 1.0;
    const PreparedHeatmap m = prepare_heatmap(input_3x3(), o, 3, 3);
    EXPECT_DOUBLE_EQ(m.norm(1.0), 1.0);
    EXPECT_DOUBLE_EQ(m.norm(1e-4), 0.0);
    EXPECT_NEAR(m.norm(1e-2), 0.5, 1e-12);
    EXPECT_EQ(v(m.norm(0.0)), v.entry(0)); // zero is below any log range
    // An attention sink: one column of 0.9, the rest tiny; clip at 0.9 takes it out.
    std::vector<float> sink(100, 0.001f);
    for (std::size_t i = 0; i < 10; ++i) {
        sink[i * 10] = 0.9f;
        sink[i * 10 + 5] = 0.01f * static_cast<float>(i);
    }
    HeatmapInput in;
    in.rows = in.cols = 10;
    in.panels.push_back({"", sink, {}});
    HeatmapOptions c;
    c.clip = 0.85;
    const PreparedHeatmap mc = prepare_heatmap(in, c, 10, 10);
    EXPECT_LT(mc.norm.vmax, 0.9);
    EXPECT_NE(mc.notes.back().find("quantiles"), std::string::npos);
    // numpy: np.quantile(sink, 0.85) with linear interpolation.
    std::vector<float> sorted(sink);
    std::sort(sorted.begin(), sorted.end());
    const double pos = 0.85 * 99;
    const auto lo = static_cast<std::size_t>(pos);
    const auto a = static_cast<double>(sorted[lo]), b = static_cast<double>(sorted[lo + 1]);
    EXPECT_NEAR(mc.norm.vmax, a + (b - a) * (pos - static_cast<double>(lo)), 1e-7);
}

TEST(HeatmapErrors, BadOptionsNameTheFlag) {
    const auto message = [](const HeatmapInput& in, const HeatmapOptions& o) -> std::string {
        try {
            heatmap_figure(in, o);
        } catch (const InputError& e) {
            return e.what();
        }
        return "no error";
    };
    HeatmapOptions o;
    o.vmin = 1.0;
    o.vmax = 0.5;
    EXPECT_EQ(message(input_3x3(), o).rfind("vmin/vmax:", 0), 0u);
    o = {};
    o.scale = ColorScale::log;
    o.vmin = 0.0;
    EXPECT_EQ(message(input_3x3(), o), "vmin: must be > 0 with scale log");
    o = {};
    o.colormap = "jet";
    EXPECT_EQ(message(input_3x3(), o).rfind("colormap: unknown colormap 'jet'", 0), 0u);
    o = {};
    o.clip = 0.2;
    EXPECT_EQ(message(input_3x3(), o).rfind("clip:", 0), 0u);
    HeatmapInput in = input_3x3();
    in.col_labels = {"a", "b"};
    EXPECT_EQ(message(in, {}), "key_tokens: expected 3 key labels (one per key), got 2");
    HeatmapInput big;
    std::vector<float> w(std::size_t{600} * 600, 0.5f);
    big.rows = big.cols = 600;
    big.panels.push_back({"", w, {}});
    o = {};
    o.annotate = Annotate::on;
    EXPECT_EQ(message(big, o).rfind("annotate: the map is pooled", 0), 0u);
}

TEST(HeatmapLabels, RotatedWhenTheyCollideThinnedWhenTooMany) {
    std::vector<float> w(std::size_t{30} * 30, 0.5f);
    HeatmapInput in;
    in.rows = in.cols = 30;
    in.panels.push_back({"", w, {}});
    for (int i = 0; i < 30; ++i) {
        in.col_labels.push_back("token_" + std::to_string(i));
        in.row_labels.push_back("t" + std::to_string(i));
    }
    // At the figure's fixed size (no room to grow), labels are thinned, and it says so.
    HeatmapOptions fixed;
    fixed.max_grown_side = 0.0;
    const HeatmapFigure hf = heatmap_figure(in, fixed);
    EXPECT_TRUE(hf.x_labels_rotated);
    EXPECT_EQ(hf.x_label_step, 1u); // 16 px cells take every rotated label
    EXPECT_EQ(hf.y_label_step, 2u); // 16 px rows thin 14 px text to every other
    ASSERT_EQ(hf.label_notes.size(), 1u);
    EXPECT_EQ(hf.label_notes[0].rfind("query labels thinned: every 2nd of 30 drawn", 0), 0u);
    bool vertical = false;
    for (const auto& t : hf.figure.texts) {
        vertical = vertical || (t.vertical && t.text == "token_7");
    }
    EXPECT_TRUE(vertical);
    // Short labels stay horizontal.
    const HeatmapFigure h3 = heatmap_figure(input_3x3(), {});
    EXPECT_FALSE(h3.x_labels_rotated);
    EXPECT_EQ(h3.x_label_step, 1u);
}

// --- text and PNG encoding -------------------------------------------------------------------

TEST(HeatmapText, EmbeddedFontDrawsHorizontalAndVerticalText) {
    const auto font = embedded_font();
    ASSERT_GT(font.size(), 10000u);
    EXPECT_EQ(font[0], 0x00);
    EXPECT_EQ(font[1], 0x01); // TrueType version 1.0
    EXPECT_GT(text_width("Queries", 14.0), text_width("Keys", 14.0));
    EXPECT_NEAR(text_width("ab", 28.0), 2 * text_width("ab", 14.0), 0.5);
    Image img(100, 100);
    draw_text(img, "Keys", 10, 50, 14.0, {0, 0, 0});
    Image vert(100, 100);
    draw_text(vert, "Keys", 50, 90, 14.0, {0, 0, 0}, Anchor::start, true);
    const auto extent = [](const Image& im) {
        int x0 = im.width, x1 = -1, y0 = im.height, y1 = -1;
        for (int y = 0; y < im.height; ++y) {
            for (int x = 0; x < im.width; ++x) {
                if (im.at(x, y).r < 128) {
                    x0 = std::min(x0, x);
                    x1 = std::max(x1, x);
                    y0 = std::min(y0, y);
                    y1 = std::max(y1, y);
                }
            }
        }
        return std::array<int, 4>{x0, x1, y0, y1};
    };
    const auto h = extent(img), v = extent(vert);
    EXPECT_GT(h[1] - h[0], h[3] - h[2]); // wide
    EXPECT_GT(v[3] - v[2], v[1] - v[0]); // tall
    EXPECT_LE(v[3], 90);                 // above its start point, reading upwards
    EXPECT_LT(v[1], 53);                 // glyph tops to the left of the baseline
    EXPECT_EQ(truncate_text("abcdef", 4), "abc\u2026");
    EXPECT_EQ(truncate_text("abc", 4), "abc");
    EXPECT_EQ(text_length("k\u00E9y"), 3u);
}

TEST(HeatmapPng, EncodingIsDeterministicAndDecodable) {
    Image img(7, 5, {10, 20, 30});
    img.set(3, 2, {200, 100, 0});
    const auto a = render::encode_png(img), b = render::encode_png(img);
    EXPECT_EQ(a, b);
    ASSERT_GT(a.size(), 8u);
    EXPECT_EQ(a[1], 'P');
    const Image back = decode_png(a);
    EXPECT_EQ(back.width, 7);
    EXPECT_EQ(back.height, 5);
    EXPECT_EQ(back.pixels, img.pixels);
    EXPECT_THROW(render::encode_png(Image{}), InputError);
}

TEST(HeatmapPng, RowsDeflatedInPartsOnAnyThreadCountGiveTheSameBytes) {
    // 700 x 400 pixels: about 840 KB of filtered rows, four parts; pixels of every kind a
    // filter picks (flat, gradients, noise).
    Image img(700, 400, {0, 0, 0});
    std::mt19937 rng(1);
    for (int y = 0; y < 400; ++y) {
        for (int x = 0; x < 700; ++x) {
            const auto ux = static_cast<std::uint64_t>(x), uy = static_cast<std::uint64_t>(y);
            const auto v = static_cast<std::uint8_t>(y < 100   ? std::uint64_t{50}
                                                     : y < 200 ? ux + uy
                                                     : y < 300 ? (ux / 7) * 3
                                                               : rng());
            img.set(x, y, {v, static_cast<std::uint8_t>(255 - v), static_cast<std::uint8_t>(x)});
        }
    }
    const auto one = render::encode_png(img, 1);
    EXPECT_EQ(render::encode_png(img, 2), one);
    EXPECT_EQ(render::encode_png(img, 3), one);
    // zlib's inflate checks the joined stream's Adler-32 (stb's decoder does not)
    std::vector<std::uint8_t> idat;
    for (std::size_t at = 8; at + 12 <= one.size();) {
        const std::size_t len = std::size_t{one[at]} << 24 | std::size_t{one[at + 1]} << 16 |
                                std::size_t{one[at + 2]} << 8 | one[at + 3];
        if (std::string(one.begin() + static_cast<std::ptrdiff_t>(at) + 4,
                        one.begin() + static_cast<std::ptrdiff_t>(at) + 8) == "IDAT") {
            idat.insert(idat.end(),
                        one.begin() + static_cast<std::ptrdiff_t>(at) + 8,
                        one.begin() + static_cast<std::ptrdiff_t>(at + 8 + len));
        }
        at += 12 + len;
    }
    std::vector<std::uint8_t> rows(400 * (700 * 3 + 1) + 1);
    uLongf size = rows.size();
    EXPECT_EQ(uncompress(rows.data(), &size, idat.data(), static_cast<uLong>(idat.size())), Z_OK);
    EXPECT_EQ(size, 400u * (700 * 3 + 1));
    const Image back = decode_png(one);
    EXPECT_EQ(back.width, 700);
    EXPECT_EQ(back.height, 400);
    EXPECT_EQ(back.pixels, img.pixels);
}

} // namespace
} // namespace attn::render

// The heatmap end to end without the disk: figures rendered, encoded to PNG, decoded
// again with stb_image, and checked pixel by pixel against the colormap tables (cells,
// colorbar, masked hatching, max pooling), for ink under every label, and for bounded
// sizes; the SVG parsed by a small XML checker and compared cell by cell with the PNG;
// the terminal output compared with tests/golden/term_3x3.txt.
#include "attn/error.hpp"
#include "attn/io/png.hpp"
#include "attn/render/heatmap.hpp"
#include "attn/render/terminal.hpp"
#include "attn/render/text.hpp"

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <random>
#include <sstream>
#include <stb_image.h>
#include <string>
#include <vector>

namespace attn::render {
namespace {

// --- helpers -------------------------------------------------------------------------------

/// Decodes PNG bytes with stb_image (an independent decoder) into an Image.
Image decode_png(const std::vector<std::uint8_t>& bytes) {
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
Image png_round_trip(const HeatmapFigure& hf) {
    return decode_png(io::encode_png(rasterize(hf.figure)));
}

std::string hex(Rgb c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
    return buf;
}

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

Box text_extent(const FigureText& t) {
    const double w = text_width(t.text, t.size);
    const FontMetrics m = font_metrics(t.size);
    const double shift = t.anchor == Anchor::start ? 0.0 : t.anchor == Anchor::middle ? w / 2 : w;
    if (t.vertical) {
        return {t.x - m.ascent, t.y + shift - w, m.ascent + m.descent, w};
    }
    return {t.x - shift, t.y - m.ascent, w, m.ascent + m.descent};
}

const std::vector<float> k3x3 = {0.7f, 0.2f, 0.1f, 0.25f, 0.5f, 0.25f, 0.05f, 0.15f, 0.8f};

HeatmapInput input_3x3(const std::vector<float>& values = k3x3) {
    HeatmapInput in;
    in.rows = in.cols = 3;
    in.panels.push_back({"", values, {}});
    in.row_labels = {"the", "cat", "sat"};
    in.col_labels = {"the", "cat", "sat"};
    return in;
}

/// A minimal XML 1.0 well-formedness checker: one root, balanced and properly nested
/// tags, quoted attributes without '<', known entities only, no stray '<' or '&' in text.
/// Collects every element with its attributes and the id of the nearest <g> around it.
struct XmlElement {
    std::string name;
    std::map<std::string, std::string> attrs;
    std::string group;
    std::string text;
};

class XmlChecker {
  public:
    explicit XmlChecker(std::string s) : s_(std::move(s)) {}

    bool parse(std::string& error) {
        try {
            skip_ws();
            if (s_.compare(i_, 5, "<?xml") == 0) {
                const std::size_t end = s_.find("?>", i_);
                expect(end != std::string::npos, "unterminated XML declaration");
                i_ = end + 2;
            }
            skip_ws();
            element("");
            skip_ws();
            expect(i_ == s_.size(), "content after the root element");
        } catch (const std::runtime_error& e) {
            error = std::string(e.what()) + " at byte " + std::to_string(i_);
            return false;
        }
        return true;
    }
    const std::vector<XmlElement>& elements() const { return elements_; }

  private:
    void expect(bool ok, const char* what) {
        if (!ok) {
            throw std::runtime_error(what);
        }
    }
    void skip_ws() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])) != 0) {
            ++i_;
        }
    }
    std::string name() {
        const std::size_t start = i_;
        while (i_ < s_.size() &&
               (std::isalnum(static_cast<unsigned char>(s_[i_])) != 0 || s_[i_] == '-' ||
                s_[i_] == ':' || s_[i_] == '_' || s_[i_] == '.')) {
            ++i_;
        }
        expect(i_ > start, "expected a name");
        return s_.substr(start, i_ - start);
    }
    void check_entities(const std::string& text) {
        for (std::size_t k = 0; k < text.size(); ++k) {
            expect(text[k] != '<', "'<' in text or attribute");
            if (text[k] == '&') {
                const std::size_t semi = text.find(';', k);
                expect(semi != std::string::npos, "unterminated entity");
                const std::string ent = text.substr(k + 1, semi - k - 1);
                expect(ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" ||
                           ent == "apos" || (!ent.empty() && ent[0] == '#'),
                       "unknown entity");
            }
        }
    }
    void element(const std::string& group) {
        expect(s_[i_] == '<', "expected '<'");
        ++i_;
        XmlElement e;
        e.name = name();
        e.group = group;
        for (;;) {
            skip_ws();
            expect(i_ < s_.size(), "unterminated tag");
            if (s_.compare(i_, 2, "/>") == 0) {
                i_ += 2;
                elements_.push_back(e);
                return;
            }
            if (s_[i_] == '>') {
                ++i_;
                break;
            }
            const std::string key = name();
            skip_ws();
            expect(s_[i_] == '=', "expected '='");
            ++i_;
            skip_ws();
            const char q = s_[i_];
            expect(q == '"' || q == '\'', "unquoted attribute");
            const std::size_t end = s_.find(q, i_ + 1);
            expect(end != std::string::npos, "unterminated attribute");
            const std::string value = s_.substr(i_ + 1, end - i_ - 1);
            check_entities(value);
            expect(e.attrs.emplace(key, value).second, "duplicate attribute");
            i_ = end + 1;
        }
        const std::size_t index = elements_.size();
        elements_.push_back(e);
        const std::string inner = e.name == "g" && e.attrs.count("id") ? e.attrs.at("id") : group;
        for (;;) {
            const std::size_t lt = s_.find('<', i_);
            expect(lt != std::string::npos, "unclosed element");
            const std::string text = s_.substr(i_, lt - i_);
            check_entities(text);
            elements_[index].text += text;
            i_ = lt;
            if (s_.compare(i_, 2, "</") == 0) {
                i_ += 2;
                expect(name() == e.name, "mismatched closing tag");
                skip_ws();
                expect(s_[i_] == '>', "expected '>'");
                ++i_;
                return;
            }
            element(inner);
        }
    }

    std::string s_;
    std::size_t i_ = 0;
    std::vector<XmlElement> elements_;
};

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
    EXPECT_EQ(message(input_3x3(), o).rfind("--vmin/--vmax:", 0), 0u);
    o = {};
    o.scale = ColorScale::log;
    o.vmin = 0.0;
    EXPECT_EQ(message(input_3x3(), o), "--vmin: must be > 0 with --scale log");
    o = {};
    o.colormap = "jet";
    EXPECT_EQ(message(input_3x3(), o).rfind("--cmap: unknown colormap 'jet'", 0), 0u);
    o = {};
    o.clip = 0.2;
    EXPECT_EQ(message(input_3x3(), o).rfind("--clip:", 0), 0u);
    HeatmapInput in = input_3x3();
    in.col_labels = {"a", "b"};
    EXPECT_EQ(message(in, {}), "--xlabels: expected 3 key labels (one per key), got 2");
    HeatmapInput big;
    std::vector<float> w(std::size_t{600} * 600, 0.5f);
    big.rows = big.cols = 600;
    big.panels.push_back({"", w, {}});
    o = {};
    o.annotate = Annotate::on;
    EXPECT_EQ(message(big, o).rfind("--annotate: the map is pooled", 0), 0u);
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

// --- SVG ----------------------------------------------------------------------------------

TEST(HeatmapSvg, WellFormedWithTheSameCellsAsThePng) {
    HeatmapOptions o;
    o.title = "a <title> & \"quotes\"";
    std::vector<std::uint8_t> mask = {0, 0, 1, 0, 0, 0, 0, 0, 0};
    HeatmapInput in = input_3x3();
    in.panels[0].masked = mask;
    const HeatmapFigure hf = heatmap_figure(in, o);
    const std::string svg = figure_svg(hf.figure, io::encode_png);
    XmlChecker xml(svg);
    std::string error;
    ASSERT_TRUE(xml.parse(error)) << error;
    const Image img = png_round_trip(hf);
    std::size_t cells = 0, hatched = 0;
    bool title = false;
    for (const auto& e : xml.elements()) {
        if (e.name == "svg") {
            EXPECT_EQ(e.attrs.at("width"), std::to_string(img.width));
            EXPECT_EQ(e.attrs.at("height"), std::to_string(img.height));
        }
        if (e.name == "text" && e.text == "a &lt;title&gt; &amp; &quot;quotes&quot;") {
            title = true;
        }
        if (e.name != "rect" || e.group != "panel-0") {
            continue;
        }
        ++cells;
        EXPECT_EQ(e.attrs.at("class"), "cell");
        const int x = std::stoi(e.attrs.at("x")) + 1, y = std::stoi(e.attrs.at("y")) + 1;
        if (e.attrs.at("fill") == "url(#hatch)") {
            ++hatched;
            const Rgb c = img.at(x, y);
            EXPECT_TRUE(c == kHatchBackground || c == kHatchLine);
        } else {
            EXPECT_EQ(e.attrs.at("fill"), hex(img.at(x, y))) << "cell at " << x << "," << y;
        }
    }
    EXPECT_EQ(cells, 9u);
    EXPECT_EQ(hatched, 1u);
    EXPECT_TRUE(title);
}

TEST(HeatmapSvg, LargeGridsAreOneEmbeddedImage) {
    std::vector<float> w(std::size_t{300} * 300, 0.25f);
    HeatmapInput in;
    in.rows = in.cols = 300;
    in.panels.push_back({"", w, {}});
    const std::string svg = figure_svg(heatmap_figure(in, {}).figure, io::encode_png);
    XmlChecker xml(svg);
    std::string error;
    ASSERT_TRUE(xml.parse(error)) << error;
    std::size_t images = 0, cells = 0;
    for (const auto& e : xml.elements()) {
        images += e.name == "image" && e.group == "panel-0" ? 1u : 0u;
        cells += e.name == "rect" && e.group == "panel-0" ? 1u : 0u;
        if (e.name == "image") {
            EXPECT_EQ(e.attrs.at("xlink:href").rfind("data:image/png;base64,iVBORw0KGgo", 0), 0u);
        }
    }
    EXPECT_EQ(images, 1u);
    EXPECT_EQ(cells, 0u);
    EXPECT_LT(svg.size(), 200000u);
}

TEST(HeatmapSvg, Base64) {
    EXPECT_EQ(base64_encode({}), "");
    EXPECT_EQ(base64_encode({'f'}), "Zg==");
    EXPECT_EQ(base64_encode({'f', 'o'}), "Zm8=");
    EXPECT_EQ(base64_encode({'f', 'o', 'o'}), "Zm9v");
    EXPECT_EQ(base64_encode({'f', 'o', 'o', 'b', 'a', 'r'}), "Zm9vYmFy");
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
    const auto a = io::encode_png(img), b = io::encode_png(img);
    EXPECT_EQ(a, b);
    ASSERT_GT(a.size(), 8u);
    EXPECT_EQ(a[1], 'P');
    const Image back = decode_png(a);
    EXPECT_EQ(back.width, 7);
    EXPECT_EQ(back.height, 5);
    EXPECT_EQ(back.pixels, img.pixels);
    EXPECT_THROW(io::encode_png(Image{}), InputError);
}

// --- terminal -------------------------------------------------------------------------------

TEST(HeatmapTerminal, Golden3x3) {
    HeatmapOptions o;
    o.title = "3x3";
    const std::string got = heatmap_terminal(input_3x3(), o, {TermColor::truecolor, 80, 40});
    const std::string path = std::string(ATTN_SOURCE_DIR) + "/tests/golden/term_3x3.txt";
    if (std::getenv("ATTN_UPDATE_GOLDEN") != nullptr) {
        std::ofstream(path, std::ios::binary) << got;
    }
    std::ifstream f(path, std::ios::binary);
    ASSERT_TRUE(f) << "missing " << path << " (run with ATTN_UPDATE_GOLDEN=1 to create it)";
    std::stringstream want;
    want << f.rdbuf();
    EXPECT_EQ(got, want.str());
}

TEST(HeatmapTerminal, ColourModes) {
    HeatmapOptions o;
    const std::string c256 = heatmap_terminal(input_3x3(), o, {TermColor::palette256, 80, 40});
    EXPECT_NE(c256.find("\x1b[48;5;"), std::string::npos);
    EXPECT_EQ(c256.find(";2;"), std::string::npos);
    const std::string none = heatmap_terminal(input_3x3(), o, {TermColor::none, 80, 40});
    EXPECT_EQ(none.find('\x1b'), std::string::npos);
    EXPECT_NE(none.find("0.70"), std::string::npos);
    EXPECT_NE(none.find("\u2591"), std::string::npos); // the legend's shades

    EXPECT_EQ(term_color_from_env("1", "truecolor"), TermColor::none);
    EXPECT_EQ(term_color_from_env("", "truecolor"), TermColor::truecolor);
    EXPECT_EQ(term_color_from_env(nullptr, "24bit"), TermColor::truecolor);
    EXPECT_EQ(term_color_from_env(nullptr, nullptr), TermColor::palette256);
    EXPECT_EQ(term_color_from_env(nullptr, "yes"), TermColor::palette256);
    EXPECT_EQ(xterm256_index({0, 0, 0}), 16);
    EXPECT_EQ(xterm256_index({255, 255, 255}), 231);
    EXPECT_EQ(xterm256_index({128, 128, 128}), 244);
    EXPECT_EQ(xterm256_index({255, 0, 0}), 196);
}

TEST(HeatmapTerminal, LargeMapsUseHalfBlocksWithinTheWidth) {
    std::vector<float> w(std::size_t{200} * 300);
    for (std::size_t i = 0; i < w.size(); ++i) {
        w[i] = static_cast<float>(i % 17) / 17.0f;
    }
    HeatmapInput in;
    in.rows = 200;
    in.cols = 300;
    in.panels.push_back({"", w, {}});
    const std::string out = heatmap_terminal(in, {}, {TermColor::truecolor, 100, 30});
    EXPECT_NE(out.find("\u2580"), std::string::npos);
    EXPECT_NE(out.find("max-pooled"), std::string::npos);
    std::istringstream lines(out);
    std::string line;
    std::size_t count = 0;
    while (std::getline(lines, line)) {
        ++count;
        // Visible width: drop escape sequences, count code points.
        std::string plain;
        for (std::size_t i = 0; i < line.size(); ++i) {
            if (line[i] == '\x1b') {
                i = line.find('m', i);
                continue;
            }
            plain += line[i];
        }
        EXPECT_LE(text_length(plain), 100u) << plain;
    }
    EXPECT_LE(count, 30u + 8u);
}

} // namespace
} // namespace attn::render

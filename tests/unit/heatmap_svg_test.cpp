// The heatmap's SVG: parsed by a small XML well-formedness checker and compared cell by
// cell with the PNG of the same figure; large grids as one embedded image; base64.
#include "attn/render/heatmap.hpp"
#include "unit/heatmap_images.hpp"

#include <cstdint>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <vector>

namespace attn::render {
namespace {

using namespace testing;

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

// --- SVG ----------------------------------------------------------------------------------

TEST(HeatmapSvg, WellFormedWithTheSameCellsAsThePng) {
    HeatmapOptions o;
    o.title = "a <title> & \"quotes\"";
    std::vector<std::uint8_t> mask = {0, 0, 1, 0, 0, 0, 0, 0, 0};
    HeatmapInput in = input_3x3();
    in.panels[0].masked = mask;
    const HeatmapFigure hf = heatmap_figure(in, o);
    const std::string svg =
        figure_svg(hf.figure, [](const Image& i) { return render::encode_png(i); });
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
    const std::string svg = figure_svg(heatmap_figure(in, {}).figure,
                                       [](const Image& i) { return render::encode_png(i); });
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
    const auto b64 = [](const std::vector<std::uint8_t>& bytes) { return base64_encode(bytes); };
    EXPECT_EQ(b64({}), "");
    EXPECT_EQ(b64({'f'}), "Zg==");
    EXPECT_EQ(b64({'f', 'o'}), "Zm8=");
    EXPECT_EQ(b64({'f', 'o', 'o'}), "Zm9v");
    EXPECT_EQ(b64({'f', 'o', 'o', 'b', 'a', 'r'}), "Zm9vYmFy");
}

} // namespace
} // namespace attn::render

// The terminal heatmap's conventions: --color (auto only to a terminal, NO_COLOR), the
// terminal's size (TIOCGWINSZ, then COLUMNS/LINES, then 80x24), a small map using the
// width and no panel taller than the terminal, large maps in half blocks within the width,
// the colour modes, and the output compared with tests/golden/term_3x3.txt.
#include "attn/render/terminal.hpp"
#include "attn/render/text.hpp"
#include "unit/heatmap_images.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

namespace attn::render {
namespace {

using testing::input_3x3;

/// n x n weights without labels.
struct Map {
    std::vector<float> data;
    HeatmapInput in;
    explicit Map(std::size_t n) : data(n * n) {
        for (std::size_t i = 0; i < n * n; ++i) {
            data[i] = static_cast<float>((i * 7) % 11) / 10.0f;
        }
        in.rows = in.cols = n;
        in.panels.push_back({"", data, {}});
    }
};

// --- terminal -----------------------------------------------------------------------------

TEST(HeatmapTerminal, ColorChoice) {
    // auto: colour only to a terminal, and NO_COLOR (non-empty) turns it off.
    EXPECT_EQ(term_color(ColorChoice::automatic, false, nullptr, "truecolor"), TermColor::none);
    EXPECT_EQ(term_color(ColorChoice::automatic, true, nullptr, "truecolor"), TermColor::truecolor);
    EXPECT_EQ(term_color(ColorChoice::automatic, true, "1", "truecolor"), TermColor::none);
    EXPECT_EQ(term_color(ColorChoice::automatic, true, "", nullptr), TermColor::palette256);
    // always: even in a pipe and with NO_COLOR; never: never.
    EXPECT_EQ(term_color(ColorChoice::always, false, "1", nullptr), TermColor::palette256);
    EXPECT_EQ(term_color(ColorChoice::always, false, nullptr, "24bit"), TermColor::truecolor);
    EXPECT_EQ(term_color(ColorChoice::never, true, nullptr, "truecolor"), TermColor::none);
}

TEST(HeatmapTerminal, SizeFromTheTerminalThenTheEnvironmentThen80x24) {
    TermSize t = term_size(132, 50, "90", "20");
    EXPECT_EQ(t.columns, 132);
    EXPECT_EQ(t.lines, 50);
    t = term_size(0, 0, "90", "20");
    EXPECT_EQ(t.columns, 90);
    EXPECT_EQ(t.lines, 20);
    t = term_size(0, 0, "wide", "-3");
    EXPECT_EQ(t.columns, 80);
    EXPECT_EQ(t.lines, 24);
    t = term_size(0, 0, nullptr, nullptr);
    EXPECT_EQ(t.columns, 80);
    EXPECT_EQ(t.lines, 24);
    EXPECT_EQ(term_options(TermColor::none, {100, 40}).max_lines, 37);
    EXPECT_EQ(term_options(TermColor::none, {100, 40}).width, 100);
}

/// Lines of terminal output with escape sequences dropped.
std::vector<std::string> visible_lines(const std::string& out) {
    std::vector<std::string> lines;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        std::string plain;
        for (std::size_t i = 0; i < line.size(); ++i) {
            if (line[i] == '\x1b') {
                i = line.find('m', i);
                continue;
            }
            plain += line[i];
        }
        lines.push_back(plain);
    }
    return lines;
}

TEST(HeatmapTerminal, SmallMapUsesTheWidthAndPanelsFitTheHeight) {
    const Map g(20);
    const HeatmapOptions o; // values do not fit 120 columns: half blocks (or shades)
    for (TermColor c : {TermColor::truecolor, TermColor::none}) {
        const auto lines = visible_lines(heatmap_terminal(g.in, o, term_options(c, {120, 40})));
        std::size_t widest = 0;
        for (const auto& l : lines) {
            widest = std::max(widest, text_length(l));
        }
        EXPECT_GT(widest, 90u) << static_cast<int>(c);
        EXPECT_LE(widest, 120u);
        EXPECT_LE(lines.size(), 40u);
    }
    // A tall map in a short terminal: the panel (its lines) stays within the screen.
    const Map tall(200);
    const auto lines =
        visible_lines(heatmap_terminal(tall.in, o, term_options(TermColor::truecolor, {80, 24})));
    std::size_t map_lines = 0;
    for (const auto& l : lines) {
        map_lines += l.find("\u2580") != std::string::npos ? 1u : 0u;
    }
    EXPECT_GT(map_lines, 0u);
    EXPECT_LE(map_lines, 21u);
}

TEST(HeatmapTerminal, SkippedTokensAreStated) {
    Map m(60);
    for (std::size_t i = 0; i < 60; ++i) {
        m.in.col_labels.push_back("key" + std::to_string(i));
        m.in.row_labels.push_back("q" + std::to_string(i));
    }
    const std::string out = heatmap_terminal(m.in, {}, term_options(TermColor::none, {80, 24}));
    EXPECT_NE(out.find("labels: 1 in "), std::string::npos) << out;
    EXPECT_NE(out.find(" key tokens and 1 in "), std::string::npos) << out;
    // Room for every token: no such line.
    Map small(6);
    for (std::size_t i = 0; i < 6; ++i) {
        small.in.col_labels.push_back("k" + std::to_string(i));
        small.in.row_labels.push_back("q" + std::to_string(i));
    }
    HeatmapOptions o;
    o.annotate = Annotate::off;
    const std::string fits = heatmap_terminal(small.in, o, term_options(TermColor::none, {80, 24}));
    EXPECT_EQ(fits.find("labels: "), std::string::npos) << fits;
}

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
    const std::vector<std::string> lines = visible_lines(out);
    for (const std::string& plain : lines) {
        // Visible width: escape sequences dropped, code points counted.
        EXPECT_LE(text_length(plain), 100u) << plain;
    }
    EXPECT_LE(lines.size(), 30u + 8u);
}

} // namespace
} // namespace attn::render

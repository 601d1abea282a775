// The HTML view's data: the size limit, exact values only below their limit, and the
// per-cell colour indices the page draws (the PNG's normalisation and index rule).
#include "attn/error.hpp"
#include "attn/render/html.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace {

using attn::render::HeatmapInput;
using attn::render::HeatmapOptions;
using attn::render::HtmlLimits;

HeatmapInput two_panels(const std::vector<float>& v) {
    HeatmapInput in;
    in.rows = 2;
    in.cols = 2;
    for (std::size_t p = 0; p < 2; ++p) {
        attn::render::HeatmapPanel panel;
        panel.values = std::span<const float>(v).subspan(p * 4, 4);
        in.panels.push_back(panel);
    }
    return in;
}

TEST(HtmlView, RefusesMoreCellsThanTheLimitNamingHeadAndPool) {
    const std::vector<float> v{0.1f, 0.9f, 0.5f, 0.5f, 0.2f, 0.8f, 0.3f, 0.7f};
    HtmlLimits limits;
    limits.max_cells = 7;
    try {
        (void)attn::render::heatmap_html(two_panels(v), HeatmapOptions{}, limits);
        FAIL() << "expected InputError";
    } catch (const attn::InputError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("8 cells"), std::string::npos) << m;
        EXPECT_NE(m.find("--head"), std::string::npos) << m;
        EXPECT_NE(m.find("--pool"), std::string::npos) << m;
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
    limits.max_cells = 8;
    EXPECT_NO_THROW((void)attn::render::heatmap_html(two_panels(v), HeatmapOptions{}, limits));
}

TEST(HtmlView, ExactValuesOnlyUpToTheirLimit) {
    const std::vector<float> v{0.1f, 0.9f, 0.5f, 0.5f, 0.2f, 0.8f, 0.3f, 0.7f};
    HtmlLimits limits;
    limits.max_exact_cells = 8;
    const std::string with = attn::render::heatmap_html(two_panels(v), HeatmapOptions{}, limits);
    limits.max_exact_cells = 7;
    const std::string without = attn::render::heatmap_html(two_panels(v), HeatmapOptions{}, limits);
    EXPECT_NE(with.find("\"exact\":true"), std::string::npos);
    EXPECT_NE(without.find("\"exact\":false"), std::string::npos);
    EXPECT_NE(without.find("<script type=\"application/octet-stream\" id=\"exact\"></script>"),
              std::string::npos);
}

TEST(HtmlView, OneSelfContainedPageWithTheColourRangeOfThePng) {
    const std::vector<float> v{0.1f, 0.9f, 0.5f, 0.5f, 0.2f, 0.8f, 0.3f, 0.7f};
    HeatmapInput in = two_panels(v);
    in.row_labels = {"</script>", "b"};
    in.col_labels = {"x", "y"};
    const std::string page = attn::render::heatmap_html(in, HeatmapOptions{});
    EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_EQ(page.find("{{"), std::string::npos);            // every template slot filled
    EXPECT_EQ(page.find("\"</script>\""), std::string::npos); // tokens cannot end the script
    EXPECT_NE(page.find("\\u003c/script\\u003e"), std::string::npos);
    // The range of the data (0.1 .. 0.9 as float32), as the PNG's colour bar has it.
    EXPECT_NE(page.find("\"vmin\":0.10000000149011612"), std::string::npos);
    EXPECT_NE(page.find("\"vmax\":0.89999997615814209"), std::string::npos);
}

} // namespace

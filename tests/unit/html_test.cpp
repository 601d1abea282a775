// The HTML view's data: the size limit, exact values only below their limit, and the
// per-cell colour indices the page draws (the PNG's normalisation and index rule), one
// compressed block per panel and the pooled thumbnails.
#include "attn/error.hpp"
#include "attn/render/html.hpp"
#include "attn/render/long_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <mutex>
#include <span>
#include <string>
#include <vector>
#include <zlib.h>

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

/// The bytes of the page's element `id`: base64 (RFC 4648), then zlib, undone.
std::vector<std::uint8_t> element_bytes(const std::string& page,
                                        const std::string& id,
                                        std::size_t most = std::size_t{1} << 16) {
    const std::string open = "id=\"" + id + "\">";
    const std::size_t at = page.find(open);
    EXPECT_NE(at, std::string::npos) << id;
    if (at == std::string::npos) {
        return {};
    }
    const std::size_t from = at + open.size(), to = page.find("</script>", from);
    static const std::string alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<std::uint8_t> z;
    unsigned acc = 0;
    int bits = 0;
    for (std::size_t i = from; i < to && page[i] != '='; ++i) {
        acc = (acc << 6) | static_cast<unsigned>(alphabet.find(page[i]));
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            z.push_back(static_cast<std::uint8_t>((acc >> bits) & 0xFF));
        }
    }
    std::vector<std::uint8_t> out(most);
    uLongf size = out.size();
    EXPECT_EQ(uncompress(out.data(), &size, z.data(), static_cast<uLong>(z.size())), Z_OK);
    out.resize(size);
    return out;
}

/// matplotlib's colour index of v in [lo, hi]: floor(t * 256), clamped to 0..255.
std::uint8_t colour_index(float v, double lo, double hi) {
    const double t = (static_cast<double>(v) - lo) / (hi - lo);
    return static_cast<std::uint8_t>(t <= 0 ? 0 : t * 256 >= 255 ? 255 : std::floor(t * 256));
}

TEST(HtmlView, EachPanelIsOneBlockOfColourIndicesStatesAndExactValues) {
    const std::vector<float> v{0.1f, 0.9f, 0.5f, 0.5f, 0.2f, NAN, 0.3f, 0.7f};
    const std::vector<std::uint8_t> mask{0, 0, 1, 0};
    HeatmapInput in = two_panels(v);
    in.panels[0].masked = mask;
    const std::string page = attn::render::heatmap_html(in, HeatmapOptions{});
    EXPECT_NE(page.find("\"hasState\":true"), std::string::npos);
    for (std::size_t p = 0; p < 2; ++p) {
        const std::vector<std::uint8_t> b = element_bytes(page, "p" + std::to_string(p));
        ASSERT_EQ(b.size(), 4u * (1 + 1 + 4)) << p; // index, state, float32 per cell
        for (std::size_t k = 0; k < 4; ++k) {
            const float x = v[p * 4 + k];
            const int state = p == 0 && mask[k] != 0 ? 1 : std::isnan(x) ? 2 : 0;
            EXPECT_EQ(b[4 + k], state) << p << "," << k;
            if (state == 0) {
                EXPECT_EQ(b[k],
                          colour_index(x, static_cast<double>(0.1f), static_cast<double>(0.9f)))
                    << p << "," << k;
            }
            float exact = 0;
            std::memcpy(&exact, b.data() + 8 + 4 * k, 4);
            EXPECT_TRUE(std::memcmp(&exact, &x, 4) == 0) << p << "," << k;
        }
    }
    // Thumbnails: 2 x 2 pixels of one cell each: max, mean, then 1 where nothing is shown.
    const std::vector<std::uint8_t> t = element_bytes(page, "thumbs");
    ASSERT_EQ(t.size(), 3u * 2 * 4);
    const std::vector<std::uint8_t> block1 = element_bytes(page, "p1");
    for (std::size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(t[4 + k], block1[k]);     // panel 1's max-pooled pixel
        EXPECT_EQ(t[8 + 4 + k], block1[k]); // and mean-pooled
    }
    EXPECT_EQ(t[16 + 2], 1);     // panel 0's masked cell is hatched
    EXPECT_EQ(t[16 + 4 + 1], 1); // panel 1's NaN cell
    EXPECT_EQ(t[16 + 0], 0);
}

TEST(HtmlView, ThumbnailsPoolTheirBlockMaxAndMean) {
    // One 160 x 160 panel: 2 x 2 cells per thumbnail pixel; cell (i, j) has i + j.
    HeatmapInput in;
    in.rows = in.cols = 160;
    std::vector<float> v(std::size_t{160} * 160);
    for (std::size_t i = 0; i < 160; ++i) {
        for (std::size_t j = 0; j < 160; ++j) {
            v[i * 160 + j] = static_cast<float>(i + j);
        }
    }
    in.panels.push_back({"", v, {}});
    const std::string page = attn::render::heatmap_html(in, HeatmapOptions{});
    EXPECT_NE(page.find("\"thumbW\":80,\"thumbH\":80"), std::string::npos);
    const std::vector<std::uint8_t> t = element_bytes(page, "thumbs");
    ASSERT_EQ(t.size(), 2u * 80 * 80);
    const auto index = [&](std::size_t i, std::size_t j) {
        return colour_index(static_cast<float>(i + j), 0.0, 318.0);
    };
    for (const auto& [y, x] : {std::pair<std::size_t, std::size_t>{0, 0}, {10, 70}, {79, 79}}) {
        const std::uint8_t a = index(2 * y, 2 * x), b = index(2 * y, 2 * x + 1),
                           c = index(2 * y + 1, 2 * x), d = index(2 * y + 1, 2 * x + 1);
        EXPECT_EQ(t[y * 80 + x], std::max({a, b, c, d})) << y << "," << x;
        EXPECT_EQ(t[6400 + y * 80 + x], (2 * (a + b + c + d) + 4) / 8) << y << "," << x;
    }
}

TEST(HtmlView, LargePagesCompressedBandByBandHoldTheRuleAndItsThumbnails) {
    // Two panels of 2900 x 2900 (more than 2^24 cells: compressed band by band as made, in
    // bands of 90 rows that end inside a 64 KiB chunk): rows alternate between values that
    // hardly repeat and runs, so both kinds of chunk occur.
    const std::size_t r = 2900, c = 2900, n = r * c;
    std::vector<float> v(2 * n);
    std::uint32_t x = 12345;
    for (std::size_t i = 0; i < v.size(); ++i) {
        x = x * 1664525U + 1013904223U;
        const bool runs = (i / c / 200) % 2 == 1;
        v[i] =
            runs ? static_cast<float>((i / 97) % 5) * 0.1F : static_cast<float>(x >> 8) * 0x1p-24F;
    }
    HeatmapInput in;
    in.rows = r;
    in.cols = c;
    for (std::size_t p = 0; p < 2; ++p) {
        attn::render::HeatmapPanel panel;
        panel.values = std::span<const float>(v).subspan(p * n, n);
        in.panels.push_back(panel);
    }
    const std::vector<std::uint8_t> bytes = attn::render::heatmap_html_bytes(in, HeatmapOptions{});
    const std::string page(bytes.begin(), bytes.end());
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const std::size_t w = 80, h = 80;
    std::vector<std::uint8_t> want_max, want_mean;
    for (std::size_t p = 0; p < 2; ++p) {
        const std::vector<std::uint8_t> b = element_bytes(page, "p" + std::to_string(p), n + 1);
        ASSERT_EQ(b.size(), n);
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) {
            wrong += b[i] != colour_index(
                                 v[p * n + i], static_cast<double>(*lo), static_cast<double>(*hi))
                         ? 1U
                         : 0U;
        }
        EXPECT_EQ(wrong, 0u) << "panel " << p;
        std::vector<std::size_t> col_px(c);
        for (std::size_t j = 0; j < c; ++j) {
            col_px[j] = std::min(w - 1, j * w / c);
        }
        for (std::size_t y = 0; y < h; ++y) { // the page's pooling, written out
            const std::size_t i0 = y * r / h, i1 = std::max(i0 + 1, (y + 1) * r / h);
            std::vector<unsigned> best(w, 0), sum(w, 0), count(w, 0);
            for (std::size_t i = i0; i < i1; ++i) {
                for (std::size_t j = 0; j < c; ++j) {
                    best[col_px[j]] = std::max<unsigned>(best[col_px[j]], b[i * c + j]);
                    sum[col_px[j]] += b[i * c + j];
                    ++count[col_px[j]];
                }
            }
            for (std::size_t px = 0; px < w; ++px) {
                want_max.push_back(static_cast<std::uint8_t>(best[px]));
                want_mean.push_back(
                    static_cast<std::uint8_t>((2 * sum[px] + count[px]) / (2 * count[px])));
            }
        }
    }
    std::vector<std::uint8_t> want = want_max;
    want.insert(want.end(), want_mean.begin(), want_mean.end());
    EXPECT_EQ(element_bytes(page, "thumbs"), want);
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
        EXPECT_NE(m.find("pick panels with head N"), std::string::npos) << m;
        EXPECT_NE(m.find("pooled with pool max|mean"), std::string::npos) << m;
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
    limits.max_cells = 8;
    EXPECT_NO_THROW((void)attn::render::heatmap_html(two_panels(v), HeatmapOptions{}, limits));
}

TEST(HtmlView, EveryCellReleasedOnceAfterEachPassByBands) {
    // A mapped file's pages are dropped after the range pass and after the cells pass of
    // each band of rows, so the writer holds a few bands' values at a time: two panels of
    // 1100 x 600 cells, bands of 436 rows (2^18 cells / 600), on two threads.
    const std::size_t rows = 1100, cols = 600, n = rows * cols;
    std::vector<float> v(2 * n);
    for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
    }
    HeatmapInput in;
    in.rows = rows;
    in.cols = cols;
    for (std::size_t p = 0; p < 2; ++p) {
        in.panels.push_back({"", std::span<const float>(v).subspan(p * n, n), {}});
    }
    HeatmapOptions o;
    o.threads = 2;
    const std::string plain = attn::render::heatmap_html(in, o);
    std::mutex m;
    std::vector<std::vector<int>> times(2, std::vector<int>(n, 0));
    std::size_t calls = 0, largest = 0;
    in.release = [&](std::size_t p, std::size_t first, std::size_t count) {
        const std::lock_guard lock(m);
        ++calls;
        largest = std::max(largest, count);
        for (std::size_t c = first; c < first + count && c < n; ++c) {
            ++times[p][c];
        }
    };
    EXPECT_EQ(attn::render::heatmap_html(in, o), plain);
    for (std::size_t p = 0; p < 2; ++p) {
        EXPECT_EQ(std::count(times[p].begin(), times[p].end(), 2), static_cast<long>(n)) << p;
    }
    EXPECT_EQ(calls, 2U * 2 * 3); // two passes over three bands of each panel
    EXPECT_EQ(largest, std::size_t{436} * cols);
}

TEST(HtmlView, ColourIndicesAreThePngRuleAtEveryBinEdge) {
    // Values at each bin's lower edge and its float neighbours, on ranges whose bins fall
    // between floats (a colour index from float arithmetic alone is off by one there),
    // and large values over a narrow range.
    const std::vector<std::pair<double, double>> ranges = {
        {0.0, 1.0}, {0.1, 0.9}, {-3.0, 1e-3}, {1000.0, 1000.001}, {1e-7, 3e-7}};
    for (const auto& [lo, hi] : ranges) {
        std::vector<float> v;
        for (int b = -2; b <= 258; ++b) {
            float x = static_cast<float>(lo + (hi - lo) * b / 256.0);
            for (int s = 0; s < 3; ++s) {
                x = std::nextafter(x, -INFINITY);
            }
            for (int s = 0; s < 6; ++s) {
                v.push_back(x);
                x = std::nextafter(x, INFINITY);
            }
        }
        v.push_back(INFINITY);
        v.push_back(-INFINITY);
        HeatmapInput in;
        in.rows = 1;
        in.cols = v.size();
        in.panels.push_back({"", v, {}});
        HeatmapOptions o;
        o.vmin = lo;
        o.vmax = hi;
        const std::string page = attn::render::heatmap_html(in, o);
        const std::vector<std::uint8_t> b = element_bytes(page, "p0");
        ASSERT_GE(b.size(), v.size());
        std::size_t wrong = 0;
        for (std::size_t k = 0; k < v.size(); ++k) {
            const double t = (static_cast<double>(v[k]) - lo) / (hi - lo);
            const auto want = static_cast<std::uint8_t>(!(t > 0)         ? 0
                                                        : t * 256 >= 255 ? 255
                                                                         : std::floor(t * 256));
            wrong += b[k] != want ? 1U : 0U;
            EXPECT_EQ(b[k], want) << lo << ".." << hi << ": " << v[k] << " (" << k << ")";
            if (wrong > 5) {
                return;
            }
        }
    }
}

TEST(HtmlView, TheSameBytesForAnyThreadCount) {
    // Five panels with NaN and masked cells, written 1, 2, 3 and all-cores at a time.
    std::vector<float> v(std::size_t{5} * 6 * 7);
    for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<float>((i * 37) % 11) / 11.0f;
    }
    v[45] = NAN;
    std::vector<std::uint8_t> some(std::size_t{6} * 7, 0);
    some[3] = 1;
    HeatmapInput in;
    in.rows = 6;
    in.cols = 7;
    for (std::size_t p = 0; p < 5; ++p) {
        attn::render::HeatmapPanel panel;
        panel.values = std::span<const float>(v).subspan(p * 42, 42);
        if (p == 2) {
            panel.masked = some;
        }
        in.panels.push_back(panel);
    }
    HeatmapOptions o;
    o.threads = 1;
    const std::string one = attn::render::heatmap_html(in, o);
    for (const unsigned t : {2U, 3U, 0U}) {
        o.threads = t;
        EXPECT_EQ(attn::render::heatmap_html(in, o), one) << t << " threads";
    }
    EXPECT_EQ(element_bytes(one, "p4").size(), 42U * (1 + 1 + 4)); // index, state, exact
}

TEST(HtmlView, TheLongViewTheSameBytesForAnyThreadCount) {
    // Three panels of 4100 x 6 (the long view: more than 4096 rows), a masked cell and a
    // NaN: levels built from blocks of rows on any thread, each panel's three blocks of
    // top-k lists packed on 1, 2, 3 and all cores.
    const std::size_t rows = 4100, cols = 6, plane = rows * cols;
    std::vector<float> v(3 * plane);
    for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<float>((i * 7919) % 1009) / 1009.0f;
    }
    v[plane + 17] = NAN;
    std::vector<std::uint8_t> some(plane, 0);
    some[5] = 1;
    HeatmapInput in;
    in.rows = rows;
    in.cols = cols;
    for (std::size_t p = 0; p < 3; ++p) {
        attn::render::HeatmapPanel panel;
        panel.values = std::span<const float>(v).subspan(p * plane, plane);
        if (p == 2) {
            panel.masked = some;
        }
        in.panels.push_back(panel);
    }
    HeatmapOptions o;
    o.view_top_k = 3;
    o.threads = 1;
    const std::string one = attn::render::heatmap_html(in, o);
    EXPECT_NE(one.find("id=\"p2K2\""), std::string::npos); // the last panel's third block
    for (const unsigned t : {2U, 3U, 0U}) {
        o.threads = t;
        EXPECT_EQ(attn::render::heatmap_html(in, o), one) << t << " threads";
    }
}

/// A long-view page of one rows x cols panel fed in blocks of 7 rows by `add(page, first, n)`.
template <class Add>
std::vector<std::uint8_t> long_page(std::size_t rows, std::size_t cols, const Add& add) {
    HeatmapInput shape;
    shape.rows = rows;
    shape.cols = cols;
    shape.panels.resize(1);
    HeatmapOptions o;
    o.threads = 1;
    attn::render::LongViewPage page(shape, o, attn::render::streaming_norm(o), {}, 4);
    for (std::size_t first = 0; first < rows; first += 7) {
        add(page, first, std::min<std::size_t>(7, rows - first));
    }
    return page.finish();
}

/// 60 x 9000 values in [0, 1) (pixels of 2 and 3 keys), ties included.
std::vector<float> long_rows(std::size_t rows, std::size_t cols) {
    std::vector<float> v(rows * cols);
    for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<float>((i * 7919) % 1009) / 1009.0f;
    }
    return v;
}

TEST(HtmlView, TheLongViewFromKeyRangesEqualsItsMask) {
    // Each row's open keys as a range (compute's causal and window rows) give the page
    // the mask blocking every key outside it gives: empty, whole, clipped and edge ranges.
    const std::size_t rows = 60, cols = 9000;
    const std::vector<float> v = long_rows(rows, cols);
    std::vector<attn::render::LongViewKeys> keys(rows);
    std::vector<std::uint8_t> mask(rows * cols, 1);
    for (std::size_t i = 0; i < rows; ++i) {
        const std::size_t begin = i % 5 == 0 ? 0 : (i * 1237) % cols;
        const std::size_t end = i % 7 == 0 ? begin : begin + (i * 4111) % (cols + 500);
        keys[i] = {begin, i == 3 ? cols + 9 : end}; // ends past cols are clipped
        for (std::size_t j = begin; j < std::min(keys[i].end, cols); ++j) {
            mask[i * cols + j] = 0;
        }
    }
    const auto by_mask = long_page(rows, cols, [&](auto& page, std::size_t first, std::size_t n) {
        page.add_rows(0, first, n, v.data() + first * cols, mask.data() + first * cols);
    });
    const auto by_keys = long_page(rows, cols, [&](auto& page, std::size_t first, std::size_t n) {
        page.add_rows_within(0, first, n, v.data() + first * cols, keys.data() + first);
    });
    EXPECT_EQ(by_keys, by_mask);
}

TEST(HtmlView, TheLongViewLeavesANaNOutAsItDoesABlockedCell) {
    // A NaN is left out of the pooled levels and the top-k as a blocked cell is: the
    // page with NaNs (no mask) is the page with those cells blocked instead.
    const std::size_t rows = 60, cols = 9000;
    std::vector<float> with_nan = long_rows(rows, cols), with_mask = with_nan;
    std::vector<std::uint8_t> mask(rows * cols, 0);
    for (std::size_t i = 0; i < rows * cols; i += 9973) {
        with_nan[i] = NAN;
        with_mask[i] = 0.0f;
        mask[i] = 1;
    }
    const auto nan = long_page(rows, cols, [&](auto& page, std::size_t first, std::size_t n) {
        page.add_rows(0, first, n, with_nan.data() + first * cols, nullptr);
    });
    const auto blocked = long_page(rows, cols, [&](auto& page, std::size_t first, std::size_t n) {
        page.add_rows(0, first, n, with_mask.data() + first * cols, mask.data() + first * cols);
    });
    EXPECT_EQ(nan, blocked);
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
    // Panel blocks: a colour index per cell, and with exact values 4 bytes more.
    EXPECT_EQ(element_bytes(with, "p1").size(), 4u * 5);
    EXPECT_EQ(element_bytes(without, "p1").size(), 4u);
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

// The census page (attn/render/census_page.hpp): its data as JSON in the template
// (lib/src/render/html/census.html) with the script embedded beside it, and each text's
// heatmap view page base64 in its own element. No file I/O.
#include "attn/render/census_page.hpp"

#include "attn/error.hpp"
#include "attn/render/colormap.hpp"
#include "attn/render/figure.hpp"
#include "html_detail.hpp"

#include <algorithm>
#include <cmath>

namespace attn::render {

namespace detail {
extern const char kCensusPageBytes[], kCensusScriptBytes[];
extern const std::size_t kCensusPageByteCount, kCensusScriptByteCount;
} // namespace detail

namespace {

/// A number, or null when not finite (JSON has no NaN).
std::string json_value(double v) {
    return std::isfinite(v) ? detail::json_number(v) : "null";
}

template <class T, class F> std::string json_list(const std::vector<T>& v, F item) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        out += (i == 0 ? "" : ",") + item(v[i]);
    }
    return out + "]";
}

std::string json_meta(const CensusPageInput& in, const Colormap& cmap) {
    std::vector<std::uint8_t> rgb;
    for (std::size_t i = 0; i < 256; ++i) {
        const Rgb e = cmap.entry(i);
        rgb.insert(rgb.end(), {e.r, e.g, e.b});
    }
    const auto ref = [](const CensusViewRef& r) {
        return r.page < 0 ? std::string("null")
                          : "[" + std::to_string(r.page) + "," + std::to_string(r.panel) + "," +
                                json_value(r.value) + "]";
    };
    return "{\"title\":" + detail::json_string(in.title) +
           ",\"layers\":" + std::to_string(in.layers) + ",\"heads\":" + std::to_string(in.heads) +
           ",\"stats\":" + detail::json_strings(in.stats) + ",\"means\":" +
           json_list(in.means, [](const auto& m) { return json_list(m, json_value); }) +
           ",\"rows\":" +
           json_list(in.rows,
                     [](const auto& r) {
                         return json_list(r, [](std::int64_t n) { return std::to_string(n); });
                     }) +
           ",\"sink\":" + json_list(in.sink, [](std::uint8_t s) { return std::to_string(s); }) +
           ",\"sinkThreshold\":" + json_value(in.sink_threshold) +
           ",\"defaultStat\":" + detail::json_string(in.default_stat) +
           ",\"best\":" + json_list(in.best, [&](const auto& b) { return json_list(b, ref); }) +
           ",\"pageTitles\":" + detail::json_strings(in.page_titles) +
           ",\"cmap\":" + detail::json_string(base64_encode(rgb)) + "}";
}

void check_input(const CensusPageInput& in) {
    [[maybe_unused]] const std::size_t cells = in.layers * in.heads;
    ATTN_ASSERT(in.means.size() == in.stats.size() && in.rows.size() == in.stats.size() &&
                in.best.size() == in.stats.size() && in.sink.size() == cells &&
                in.page_titles.size() == in.pages.size());
    for (std::size_t s = 0; s < in.stats.size(); ++s) {
        ATTN_ASSERT(in.means[s].size() == cells && in.rows[s].size() == cells &&
                    in.best[s].size() == cells);
        for ([[maybe_unused]] const CensusViewRef& r : in.best[s]) {
            ATTN_ASSERT(r.page < static_cast<std::int32_t>(in.pages.size()));
        }
    }
    if (std::find(in.stats.begin(), in.stats.end(), in.default_stat) == in.stats.end()) {
        throw InputError(option_name("html_stat") + ": expected one of the statistics, got '" +
                         in.default_stat + "'");
    }
}

} // namespace

std::string census_page(const CensusPageInput& in) {
    check_input(in);
    const std::optional<Colormap> cmap = find_colormap(in.colormap);
    if (!cmap) {
        throw InputError(option_name("colormap") + ": unknown colormap '" + in.colormap + "'");
    }
    std::string pages;
    for (std::size_t p = 0; p < in.pages.size(); ++p) {
        pages += "<script type=\"application/octet-stream\" id=\"page" + std::to_string(p) + "\">" +
                 base64_encode(in.pages[p]) + "</script>\n";
    }
    return detail::fill(
        std::string_view(detail::kCensusPageBytes, detail::kCensusPageByteCount),
        {{"TITLE", detail::html_text(in.title)},
         {"META", json_meta(in, *cmap)},
         {"PAGES", pages},
         {"SCRIPT", std::string(detail::kCensusScriptBytes, detail::kCensusScriptByteCount)}});
}

} // namespace attn::render

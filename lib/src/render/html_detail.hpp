// Internal to attn_render: the text pieces of the self-contained HTML pages (the heatmap
// view, html.cpp; the census page, census_page.cpp): JSON literals safe inside <script>,
// zlib + base64 blocks, the template filler. Not installed; not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::render::detail {

/// "134,217,728"
std::string grouped(std::size_t n);

/// A JSON string literal that is also safe inside <script>: '<', '>', '&' escaped.
std::string json_string(std::string_view s);

/// A number as JSON (17 significant digits; the caller keeps it finite).
std::string json_number(double v);

/// ["a", "b"] with json_string's escaping.
std::string json_strings(const std::vector<std::string>& v);

/// zlib-wrapped deflate (what DecompressionStream("deflate") reads), then base64.
std::string packed(const std::vector<std::uint8_t>& bytes, int level);

/// Replaces each "{{KEY}}" of the template with its value, scanning the template only.
std::string fill(std::string_view page, const std::vector<std::pair<std::string, std::string>>& kv);

/// Text for HTML content: '<', '>', '&' escaped.
std::string html_text(std::string_view s);

/// The colormap tables as {"name": base64 RGB x 256, ...}.
std::string json_tables();

} // namespace attn::render::detail

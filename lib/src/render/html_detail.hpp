// Internal to attn_render: the text pieces of the self-contained HTML pages (the heatmap
// view, html.cpp; the census page, census_page.cpp): JSON literals safe inside <script>,
// zlib + base64 blocks, the template filler. Not installed; not part of the public API.
#pragma once

#include "attn/render/deflate.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::render {
struct HeatmapInput;
struct HeatmapOptions;
struct ColorNorm;
} // namespace attn::render

namespace attn::render::detail {

/// "134,217,728"
std::string grouped(std::size_t n);

/// A JSON string literal that is also safe inside <script>: '<', '>', '&' escaped.
std::string json_string(std::string_view s);

/// A number as JSON (17 significant digits; the caller keeps it finite).
std::string json_number(double v);

/// ["a", "b"] with json_string's escaping.
std::string json_strings(const std::vector<std::string>& v);

/// How a block is compressed: `small` (zlib level 6: the thumbnails, top-k lists, coarse
/// levels, small pages) or `fast` (the big blocks: each 64 KiB chunk with run-length
/// matches only, zlib's Z_RLE, where a third or more of its 8-byte words are one byte
/// repeated, else with Huffman codes only, Z_HUFFMAN_ONLY; one zlib stream. On attention
/// maps' colour indices Z_RLE is about twice as fast as level 1 and smaller, and where few
/// cells repeat Huffman codes alone are a third faster again and smaller).
enum class Pack { small, fast };

/// Pack::fast's input chunk: each gets the strategy its bytes call for.
inline constexpr std::size_t kFastChunk = std::size_t{1} << 16;

/// Pack::fast's zlib stream made piece by piece into `out` (cleared): each 64 KiB chunk of
/// the bytes, counted from the first, a part of its own (attn/render/deflate.hpp), so the
/// stream is the same however the bytes are cut into pieces. Every piece but the last is
/// a whole number of chunks.
class FastDeflate {
  public:
    explicit FastDeflate(std::vector<std::uint8_t>& out);
    void add(std::span<const std::uint8_t> bytes);
    /// Ends the stream (its final block and Adler-32).
    void finish();

  private:
    std::vector<std::uint8_t>& out_;
    std::optional<ZlibParts> runs_; ///< Z_RLE's, made when a chunk first needs it
    std::uint32_t adler_ = 1;       ///< of the bytes so far
    std::size_t size_ = 0;
};

/// zlib-wrapped deflate (what DecompressionStream("deflate") reads), then base64.
/// `scratch` (may be null): a buffer for the compressed bytes, reused across calls.
std::string
packed(std::span<const std::uint8_t> bytes, Pack how, std::vector<std::uint8_t>* scratch = nullptr);

/// Replaces each "{{KEY}}" of the template with its value, scanning the template only.
std::string fill(std::string_view page, const std::vector<std::pair<std::string, std::string>>& kv);

/// Text for HTML content: '<', '>', '&' escaped.
std::string html_text(std::string_view s);

/// The colormap tables as {"name": base64 RGB x 256, ...}.
std::string json_tables();

/// Thumbnails of every panel, w x h pixels each: the max-pooled colour index, the
/// mean-pooled one, and (with states) 1 where a pixel's block has no value (hatched).
struct Thumbs {
    std::size_t w = 0, h = 0;
    std::vector<std::uint8_t> max, mean, state;
};

/// What the view page's meta says besides the map's shape, labels and colours.
struct PageFlags {
    bool exact = false; ///< every cell's float32 value is in the page
    std::size_t max_exact_cells = 0;
    bool states = false;     ///< cells carry a state (masked, NaN)
    std::string extra_meta;  ///< more members, each starting with ','
    std::size_t reserve = 0; ///< bytes the panels are expected to take
};

/// Appends the panels' elements to the page and each panel's thumbnail to `thumbs` (sized
/// by the page: w, h), in panel order.
using PanelWriter = std::function<void(std::vector<std::uint8_t>& page, Thumbs& thumbs)>;

/// The heatmap view page (view.html filled): its meta from `in` (shape, titles, labels,
/// grid), `o`, `norm`, `notes` and `flags`, the panels `write_panels` appends, the
/// thumbnails it filled.
std::vector<std::uint8_t> view_page(const HeatmapInput& in,
                                    const HeatmapOptions& o,
                                    const ColorNorm& norm,
                                    const std::vector<std::string>& notes,
                                    const PageFlags& flags,
                                    const PanelWriter& write_panels);

/// Appends `<script type="application/octet-stream" id="ID">DATA</script>` and a newline.
void append_element(std::vector<std::uint8_t>& page,
                    const std::string& id,
                    const std::string& data);

} // namespace attn::render::detail

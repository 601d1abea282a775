// Fuzz target: what `attn heatmap WEIGHTS` reads. The reader itself lives in
// app/heatmap_render.cpp (not a library function), so this target reads the way it does with
// the library's parts: NPY when the bytes have the NPY magic, else JSON (io::parse_json_text)
// holding an array or a result document {"weights": .., "query_tokens": .., ...} read with
// io::parse_json_array; then the weights go through render::prepare_heatmap (normalisation,
// pooling, NaN/inf cells, labels). Properties: nothing but InputError escapes, its message is
// one line; the weights round-trip through the JSON and NPY writers.
#include "attn/io/json_text.hpp"
#include "attn/render/heatmap.hpp"
#include "attn/render/html.hpp"
#include "fuzz_common.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <string_view>

using namespace attn;

namespace {

std::vector<std::string> labels(const nlohmann::json& doc, const char* field) {
    std::vector<std::string> out;
    if (doc.is_object() && doc.contains(field) && doc[field].is_array()) {
        for (const auto& t : doc[field]) {
            if (t.is_string()) {
                out.push_back(t.get<std::string>());
            }
        }
    }
    return out;
}

} // namespace

ATTN_FUZZ_TARGET(heatmap_input) {
    fuzz::set_limits();
    const std::span<const std::uint8_t> bytes(data, size);
    io::Array w;
    std::vector<std::string> rows, cols;
    const bool parsed = fuzz::only_input_errors("read weights", [&] {
        static constexpr std::uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
        if (size >= sizeof magic && std::equal(std::begin(magic), std::end(magic), bytes.begin())) {
            w = io::parse_npy(bytes, "weights.npy");
            return;
        }
        const std::string_view text(reinterpret_cast<const char*>(data), size);
        const nlohmann::json doc = io::parse_json_text(text, "weights.json");
        if (doc.is_object()) {
            if (!doc.contains("weights")) {
                throw InputError("weights.json: no weights");
            }
            w = io::parse_json_array(
                doc["weights"], "weights.json: weights", io::ArrayKind::numeric);
            rows = labels(doc, "query_tokens");
            cols = labels(doc, "key_tokens");
            return;
        }
        w = io::parse_json_array(doc, "weights.json", io::ArrayKind::numeric);
    });
    if (!parsed) {
        return 0;
    }
    // Round trips.
    (void)fuzz::expect_npy_round_trip(w, false, "NPY round trip");

    // The renderer's preparation, on up to four panels of [Lq, Lk].
    const auto& s = w.shape;
    if (s.size() < 2 || s.size() > 4) {
        return 0;
    }
    render::HeatmapInput in;
    in.rows = s[s.size() - 2];
    in.cols = s[s.size() - 1];
    const std::size_t cells = in.rows * in.cols;
    if (cells == 0) {
        return 0;
    }
    const std::size_t panels = std::min<std::size_t>(w.values.size() / cells, 4);
    for (std::size_t k = 0; k < panels; ++k) {
        render::HeatmapPanel panel;
        panel.title = "head " + std::to_string(k);
        panel.values = std::span<const float>(w.values).subspan(k * cells, cells);
        in.panels.push_back(panel);
    }
    if (rows.size() == in.rows) {
        in.row_labels = rows;
    }
    if (cols.size() == in.cols) {
        in.col_labels = cols;
    }
    for (const bool log_scale : {false, true}) {
        render::HeatmapOptions options;
        options.scale = log_scale ? render::ColorScale::log : render::ColorScale::linear;
        if (size % 3 == 0) {
            options.clip = 0.9;
        }
        fuzz::only_input_errors("prepare_heatmap", [&] {
            const render::PreparedHeatmap prepared = render::prepare_heatmap(in, options, 16, 16);
            fuzz::expect(prepared.rows <= 16 && prepared.cols <= 16, "pooled beyond the maximum");
        });
        // The HTML view's writer: full-resolution range, per-panel blocks, thumbnails.
        fuzz::only_input_errors("heatmap_html", [&] {
            const std::string page = render::heatmap_html(in, options);
            fuzz::expect(page.rfind("<!DOCTYPE html>", 0) == 0, "not a page");
        });
    }
    return 0;
}

// Attention weights as heatmap panels, the work every front end (the CLI's `heatmap` and
// compute's --heatmap, Python's attn.heatmap) shares before pixels: how a weights array's
// dims read, which panels (layer, batch, head) are drawn, the cells a problem blocks
// (hatched), and the labels checked against the map. Above attn_problem and attn_render;
// reads no files and prints nothing.
#pragma once

#include "attn/io/array.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/result_read.hpp"
#include "attn/render/heatmap.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace attn::plot {

inline constexpr std::size_t kMaxPanels = 64;
inline constexpr std::size_t kMaxModelPanels = 256; ///< layers x heads in the model view
inline constexpr std::int64_t kAll = -1;            ///< no head/batch picked: every one

/// How the leading dims of a weights array read: [layers?, B?, H?, Lq, Lk].
struct Dims {
    std::size_t layers = 1, batches = 1, heads = 1, lq = 0, lk = 0;
    bool has_layers = false, has_batch = false, has_heads = false;
    std::vector<std::size_t> layer_ids; ///< the number of each layer (default 0, 1, ...)
    /// The number of each head when only some are there ("select_heads"); empty: 0, 1, ...
    std::vector<std::size_t> head_ids;
};

/// Reads the shape of weights [B?, H?, Lq, Lk] with the leading `axes` their producer
/// says they have (a problem: problem::weights_axes; a file: problem::axes_of_rank, or a
/// flag) or, with `layer_ids` (the layer numbers of a stacked result's leading axis) or
/// rank 5, [layers, B?, H?, Lq, Lk]. `name` prefixes every message. Throws InputError for
/// a rank out of [Lq, Lk] .. [layers, B, H, Lq, Lk] and for one `axes` do not give.
Dims dims_of(const std::vector<std::size_t>& shape,
             problem::WeightsAxes axes,
             const std::string& name,
             std::vector<std::size_t> layer_ids = {});

/// One panel to draw: which (layer, b, h) and its title.
struct PanelRef {
    std::size_t l = 0, b = 0, h = 0;
    std::string title;

    /// The panel's first value in [layers, B, H, Lq, Lk].
    std::size_t offset(const Dims& d) const {
        return ((l * d.batches + b) * d.heads + h) * d.lq * d.lk;
    }
};

/// The panels `batch`/`head` pick (kAll: every one); at most kMaxPanels (kMaxModelPanels
/// with layers). Messages name the picks as options batch/head (option_name). Throws InputError.
std::vector<PanelRef>
pick_panels(const Dims& d, std::int64_t batch, std::int64_t head, const std::string& name);

/// "1 layer", "4 heads": a count and its noun, singular for 1 (the one plural rule of
/// titles and messages).
std::string counted(std::size_t n, const char* one, const char* many);

/// The title of a model view (`d` has layers), as both front ends give it: "model view:
/// 2 layers × 4 heads" for the panels picked ("1 head" when `head` is picked), with
/// " × 3 batches" before the heads when every entry of a batch axis is drawn.
std::string model_view_title(const Dims& d, std::int64_t batch, std::int64_t head);

/// A suffix naming the single panel picked (" · head 3"), for the default title.
std::string picked_suffix(const Dims& d, std::int64_t batch, std::int64_t head);

/// Panels' values gathered for the renderer (it borrows spans into these).
struct PanelData {
    std::vector<std::vector<float>> values;
    std::vector<std::vector<std::uint8_t>> masked;
};

/// Panels per grid row: in the model view (layers) the heads shown, so each layer is a
/// row; else 0 (automatic).
std::size_t grid_columns(const Dims& d, const std::vector<PanelRef>& refs);

/// The renderer's input for the picked panels (spans into `w` and `data`); the model view
/// (layers) gets one grid row per layer.
render::HeatmapInput
make_input(const io::Array& w, const Dims& d, const std::vector<PanelRef>& refs, PanelData& data);
/// The same from values held elsewhere (a mapped .npy file: io::NpyView), [layers?, B?, H?,
/// Lq, Lk] in C order.
render::HeatmapInput make_input(std::span<const float> values,
                                const Dims& d,
                                const std::vector<PanelRef>& refs,
                                PanelData& data);

/// Cells the problem blocks for (b, h) of [Lq, Lk] weights, by the core's one rule
/// (attn::Visibility: causal, window, mask, key padding, -inf bias), 1 = blocked. h and the
/// rows count the selected heads and query rows ("select_heads", "query_rows"). Empty when
/// nothing blocks, or when the weights are not the problem's (selected) [Lq, Lk].
std::vector<std::uint8_t> blocked_cells(
    const problem::Problem& p, std::size_t b, std::size_t h, std::size_t lq, std::size_t lk);

/// Token labels for both axes (one per query and key): checked against a map of Lq = Lk =
/// tokens.size(). `what` names them in messages ("tokens"). Throws InputError.
void check_tokens(const std::vector<std::string>& tokens, const Dims& d, const std::string& what);

} // namespace attn::plot

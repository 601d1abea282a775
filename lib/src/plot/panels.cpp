// Weights arrays as heatmap panels (see attn/plot/panels.hpp): their dims, the panels
// picked, the renderer's input, the cells a problem blocks, and the token labels' check.
#include "attn/plot/panels.hpp"

#include "attn/error.hpp"
#include "attn/problem/solve.hpp"
#include "attn/visibility.hpp"

#include <span>

namespace attn::plot {

std::vector<PanelRef>
pick_panels(const Dims& d, std::int64_t batch, std::int64_t head, const std::string& name) {
    if (batch != kAll && static_cast<std::size_t>(batch) >= d.batches) {
        throw InputError(option_name("batch") + " " + std::to_string(batch) + ": " + name +
                         " has " + counted(d.batches, "batch entry", "batch entries") +
                         (d.has_batch ? "" : " (no batch dimension)"));
    }
    if (head != kAll && static_cast<std::size_t>(head) >= d.heads) {
        throw InputError(option_name("head") + " " + std::to_string(head) + ": " + name + " has " +
                         counted(d.heads, "head", "heads") +
                         (d.has_heads ? "" : " (no head dimension)"));
    }
    std::vector<PanelRef> out;
    for (std::size_t l = 0; l < d.layers; ++l) {
        for (std::size_t b = 0; b < d.batches; ++b) {
            if (batch != kAll && b != static_cast<std::size_t>(batch)) {
                continue;
            }
            for (std::size_t h = 0; h < d.heads; ++h) {
                if (head != kAll && h != static_cast<std::size_t>(head)) {
                    continue;
                }
                std::string t;
                if (d.has_layers) {
                    t = "layer " + std::to_string(d.layer_ids[l]);
                }
                if (d.has_batch && batch == kAll && d.batches > 1) {
                    t += (t.empty() ? "" : " \u00B7 ") + std::string("batch ") + std::to_string(b);
                }
                if (d.has_heads && (d.heads > 1 || !d.head_ids.empty())) {
                    t += (t.empty() ? "" : " \u00B7 ") + std::string("head ") +
                         std::to_string(d.head_ids.empty() ? h : d.head_ids[h]);
                }
                out.push_back({l, b, h, t});
            }
        }
    }
    if (d.has_layers && out.size() > kMaxModelPanels) {
        throw InputError(
            name + ": " + std::to_string(out.size()) + " panels (" + std::to_string(d.layers) +
            " layers x " + std::to_string(d.batches) + " batches x " + std::to_string(d.heads) +
            " heads) are too many for one model view (at most " + std::to_string(kMaxModelPanels) +
            "); pick with " + option_name("head") + " N and/or " + option_name("batch") +
            " N, or compute fewer " + option_name("layers"));
    }
    if (!d.has_layers && out.size() > kMaxPanels) {
        throw InputError(name + ": " + std::to_string(out.size()) + " panels (" +
                         std::to_string(d.batches) + " batches x " + std::to_string(d.heads) +
                         " heads) are too many for one figure (at most " +
                         std::to_string(kMaxPanels) + "); pick with " + option_name("batch") +
                         " N and/or " + option_name("head") + " N");
    }
    return out;
}

std::string counted(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string model_view_title(const Dims& d, std::int64_t batch, std::int64_t head) {
    return "model view: " + counted(d.layers, "layer", "layers") +
           (d.has_batch && batch == kAll ? " \u00D7 " + counted(d.batches, "batch", "batches")
                                         : "") +
           " \u00D7 " + counted(head == kAll ? d.heads : 1, "head", "heads");
}

std::string picked_suffix(const Dims& d, std::int64_t batch, std::int64_t head) {
    std::string s;
    if (batch != kAll && d.batches > 1) {
        s = "batch " + std::to_string(batch);
    }
    if (head != kAll && d.heads > 1) {
        s += (s.empty() ? "" : ", ") + std::string("head ") + std::to_string(head);
    }
    return s.empty() ? s : " \u00B7 " + s;
}

render::HeatmapInput
make_input(const io::Array& w, const Dims& d, const std::vector<PanelRef>& refs, PanelData& data) {
    return make_input(std::span<const float>(w.values), d, refs, data);
}

std::size_t grid_columns(const Dims& d, const std::vector<PanelRef>& refs) {
    // The model view: rows are layers (and batches), columns the heads shown.
    std::size_t heads_shown = 0;
    if (d.has_layers && refs.size() > 1) {
        while (heads_shown < refs.size() && refs[heads_shown].l == refs.front().l &&
               refs[heads_shown].b == refs.front().b) {
            ++heads_shown;
        }
    }
    return heads_shown;
}

render::HeatmapInput make_input(std::span<const float> values,
                                const Dims& d,
                                const std::vector<PanelRef>& refs,
                                PanelData& data) {
    render::HeatmapInput in;
    in.rows = d.lq;
    in.cols = d.lk;
    const std::size_t n = d.lq * d.lk;
    for (std::size_t k = 0; k < refs.size(); ++k) {
        const std::size_t offset = refs[k].offset(d);
        render::HeatmapPanel p;
        p.title = refs[k].title;
        p.values = values.subspan(offset, n);
        if (!data.masked.empty() && !data.masked[k].empty()) {
            p.masked = data.masked[k];
        }
        in.panels.push_back(p);
    }
    in.grid_cols = grid_columns(d, refs);
    return in;
}

Dims dims_of(const std::vector<std::size_t>& shape,
             problem::WeightsAxes axes,
             const std::string& name,
             std::vector<std::size_t> layer_ids) {
    std::vector<std::size_t> s = shape;
    const bool has_layers = !layer_ids.empty() || s.size() == 5;
    if (s.size() < (has_layers ? 3 : 2) || s.size() > (has_layers ? 5 : 4)) {
        throw InputError::shape(name + (has_layers ? ": weights [layers, Lq, Lk] .. [layers, B, "
                                                     "H, Lq, Lk]"
                                                   : ": weights [Lq, Lk], [H, Lq, Lk], [B, H, Lq, "
                                                     "Lk] or [layers, B, H, Lq, Lk]"),
                                {kAnyDim, kAnyDim},
                                s);
    }
    Dims d;
    if (has_layers) {
        d.has_layers = true;
        d.layers = s.front();
        s.erase(s.begin());
        if (layer_ids.empty()) {
            for (std::size_t l = 0; l < d.layers; ++l) {
                layer_ids.push_back(l);
            }
        }
        if (layer_ids.size() != d.layers) {
            throw InputError(name + ": layers: " + std::to_string(layer_ids.size()) +
                             " layer numbers for " + std::to_string(d.layers) +
                             " layers of weights");
        }
        d.layer_ids = std::move(layer_ids);
    }
    if (s.size() != axes.rank()) {
        // The axes said (by the problem, the file's rank or a flag) are not the array's.
        const std::string form =
            std::string(axes.batch ? "[B, " : "[") + (axes.heads ? "H, " : "") + "Lq, Lk] weights";
        throw InputError::rank(name + ": weights", axes.rank(), form, s);
    }
    d.lq = s[s.size() - 2];
    d.lk = s[s.size() - 1];
    if (axes.batch) {
        d.batches = s[0];
        d.has_batch = true;
    }
    if (axes.heads) {
        d.heads = s[axes.batch ? 1 : 0];
        d.has_heads = true;
    }
    if (d.lq == 0 || d.lk == 0 || d.batches == 0 || d.heads == 0 || d.layers == 0) {
        throw InputError(name + ": nothing to draw: weights of shape " + shape_string(s));
    }
    return d;
}

/// Cells the problem blocks for (b, h) of [Lq, Lk] weights, by the core's one rule
/// (attn::Visibility: causal, window, mask, key padding, -inf bias). Empty when nothing
/// blocks, or when the weights are not the problem's [Lq, Lk].
std::vector<std::uint8_t> blocked_cells(
    const problem::Problem& p, std::size_t b, std::size_t h, std::size_t lq, std::size_t lk) {
    // "select_heads", "query_rows": panel h is a selected head, row i the i-th selected row.
    const std::size_t head = p.select_heads.empty() ? h : p.select_heads[h];
    const std::size_t first = p.query_rows ? (*p.query_rows)[0] : 0;
    const std::size_t rows = p.query_rows ? (*p.query_rows)[1] - first : p.lq;
    if (lq != rows || lk != p.lk) {
        return {};
    }
    const Visibility vis(problem::attention_spec(p), p.lq, lk);
    std::vector<std::uint8_t> out(lq * lk, 0);
    bool any = false;
    for (std::size_t i = 0; i < lq; ++i) {
        for (std::size_t j = 0; j < lk; ++j) {
            const bool blocked = !vis.sees(b, head, first + i, j);
            out[i * lk + j] = static_cast<std::uint8_t>(blocked);
            any = any || blocked;
        }
    }
    return any ? out : std::vector<std::uint8_t>{};
}

void check_tokens(const std::vector<std::string>& tokens, const Dims& d, const std::string& what) {
    if (d.lq != d.lk) {
        throw InputError(what + ": the map has " + std::to_string(d.lq) + " queries and " +
                         std::to_string(d.lk) + " keys; label them with " +
                         option_name("query_tokens") + " and " + option_name("key_tokens"));
    }
    if (tokens.size() != d.lk) {
        throw InputError::label_count(what, d.lk, tokens.size(), "one per query and key");
    }
}

} // namespace attn::plot

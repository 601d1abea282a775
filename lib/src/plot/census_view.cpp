// `attn census --html` (attn/plot/census_view.hpp): the best texts run again with their
// heads' weights caught as the kernel writes them (SolveOptions::weights_to), one view
// page per text, and the census page around them.
#include "attn/plot/census_view.hpp"

#include "attn/error.hpp"
#include "attn/plot/panels.hpp"
#include "attn/problem/model_run.hpp"
#include "attn/render/census_page.hpp"
#include "attn/render/html.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace attn::plot {

namespace {

using problem::kHeadStats;

/// The heads (layer · H + head cells, ascending) whose view is on text `t`.
std::map<std::int64_t, std::vector<std::size_t>> heads_by_text(const problem::CensusBest& best) {
    std::map<std::int64_t, std::vector<std::size_t>> out;
    for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
        for (std::size_t x = 0; x < best.text[stat].size(); ++x) {
            if (best.text[stat][x] >= 0) {
                out[best.text[stat][x]].push_back(x);
            }
        }
    }
    for (auto& [text, cells] : out) {
        std::sort(cells.begin(), cells.end());
        cells.erase(std::unique(cells.begin(), cells.end()), cells.end());
    }
    return out;
}

/// One text's view page: the model run with `cells`' weights kept, nothing else.
std::vector<std::uint8_t> text_page(const problem::CensusRequest& r,
                                    const nlohmann::json& input,
                                    const std::string& where,
                                    const std::vector<std::size_t>& cells,
                                    std::size_t heads,
                                    const CensusViewOptions& o) {
    nlohmann::json doc = input;
    doc["params"] = r.params;
    const problem::ModelRun run = problem::decode_model_run(doc, r.base);
    const problem::Problem& p = run.stack.first;
    const std::size_t l = p.lq, per_head = p.lq * p.lk, per_layer = p.batch * heads * per_head;
    if (cells.size() * per_head > o.max_cells) {
        throw InputError(where + "the census view holds " + std::to_string(cells.size()) +
                         " heads' weights of this text's " + std::to_string(l) +
                         " tokens, more than " + std::to_string(o.max_cells) +
                         " values; leave html out or use shorter texts");
    }
    std::vector<std::vector<float>> kept(cells.size(), std::vector<float>(per_head));
    WeightsDestination<float> to;
    to.size = run.stack.layers.size() * per_layer;
    to.store = [&](std::size_t first, const float* values, std::size_t count) {
        for (std::size_t k = 0; k < cells.size(); ++k) { // batch row 0 of each kept head
            const std::size_t begin =
                (cells[k] / heads) * per_layer + (cells[k] % heads) * per_head;
            const std::size_t lo = std::max(first, begin),
                              hi = std::min(first + count, begin + per_head);
            if (lo < hi) {
                std::copy(
                    values + (lo - first), values + (hi - first), kept[k].data() + (lo - begin));
            }
        }
    };
    problem::SolveOptions so = r.solve;
    so.want_weights = true;
    so.weights_to = &to;
    so.rollout = nullptr;
    problem::solve_model_run(run, so);

    render::HeatmapInput in;
    in.rows = p.lq;
    in.cols = p.lk;
    std::vector<std::vector<std::uint8_t>> masked(cells.size());
    for (std::size_t k = 0; k < cells.size(); ++k) {
        masked[k] = blocked_cells(p, 0, cells[k] % heads, p.lq, p.lk);
        in.panels.push_back({"layer " + std::to_string(cells[k] / heads) + " · head " +
                                 std::to_string(cells[k] % heads),
                             kept[k],
                             masked[k]});
    }
    if (p.query_tokens && p.query_tokens->size() == p.lq) {
        in.row_labels = *p.query_tokens;
    }
    if (p.key_tokens && p.key_tokens->size() == p.lk) {
        in.col_labels = *p.key_tokens;
    }
    render::HeatmapOptions ho;
    ho.title = where.substr(0, where.size() - 2); // "FILE: line 3: " -> "FILE: line 3"
    ho.colormap = o.colormap;
    ho.threads = r.solve.threads;
    return render::heatmap_html_bytes(in, ho);
}

} // namespace

std::vector<std::uint8_t> census_html(const problem::Census& c,
                                      const problem::CensusBest& best,
                                      const problem::CensusRequest& r,
                                      const CensusViewOptions& o) {
    render::CensusPageInput page;
    page.title = o.title.empty() ? "head census: " + r.params : o.title;
    page.layers = c.layers;
    page.heads = c.heads;
    page.sink_threshold = c.sink_threshold;
    page.colormap = o.colormap;
    page.default_stat = !o.default_stat.empty() ? o.default_stat
                        : r.probe               ? "induction"
                                                : "previous_token";
    for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
        page.stats.emplace_back(problem::head_stat_names()[stat]);
        std::vector<double> means(c.layers * c.heads);
        for (std::size_t x = 0; x < means.size(); ++x) {
            means[x] = c.mean(stat, x);
        }
        page.means.push_back(std::move(means));
        page.rows.push_back(c.rows[stat]);
        page.best.emplace_back(c.layers * c.heads);
    }
    for (std::size_t x = 0; x < c.layers * c.heads; ++x) {
        page.sink.push_back(c.sink(x) ? 1 : 0);
    }
    const auto probes = problem::census_probes(r);
    for (const auto& [text, cells] : heads_by_text(best)) {
        std::string where;
        const nlohmann::json input =
            problem::census_input(r, probes, static_cast<std::size_t>(text), where);
        const auto p = static_cast<std::int32_t>(page.pages.size());
        page.pages.push_back(text_page(r, input, where, cells, c.heads, o));
        page.page_titles.push_back(where.substr(0, where.size() - 2));
        for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
            for (std::size_t k = 0; k < cells.size(); ++k) {
                if (best.text[stat][cells[k]] == text) {
                    page.best[stat][cells[k]] = {
                        p, static_cast<std::int32_t>(k), best.value[stat][cells[k]]};
                }
            }
        }
    }
    const std::string html = render::census_page(page);
    return {html.begin(), html.end()};
}

} // namespace attn::plot

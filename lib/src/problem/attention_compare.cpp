// The metrics of attn/problem/attention_compare.hpp, written from the contract's formulas
// in float64: each row's values stored in its own slot by the thread that made the row,
// then summed per cell in row order. Not here: the model runs (attention_compare_models).
#include "attn/problem/attention_compare.hpp"

#include "attn/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace attn::problem {

namespace {

enum Metric : std::size_t { m_js, m_tv, m_max_abs, m_top1, m_topk };

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The k largest values' key indices, ties to the lowest index, as a sorted list.
std::vector<std::size_t> top_keys(const float* v, std::size_t lk, std::size_t k) {
    std::vector<std::size_t> idx(lk);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    const auto before = [v](std::size_t x, std::size_t y) {
        return v[x] > v[y] || (v[x] == v[y] && x < y);
    };
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), before);
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    return idx;
}

/// The first index of the largest value (ties to the lowest index).
std::size_t arg_max(const float* v, std::size_t lk) {
    std::size_t best = 0;
    for (std::size_t j = 1; j < lk; ++j) {
        if (v[j] > v[best]) {
            best = j;
        }
    }
    return best;
}

} // namespace

const std::array<const char*, kCompareMetrics>& compare_metric_names() {
    static const std::array<const char*, kCompareMetrics> names = {
        "js", "tv", "max_abs", "top1", "topk"};
    return names;
}

std::size_t AttentionComparison::most_different() const {
    std::size_t best = 0;
    bool found = false;
    for (std::size_t x = 0; x < cells(); ++x) {
        const double v = values[m_js][x];
        if (!std::isnan(v) && (!found || v > values[m_js][best])) {
            best = x;
            found = true;
        }
    }
    return best;
}

double AttentionComparison::mean_js() const {
    double sum = 0.0;
    std::size_t n = 0;
    for (const double v : values[m_js]) {
        if (!std::isnan(v)) {
            sum += v;
            ++n;
        }
    }
    return n == 0 ? kNaN : sum / static_cast<double>(n);
}

std::vector<std::size_t> AttentionComparison::cell_index(std::size_t x) const {
    std::vector<std::size_t> idx(grid.size());
    for (std::size_t d = grid.size(); d-- > 0;) {
        idx[d] = x % grid[d];
        x /= grid[d];
    }
    return idx;
}

CompareRows::CompareRows(CompareLayout layout, std::size_t top_k)
    : layout_(std::move(layout)), top_k_(top_k), value_(kCompareMetrics * layout_.rows(), 0.0),
      bad_(layout_.rows(), 0) {
    if (top_k == 0) {
        throw InputError::field(option_name("top_k"), "an integer >= 1", "0");
    }
}

void CompareRows::add_row(std::size_t row, const float* p, const float* q) {
    const std::size_t lk = layout_.lk;
    const std::size_t n = layout_.rows();
    double js = 0.0, tv = 0.0, max_abs = 0.0;
    for (std::size_t j = 0; j < lk; ++j) {
        const auto a = static_cast<double>(p[j]);
        const auto b = static_cast<double>(q[j]);
        if (!(std::isfinite(a) && std::isfinite(b) && a >= 0.0 && b >= 0.0)) {
            bad_[row] = 1;
            return;
        }
        const double m = 0.5 * (a + b);
        // 0·log 0 = 0: a zero term contributes nothing (and m > 0 wherever a or b is).
        js += (a > 0.0 ? a * std::log(a / m) : 0.0) + (b > 0.0 ? b * std::log(b / m) : 0.0);
        const double d = std::fabs(a - b);
        tv += d;
        max_abs = std::max(max_abs, d);
    }
    value_[m_js * n + row] = 0.5 * js;
    value_[m_tv * n + row] = 0.5 * tv;
    value_[m_max_abs * n + row] = max_abs;
    if (lk == 0) {
        value_[m_top1 * n + row] = value_[m_topk * n + row] = 1.0;
        return;
    }
    value_[m_top1 * n + row] = arg_max(p, lk) == arg_max(q, lk) ? 1.0 : 0.0;
    const std::size_t k = std::min(top_k_, lk);
    const std::vector<std::size_t> tp = top_keys(p, lk, k);
    const std::vector<std::size_t> tq = top_keys(q, lk, k);
    std::vector<std::size_t> both;
    std::set_intersection(tp.begin(), tp.end(), tq.begin(), tq.end(), std::back_inserter(both));
    value_[m_topk * n + row] = static_cast<double>(both.size()) / static_cast<double>(k);
}

void CompareRows::add(std::size_t first, const float* a, const float* b, std::size_t count) {
    const std::size_t lk = layout_.lk;
    if (lk == 0) {
        return;
    }
    for (std::size_t e = 0; e < count; e += lk) {
        add_row((first + e) / lk, a + e, b + e);
    }
}

AttentionComparison CompareRows::result() const {
    const CompareLayout& L = layout_;
    const std::size_t n = L.rows();
    for (std::size_t row = 0; row < n; ++row) {
        if (bad_[row] != 0) {
            const std::size_t cell = row / L.lq;
            throw InputError("weights: expected finite values >= 0, got another in query row " +
                             std::to_string(row % L.lq) + " of map " + std::to_string(cell));
        }
    }
    AttentionComparison c;
    c.grid = L.grid;
    c.top_k = top_k_;
    for (std::size_t m = 0; m < kCompareMetrics; ++m) {
        c.values[m].assign(L.cells(), 0.0);
    }
    std::vector<std::int64_t> counted(L.cells(), 0);
    for (std::size_t o = 0; o < L.outer; ++o) {
        for (std::size_t b = 0; b < L.batch; ++b) {
            for (std::size_t h = 0; h < L.inner; ++h) {
                const std::size_t cell = o * L.inner + h;
                for (std::size_t i = 0; i < L.lq; ++i) {
                    if (!L.query_rows.empty() && L.query_rows[b * L.lq + i] == 0) {
                        continue; // a padding query row
                    }
                    const std::size_t row = ((o * L.batch + b) * L.inner + h) * L.lq + i;
                    for (const Metric m : {m_js, m_tv, m_top1, m_topk}) {
                        c.values[m][cell] += value_[m * n + row];
                    }
                    c.values[m_max_abs][cell] =
                        std::max(c.values[m_max_abs][cell], value_[m_max_abs * n + row]);
                    ++counted[cell];
                }
            }
        }
    }
    for (std::size_t x = 0; x < L.cells(); ++x) {
        for (const Metric m : {m_js, m_tv, m_top1, m_topk}) {
            c.values[m][x] =
                counted[x] == 0 ? kNaN : c.values[m][x] / static_cast<double>(counted[x]);
        }
    }
    c.rows = L.cells() == 0 ? 0 : counted[0];
    return c;
}

AttentionComparison compare_maps(std::span<const float> a,
                                 std::span<const float> b,
                                 const CompareLayout& layout,
                                 std::size_t top_k) {
    ATTN_ASSERT(a.size() == layout.rows() * layout.lk && b.size() == a.size());
    CompareRows rows(layout, top_k);
    rows.add(0, a.data(), b.data(), a.size());
    return rows.result();
}

CompareLayout weights_layout(const LoadedWeights& w) {
    const std::vector<std::size_t>& s = w.array.shape;
    CompareLayout l;
    if (s.size() < 2) {
        throw InputError::at(w.name,
                             "weights: expected [..., Lq, Lk] attention weights, got shape " +
                                 shape_string(s));
    }
    l.lq = s[s.size() - 2];
    l.lk = s[s.size() - 1];
    const std::vector<std::size_t> lead(s.begin(), s.end() - 2);
    const bool stacked = lead.size() > w.axes.rank() - 2;
    // A bare array's leading axes are the grid ([H, L, L] -> [H], [layers, H, L, L] ->
    // [layers, H]), except a rank-5 array's [layers, B, H], read as a stacked result.
    if (!w.axes.batch || (!w.document && lead.size() < 3)) {
        l.grid = lead;
        l.outer = std::accumulate(lead.begin(), lead.end(), std::size_t{1}, std::multiplies<>());
        return l;
    }
    // [layers?, B, H?]: the batch pooled.
    std::size_t at = 0;
    if (stacked) {
        l.outer = lead[at++];
        l.grid.push_back(l.outer);
    }
    l.batch = lead[at++];
    if (w.axes.heads) {
        l.inner = lead[at];
        l.grid.push_back(l.inner);
    }
    return l;
}

AttentionComparison
compare_weights(const LoadedWeights& a, const LoadedWeights& b, std::size_t top_k) {
    if (a.array.shape != b.array.shape) {
        throw InputError::shape(b.name + ": weights (as A's)", a.array.shape, b.array.shape);
    }
    CompareLayout layout = weights_layout(a);
    if (weights_layout(b).grid != layout.grid) {
        throw InputError::at(b.name, "weights: its axes read otherwise than A's (" + a.name + ")");
    }
    AttentionComparison c = compare_maps(a.values(), b.values(), layout, top_k);
    a.check_unchanged();
    b.check_unchanged();
    return c;
}

} // namespace attn::problem

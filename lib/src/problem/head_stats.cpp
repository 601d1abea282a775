// The per-head statistics of attn/problem/head_stats.hpp, written from the contract's
// formulas: each query row's values stored in its own slot by the thread that made the row,
// then summed per head in row order (no cross-thread sums: the same for any threads).
#include "attn/problem/head_stats.hpp"

#include <cmath>
#include <limits>

namespace attn::problem {

namespace {

enum Stat : std::size_t {
    stat_entropy,
    stat_first_token,
    stat_previous_token,
    stat_self,
    stat_distance,
    stat_duplicate_token,
    stat_induction
};

} // namespace

const std::array<const char*, kHeadStats>& head_stat_names() {
    static const std::array<const char*, kHeadStats> names = {"entropy",
                                                              "first_token",
                                                              "previous_token",
                                                              "self",
                                                              "distance",
                                                              "duplicate_token",
                                                              "induction"};
    return names;
}

HeadStatRows::HeadStatRows(std::size_t batch,
                           std::size_t heads,
                           std::size_t lq,
                           std::size_t lk,
                           const Mask* key_padding,
                           const TokenIds* ids)
    : batch_(batch), heads_(heads), lq_(lq), lk_(lk), sequences_(batch),
      value_(kHeadStats * batch * heads * lq, 0.0), counted_(kHeadStats * batch * heads * lq, 0) {
    for (std::size_t b = 0; b < batch; ++b) {
        Sequence& s = sequences_[b];
        s.position.assign(lk, -1);
        const std::size_t pb = key_padding != nullptr && key_padding->shape()[0] > 1 ? b : 0;
        for (std::size_t j = 0; j < lk; ++j) {
            if (key_padding == nullptr || (*key_padding)(pb, 0, 0, j) != 0) {
                s.position[j] = static_cast<std::int64_t>(s.key.size());
                s.key.push_back(j);
                if (ids != nullptr && ids->shape()[1] == lk) {
                    s.ids.push_back((*ids)(ids->shape()[0] > 1 ? b : 0, j));
                }
            }
        }
    }
}

template <class T>
void HeadStatRows::add_row(const T* a, const Sequence& s, std::size_t i, std::size_t row) {
    const bool square = lq_ == lk_;
    const std::int64_t at = square ? s.position[i] : static_cast<std::int64_t>(i);
    if (at < 0) {
        return; // a padding query row
    }
    const auto p = static_cast<std::size_t>(at);
    const std::size_t n = lq_ * heads_ * batch_;
    const auto put = [&](Stat stat, double v) {
        value_[stat * n + row] = v;
        counted_[stat * n + row] = 1;
    };
    double entropy = 0.0;
    double distance = 0.0;
    for (std::size_t q = 0; q < s.key.size(); ++q) {
        const auto w = static_cast<double>(a[s.key[q]]);
        entropy -= w > 0.0 ? w * std::log(w) : 0.0;
        distance += w * std::fabs(static_cast<double>(p) - static_cast<double>(q));
    }
    put(stat_entropy, entropy);
    put(stat_distance, distance);
    if (!s.key.empty()) {
        put(stat_first_token, static_cast<double>(a[s.key.front()]));
    }
    if (p >= 1 && p - 1 < s.key.size()) {
        put(stat_previous_token, static_cast<double>(a[s.key[p - 1]]));
    }
    if (square) {
        put(stat_self, static_cast<double>(a[i]));
    }
    if (s.ids.empty() || !square) {
        return;
    }
    double duplicate = 0.0, induction = 0.0;
    bool any_duplicate = false, any_induction = false;
    for (std::size_t q = 0; q < p; ++q) {
        if (s.ids[q] != s.ids[p]) {
            continue;
        }
        any_duplicate = true;
        duplicate += static_cast<double>(a[s.key[q]]);
        if (q + 1 < p) { // j < i - 1: the token after j is before i
            any_induction = true;
            induction += static_cast<double>(a[s.key[q + 1]]);
        }
    }
    if (any_duplicate) {
        put(stat_duplicate_token, duplicate);
    }
    if (any_induction) {
        put(stat_induction, induction);
    }
}

template <class T> void HeadStatRows::add(std::size_t first, const T* values, std::size_t count) {
    for (std::size_t e = 0; e < count; e += lk_) {
        const std::size_t row = (first + e) / lk_; // (b·H + h)·Lq + i
        const std::size_t b = row / (heads_ * lq_);
        add_row(values + e, sequences_[b], row % lq_, row);
    }
}

template void HeadStatRows::add<float>(std::size_t, const float*, std::size_t);
template void HeadStatRows::add<double>(std::size_t, const double*, std::size_t);

HeadStatTotals HeadStatRows::totals() const {
    HeadStatTotals t;
    t.batch = batch_;
    t.heads = heads_;
    const std::size_t n = batch_ * heads_ * lq_;
    for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
        t.sum[stat].assign(batch_ * heads_, 0.0);
        t.rows[stat].assign(batch_ * heads_, 0);
        for (std::size_t row = 0; row < n; ++row) {
            if (counted_[stat * n + row] != 0) {
                t.sum[stat][row / lq_] += value_[stat * n + row];
                ++t.rows[stat][row / lq_];
            }
        }
    }
    return t;
}

HeadStatArrays head_stat_means(const HeadStatTotals& t, bool batched, bool f64) {
    HeadStatArrays out;
    for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
        io::Array a;
        a.shape = {t.batch, t.heads};
        if (!batched) {
            a.shape.erase(a.shape.begin());
        }
        a.dtype = f64 ? "float64" : "float32";
        for (std::size_t x = 0; x < t.batch * t.heads; ++x) {
            const double mean = t.rows[stat][x] == 0
                                    ? std::numeric_limits<double>::quiet_NaN()
                                    : t.sum[stat][x] / static_cast<double>(t.rows[stat][x]);
            a.values.push_back(static_cast<float>(mean));
            if (f64) {
                a.values64.push_back(mean);
            }
        }
        out.emplace_back(head_stat_names()[stat], std::move(a));
    }
    return out;
}

} // namespace attn::problem

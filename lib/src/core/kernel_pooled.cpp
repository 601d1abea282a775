// The streaming kernel's pooling for the long view (kernel_pooled.hpp). Per block, two
// passes over the [KB, kQb] tile while it is in L1: its final scores against each row's
// weakest kept key (the top-k), then its probabilities into the columns' max and sum (plain
// loops over the kQb rows of a key: vectorised by the compiler).
// Legend: kQb query rows per task (64), KB keys per block, W columns of keys, K top_k.
#include "kernel_pooled.hpp"

#include "kernel_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace attn::detail {

namespace {

constexpr std::size_t kQb = kQueryBlock; // QB: query rows per task
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::uint32_t kNoKey = 0xffffffffU;

/// A top-k candidate as one number that orders as the top-k does: the larger score first,
/// ties to the lower key (high half: the score's bits made monotone, -inf lowest; low half:
/// the key complemented). Keys come in key order, so a later key with the bar's score
/// loses to every kept one: the bar is strict.
std::uint64_t candidate(float s, std::uint32_t j) {
    std::uint32_t u = 0;
    std::memcpy(&u, &s, sizeof(u));
    u = (u & 0x80000000U) != 0 ? ~u : u | 0x80000000U;
    return (std::uint64_t{u} << 32) | (0xffffffffU - j);
}
float candidate_score(std::uint64_t c) {
    auto u = static_cast<std::uint32_t>(c >> 32);
    u = (u & 0x80000000U) != 0 ? u & 0x7fffffffU : ~u;
    float s = 0.0f;
    std::memcpy(&s, &u, sizeof(s));
    return s;
}
std::uint32_t candidate_key(std::uint64_t c) {
    return 0xffffffffU - static_cast<std::uint32_t>(c & 0xffffffffU);
}

/// The column holding key j: the last x with columns[x] <= j.
std::size_t column_of(const std::vector<std::size_t>& columns, std::size_t j) {
    return static_cast<std::size_t>(std::upper_bound(columns.begin(), columns.end(), j) -
                                    columns.begin()) -
           1;
}

} // namespace

void PooledTiles::start(const PooledDestination& to,
                        const KernelOps& ops,
                        std::size_t group,
                        std::size_t i0,
                        std::size_t rows,
                        const KeyRule& rule,
                        const std::uint8_t* pad_row,
                        std::size_t lk) {
    to_ = &to;
    ops_ = &ops;
    group_ = group;
    rows_ = rows;
    width_ = to.columns.size() - 1;
    k_ = to.top_k;
    pad_ = pad_row;
    if (pad_ != nullptr && pad_counted_ != pad_) {
        pad_open_.assign(lk + 1, 0);
        for (std::size_t j = 0; j < lk; ++j) {
            pad_open_[j + 1] = pad_open_[j] + (pad_[j] != 0 ? 1U : 0U);
        }
        pad_counted_ = pad_;
    }
    begin_.assign(kQb, 0);
    end_.assign(kQb, 0);
    for (std::size_t r = 0; r < rows; ++r) {
        const KeyRange keys = rule.keys(i0 + r);
        begin_[r] = keys.begin;
        end_[r] = std::max(keys.begin, keys.end);
    }
    max_.resize(group * width_ * kQb);
    sum_.resize(group * width_ * kQb);
    last_block_.resize(group * width_);
    touched_.assign(group, 0);
    first_col_.assign(group, 0);
    blocks_.assign(group, 0);
    block_max_.resize(group);
    kept_.resize(group * kQb);
    weakest_.resize(group * kQb);
    for (std::size_t g = 0; g < group; ++g) {
        block_max_[g].clear();
        for (std::size_t r = 0; r < kQb; ++r) {
            kept_[g * kQb + r].clear();
            kept_[g * kQb + r].reserve(2 * k_);
            // A row that sees no key (or past the task's rows) is never offered one; the
            // others take any key with a score until the first cut (-inf ones: finish()).
            const bool none = r >= rows || begin_[r] >= end_[r] || k_ == 0;
            weakest_[g * kQb + r] = none ? kInf : -kInf;
        }
    }
}

void PooledTiles::offer(std::size_t g, std::size_t r, float s, std::uint32_t j) {
    auto& c = kept_[g * kQb + r];
    c.push_back(candidate(s, j));
    if (c.size() == 2 * k_) {
        cut(g, r);
    }
}

void PooledTiles::cut(std::size_t g, std::size_t r) {
    auto& c = kept_[g * kQb + r];
    if (c.size() <= k_) {
        return;
    }
    const auto kth = c.begin() + static_cast<std::ptrdiff_t>(k_ - 1);
    std::nth_element(c.begin(), kth, c.end(), std::greater<>{});
    c.resize(k_);
    weakest_[g * kQb + r] = candidate_score(c.back());
}

void PooledTiles::offer_scores(std::size_t g, const float* st, std::size_t j0, std::size_t kb) {
    const float* bar = weakest_.data() + g * kQb;
    hits_.resize(kb);
    ops_->score_hits(st, kb, bar, hits_.data());
    for (std::size_t j = 0; j < kb; ++j) {
        for (std::uint64_t bits = hits_[j]; bits != 0; bits &= bits - 1) {
            const auto r = static_cast<std::size_t>(__builtin_ctzll(bits));
            // Rows past the task's have bar +inf: never a hit.
            if (visible(r, j0 + j) && st[j * kScoreStride + r] > bar[r]) {
                offer(g, r, st[j * kScoreStride + r], static_cast<std::uint32_t>(j0 + j));
            }
        }
    }
}

void PooledTiles::add_probabilities(std::size_t g,
                                    const float* st,
                                    std::size_t j0,
                                    std::size_t kb,
                                    const float* m,
                                    const float* alpha) {
    const std::size_t block = blocks_[g]++;
    block_max_[g].insert(block_max_[g].end(), m, m + kQb);
    const std::vector<std::size_t>& col = to_->columns;
    const std::size_t x0 = column_of(col, j0), x1 = column_of(col, j0 + kb - 1) + 1;
    float* max = max_.data() + g * width_ * kQb;
    float* sum = sum_.data() + g * width_ * kQb;
    std::uint32_t* last = last_block_.data() + g * width_;
    if (block == 0) {
        first_col_[g] = x0;
        touched_[g] = x0;
    }
    // Columns the kernel passed over (blocks of padding alone): no visible key, zeros.
    for (std::size_t x = touched_[g]; x < x0; ++x) {
        std::fill_n(max + x * kQb, kQb, 0.0f);
        std::fill_n(sum + x * kQb, kQb, 0.0f);
        last[x] = static_cast<std::uint32_t>(block);
    }
    for (std::size_t x = x0; x < x1; ++x) {
        // A column begun in an earlier block is brought to this block's base first (alpha:
        // exactly 1 where the row's max did not grow). Blocked keys have p = 0 exactly and
        // p >= 0 otherwise, so a max from 0 is the max of the visible keys' p.
        const std::size_t c0 = std::max(col[x], j0), c1 = std::min(col[x + 1], j0 + kb);
        ops_->pool_keys(st + (c0 - j0) * kScoreStride,
                        c1 - c0,
                        x < touched_[g] ? alpha : nullptr,
                        max + x * kQb,
                        sum + x * kQb);
        last[x] = static_cast<std::uint32_t>(block);
    }
    touched_[g] = std::max(touched_[g], x1);
}

void PooledTiles::finish(std::size_t g,
                         const float* base,
                         const float* inv,
                         std::size_t first_row) {
    // Each block's factor exp(m_block - base) · inv: what makes its p weights (0 for a
    // block where the row had seen only blocked keys, whose p are all 0, and for a NaN row,
    // given as seeing nothing).
    const std::size_t blocks = blocks_[g];
    factor_.resize(std::max<std::size_t>(blocks, 1) * kQb);
    const float* bm = block_max_[g].data();
    seen_end_.assign(end_.begin(), end_.end());
    for (std::size_t r = 0; r < kQb; ++r) {
        const bool none = r >= rows_ || std::isnan(inv[r]);
        if (none) {
            seen_end_[r] = begin_[r];
        }
        for (std::size_t b = 0; b < blocks; ++b) {
            const float m = bm[b * kQb + r];
            float& f = factor_[b * kQb + r];
            if (b > 0 && m == bm[(b - 1) * kQb + r]) {
                f = factor_[(b - 1) * kQb + r];
            } else {
                f = none || m == -kInf ? 0.0f : std::exp(m - base[r]) * inv[r];
            }
        }
    }
    float* max = max_.data() + g * width_ * kQb;
    float* sum = sum_.data() + g * width_ * kQb;
    const std::uint32_t* last = last_block_.data() + g * width_;
    const std::size_t x0 = first_col_[g];
    ops_->scale_columns(
        max + x0 * kQb, sum + x0 * kQb, touched_[g] - x0, last + x0, factor_.data());
    top_key_.assign(kQb * k_, kNoKey);
    top_weight_.assign(kQb * k_, 0.0f);
    for (std::size_t r = 0; r < rows_; ++r) {
        if (seen_end_[r] > begin_[r]) {
            top_k_row(g, r, base[r], inv[r]);
        }
    }
    to_->store(first_row,
               PooledRows{.rows = rows_,
                          .stride = kQb,
                          .x_begin = first_col_[g],
                          .x_end = touched_[g],
                          .top_k = k_,
                          .max = max,
                          .sum = sum,
                          .key_begin = begin_.data(),
                          .key_end = seen_end_.data(),
                          .open_before = pad_ != nullptr ? pad_open_.data() : nullptr,
                          .top_key = top_key_.data(),
                          .top_weight = top_weight_.data()});
}

void PooledTiles::top_k_row(std::size_t g, std::size_t r, float base, float inv) {
    using L = Scalar<float>;
    cut(g, r);
    const auto& c = kept_[g * kQb + r];
    std::vector<std::pair<float, std::uint32_t>> kept; // (weight, key)
    kept.reserve(k_);
    for (const std::uint64_t e : c) {
        kept.emplace_back(score::exp_weight<L>(candidate_score(e), base) * inv, candidate_key(e));
    }
    if (kept.size() < k_) {
        // Fewer keys with a score than K: the rest are the row's first visible keys of
        // score -inf (never offered), weight 0, in key order.
        std::vector<std::uint32_t> have;
        for (const std::uint64_t e : c) {
            have.push_back(candidate_key(e));
        }
        std::sort(have.begin(), have.end());
        for (std::size_t j = begin_[r]; j < end_[r] && kept.size() < k_; ++j) {
            if ((pad_ == nullptr || pad_[j] != 0) &&
                !std::binary_search(have.begin(), have.end(), static_cast<std::uint32_t>(j))) {
                kept.emplace_back(0.0f, static_cast<std::uint32_t>(j));
            }
        }
    }
    // Strongest first by weight, ties to the lower key (the page's order).
    std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    for (std::size_t q = 0; q < kept.size(); ++q) {
        top_key_[r * k_ + q] = kept[q].second;
        top_weight_[r * k_ + q] = kept[q].first;
    }
}

} // namespace attn::detail

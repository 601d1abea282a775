// The long view (attn/render/long_view.hpp): pooled levels and top-k lists built from rows
// in any order. Level 0 pools cells, level l + 1 pools level l's pixels (exact: its pixels
// are unions of level l's), each pixel row finished when all its parts have arrived; a
// finished band of rows is quantized (the PNG's colour index rule) and compressed.
#include "attn/render/long_view.hpp"

#include "attn/error.hpp"
#include "attn/half.hpp"
#include "attn/parallel.hpp"
#include "attn/render/colormap.hpp"
#include "heatmap_detail.hpp"
#include "html_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

namespace attn::render {

namespace {

using detail::packed;

/// The pixel of an n-cell axis drawn with `side` pixels that holds cell i: the y with
/// floor(y·n/side) <= i < floor((y+1)·n/side).
std::size_t pixel_of(std::size_t i, std::size_t n, std::size_t side) {
    return ((i + 1) * side - 1) / n;
}

/// The first cell of pixel y.
std::size_t first_cell(std::size_t y, std::size_t n, std::size_t side) {
    return y * n / side;
}

/// Pooled cells of one pixel row: per pixel the maximum, the sum and the count of the
/// cells with a value; `parts` of its rows (cell rows or finer pixel rows) added so far.
struct PixelRow {
    std::vector<float> max;
    std::vector<double> sum;
    std::vector<std::uint32_t> count;
    std::size_t parts = 0;

    explicit PixelRow(std::size_t w)
        : max(w, -std::numeric_limits<float>::infinity()), sum(w, 0.0), count(w, 0) {}

    void merge(const PixelRow& o, const std::vector<std::size_t>& col_of) {
        for (std::size_t x = 0; x < o.max.size(); ++x) {
            const std::size_t c = col_of[x];
            max[c] = std::max(max[c], o.max[x]);
            sum[c] += o.sum[x];
            count[c] += o.count[x];
        }
    }
};

/// A band of a level being filled: max, mean and state planes of `rows` pixel rows.
struct Band {
    std::vector<std::uint8_t> raw;
    std::size_t rows = 0, done = 0;
};

struct Level {
    LongViewLevel size;
    std::vector<std::size_t> parts_needed; ///< per pixel row
    std::vector<std::size_t> row_parent;   ///< per pixel row: the next level's (empty: last)
    std::vector<std::size_t> col_parent;   ///< per pixel column: the next level's
    std::map<std::size_t, PixelRow> open;
    std::map<std::size_t, Band> bands;
    std::vector<std::string> packed; ///< per band, once compressed
};

/// A band ready to compress: (level, band, bytes).
struct Ready {
    std::size_t level = 0, band = 0;
    std::vector<std::uint8_t> raw;
};

} // namespace

std::vector<LongViewLevel> long_view_levels(std::size_t rows, std::size_t cols) {
    std::vector<LongViewLevel> out;
    for (std::size_t side = kLongViewSide; side >= kLongViewMinSide; side /= 2) {
        out.push_back({std::min(rows, side), std::min(cols, side)});
    }
    return out;
}

std::vector<std::size_t> long_view_columns(std::size_t cols) {
    const std::size_t w = long_view_levels(1, cols).front().w;
    std::vector<std::size_t> c;
    for (std::size_t x = 0; x <= w; ++x) {
        c.push_back(first_cell(x, cols, w));
    }
    return c;
}

ColorNorm streaming_norm(const HeatmapOptions& o) {
    if (o.clip) {
        throw InputError(option_name("clip") +
                         ": a page built while the weights are made cannot take quantiles of "
                         "them; give " +
                         option_name("vmin") + " and " + option_name("vmax"));
    }
    ColorNorm n;
    n.scale = o.scale;
    n.vmax = o.vmax.value_or(1.0);
    n.vmin = o.vmin.value_or(o.scale == ColorScale::log ? n.vmax * 1e-6 : 0.0);
    if (!(n.vmin < n.vmax) || (o.scale == ColorScale::log && !(n.vmin > 0.0))) {
        throw InputError(option_name("vmin") + ", " + option_name("vmax") +
                         ": the colour range is empty or not positive on a log scale");
    }
    return n;
}

/// A row's k strongest keys offered in key order, largest first, ties to the lowest key:
/// a later key replaces the weakest kept only when stronger.
class TopK {
  public:
    explicit TopK(std::size_t k) : k_(k) { best_.reserve(k + 1); }

    /// Whether a key of weight `v` would be kept (NaN never is).
    bool beaten_by(float v) const {
        return k_ > 0 && (best_.size() < k_ || v > best_.front().first);
    }

    void offer(float v, std::uint32_t j) {
        if (!beaten_by(v)) {
            return;
        }
        if (best_.size() < k_) {
            best_.emplace_back(v, j);
            std::push_heap(best_.begin(), best_.end(), weaker);
        } else {
            std::pop_heap(best_.begin(), best_.end(), weaker);
            best_.back() = {v, j};
            std::push_heap(best_.begin(), best_.end(), weaker);
        }
    }

    /// The keys kept, strongest first, into `idx` and (as float16) `w`.
    void store(std::uint32_t* idx, std::uint16_t* w) {
        std::sort_heap(best_.begin(), best_.end(), weaker);
        for (std::size_t q = 0; q < best_.size(); ++q) {
            idx[q] = best_[q].second;
            w[q] = double_to_half(static_cast<double>(best_[q].first));
        }
    }

  private:
    /// The heap's order: a min-heap on (value, -index), the weakest kept at the front.
    static constexpr auto weaker = [](const std::pair<float, std::uint32_t>& a,
                                      const std::pair<float, std::uint32_t>& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };

    std::size_t k_;
    std::vector<std::pair<float, std::uint32_t>> best_;
};

/// One panel's levels, thumbnail and top-k lists.
class LongPanel {
  public:
    LongPanel(std::size_t rows, std::size_t cols, std::size_t top_k, std::size_t tw, std::size_t th)
        : rows_(rows), cols_(cols), k_(top_k), tw_(tw), th_(th), top_idx_(rows * top_k, kNone),
          top_w_(rows * top_k, 0), thumb_sum_(tw * th, 0), thumb_count_(tw * th, 0),
          thumb_max_(tw * th, 0) {
        const std::vector<LongViewLevel> sizes = long_view_levels(rows, cols);
        levels_.resize(sizes.size());
        for (std::size_t l = 0; l < sizes.size(); ++l) {
            Level& v = levels_[l];
            v.size = sizes[l];
            v.parts_needed.assign(v.size.h, 0);
            const std::size_t bands = (v.size.h + kLongViewBandRows - 1) / kLongViewBandRows;
            v.packed.resize(bands);
            if (l == 0) {
                for (std::size_t y = 0; y < v.size.h; ++y) {
                    v.parts_needed[y] =
                        first_cell(y + 1, rows, v.size.h) - first_cell(y, rows, v.size.h);
                }
            }
            if (l + 1 < sizes.size()) {
                const LongViewLevel up = sizes[l + 1];
                for (std::size_t y = 0; y < v.size.h; ++y) {
                    v.row_parent.push_back(pixel_of(first_cell(y, rows, v.size.h), rows, up.h));
                }
                for (std::size_t x = 0; x < v.size.w; ++x) {
                    v.col_parent.push_back(pixel_of(first_cell(x, cols, v.size.w), cols, up.w));
                }
            }
            if (l > 0) {
                for (const std::size_t parent : levels_[l - 1].row_parent) {
                    ++v.parts_needed[parent];
                }
            }
        }
        for (std::size_t x = 0; x <= levels_[0].size.w; ++x) {
            col_start_.push_back(first_cell(x, cols, levels_[0].size.w));
        }
    }

    static constexpr std::uint32_t kNone = 0xffffffffU;

    /// Rows [first, first + n): `values` n x cols; each row's blocked keys from `masked`
    /// (n x cols, 1 = blocked), else from `keys` (n ranges), else none.
    void add_rows(std::size_t first,
                  std::size_t n,
                  const float* values,
                  const std::uint8_t* masked,
                  const LongViewKeys* keys,
                  const ColorNorm& norm) {
        const std::size_t h0 = levels_[0].size.h, w0 = levels_[0].size.w;
        std::size_t i = 0;
        while (i < n) {
            // The rows of this block in one level-0 pixel row, pooled here, merged under the lock.
            const std::size_t y = pixel_of(first + i, rows_, h0);
            const std::size_t end = std::min(n, first_cell(y + 1, rows_, h0) - first);
            PixelRow part(w0);
            for (; i < end; ++i) {
                const float* row = values + i * cols_;
                OpenKeys open{0, cols_, nullptr};
                if (masked != nullptr) {
                    open = open_keys(masked + i * cols_);
                } else if (keys != nullptr) {
                    open.begin = std::min(keys[i].begin, cols_);
                    open.end = std::clamp(keys[i].end, open.begin, cols_);
                }
                scan_row(first + i, row, open, part);
            }
            std::vector<Ready> ready;
            {
                const std::lock_guard lock(mutex_);
                add_part(0, y, part, norm, ready);
            }
            compress(ready);
        }
    }

    /// Rows [first, first + p.rows) from the kernel's pooling: each level-0 pixel row's
    /// part pooled over its rows here (max, sum in row order, count from the rows' keys),
    /// merged under the lock; the top-k lists copied.
    void add_pooled(std::size_t first, const PooledRows& p, const ColorNorm& norm) {
        ATTN_ASSERT(p.top_k == k_);
        for (std::size_t r = 0; r < p.rows; ++r) {
            for (std::size_t q = 0; q < k_; ++q) {
                top_idx_[(first + r) * k_ + q] = p.top_key[r * k_ + q];
                top_w_[(first + r) * k_ + q] =
                    double_to_half(static_cast<double>(p.top_weight[r * k_ + q]));
            }
        }
        const std::size_t h0 = levels_[0].size.h, w0 = levels_[0].size.w;
        std::size_t i = 0;
        while (i < p.rows) {
            const std::size_t y = pixel_of(first + i, rows_, h0);
            const std::size_t end = std::min(p.rows, first_cell(y + 1, rows_, h0) - first);
            PixelRow part(w0);
            part.parts = end - i;
            pool_rows(p, i, end, part);
            std::vector<Ready> ready;
            {
                const std::lock_guard lock(mutex_);
                add_part(0, y, part, norm, ready);
            }
            compress(ready);
            i = end;
        }
    }

    /// Block b of the top-k lists (kLongViewTopKRows rows from b·kLongViewTopKRows), packed:
    /// the keys (2 bytes each, 0xffff for none, or 4 when `wide_index`), then the weights.
    std::string top_k_block(std::size_t b, bool wide_index) const {
        const std::size_t r0 = b * kLongViewTopKRows, r1 = std::min(rows_, r0 + kLongViewTopKRows);
        std::vector<std::uint8_t> raw;
        raw.reserve((r1 - r0) * k_ * (wide_index ? 6U : 4U));
        for (std::size_t q = r0 * k_; q < r1 * k_; ++q) {
            const std::uint32_t v = top_idx_[q] == kNone && !wide_index ? 0xffffU : top_idx_[q];
            for (std::size_t byte = 0; byte < (wide_index ? 4U : 2U); ++byte) {
                raw.push_back(static_cast<std::uint8_t>(v >> (8 * byte)));
            }
        }
        for (std::size_t q = r0 * k_; q < r1 * k_; ++q) {
            raw.push_back(static_cast<std::uint8_t>(top_w_[q] & 0xffU));
            raw.push_back(static_cast<std::uint8_t>(top_w_[q] >> 8));
        }
        return packed(raw, detail::Pack::small);
    }

    /// Blocks of top-k lists (top_k_block's).
    std::size_t top_k_blocks() const { return (rows_ + kLongViewTopKRows - 1) / kLongViewTopKRows; }

    /// The panel's elements ("p{P}L{l}B{b}", then "p{P}K{b}" from `top_k`, top_k_block's
    /// bytes) and its thumbnail.
    void write(std::size_t panel,
               std::vector<std::uint8_t>& page,
               detail::Thumbs& thumbs,
               const std::vector<std::string>& top_k) const {
        const std::string id = "p" + std::to_string(panel);
        for (std::size_t l = 0; l < levels_.size(); ++l) {
            for (std::size_t b = 0; b < levels_[l].packed.size(); ++b) {
                ATTN_ASSERT(!levels_[l].packed[b].empty()); // every row was added
                detail::append_element(page,
                                       id + "L" + std::to_string(l) + "B" + std::to_string(b),
                                       levels_[l].packed[b]);
            }
        }
        for (std::size_t b = 0; b < top_k.size(); ++b) {
            detail::append_element(page, id + "K" + std::to_string(b), top_k[b]);
        }
        for (std::size_t q = 0; q < tw_ * th_; ++q) {
            const std::uint32_t c = thumb_count_[q];
            thumbs.max.push_back(thumb_max_[q]);
            thumbs.mean.push_back(
                c == 0 ? 0 : static_cast<std::uint8_t>((2 * thumb_sum_[q] + c) / (2 * c)));
            thumbs.state.push_back(c == 0 ? 1 : 0);
        }
    }

  private:
    /// A row's keys with values: [begin, end), and inside it `holes` (1 = blocked; null:
    /// none). Every key outside the range is blocked.
    struct OpenKeys {
        std::size_t begin = 0, end = 0;
        const std::uint8_t* holes = nullptr;
    };

    /// A blocked-cell mask row as OpenKeys: its first and last open key, and the mask
    /// itself only when a key between them is blocked.
    OpenKeys open_keys(const std::uint8_t* blocked) const {
        OpenKeys o; // every key blocked unless one is open
        const void* open = std::memchr(blocked, 0, cols_);
        if (open == nullptr) {
            return o;
        }
        o.begin = static_cast<std::size_t>(static_cast<const std::uint8_t*>(open) - blocked);
        const auto last = static_cast<std::size_t>(
            static_cast<const std::uint8_t*>(memrchr(blocked, 0, cols_)) - blocked);
        o.end = last + 1;
        if (std::memchr(blocked + o.begin, 1, o.end - o.begin) != nullptr) {
            o.holes = blocked;
        }
        return o;
    }

    /// Row i into level-0 pixels and its top-k, in one pass over the row: each pixel's
    /// cells (contiguous) pooled in registers, in order (the same sums as cell by cell),
    /// then offered to the top-k only when the pixel's maximum beats the weakest kept.
    /// Only the pixels holding the row's open keys are visited (a causal row's second
    /// half is passed over: nothing of it is pooled or listed).
    void scan_row(std::size_t i, const float* row, const OpenKeys& keys, PixelRow& part) {
        TopK best(k_);
        const std::size_t side = col_start_.size() - 1;
        const std::size_t x0 = keys.begin < keys.end ? pixel_of(keys.begin, cols_, side) : 0;
        const std::size_t x1 = keys.begin < keys.end ? pixel_of(keys.end - 1, cols_, side) + 1 : 0;
        const std::uint8_t* holes = keys.holes;
        for (std::size_t x = x0; x < x1; ++x) {
            const std::size_t j0 = std::max(col_start_[x], keys.begin);
            const std::size_t j1 = std::min(col_start_[x + 1], keys.end);
            const Pooled p = pool_cells(row, j0, j1, holes, part.sum[x]);
            part.max[x] = std::max(part.max[x], p.max);
            part.sum[x] = p.sum;
            part.count[x] += p.count;
            if (p.count > 0 && best.beaten_by(p.max)) {
                for (std::size_t j = j0; j < j1; ++j) {
                    if ((holes == nullptr || holes[j] == 0) && !std::isnan(row[j])) {
                        best.offer(row[j], static_cast<std::uint32_t>(j));
                    }
                }
            }
        }
        ++part.parts;
        best.store(top_idx_.data() + i * k_, top_w_.data() + i * k_);
    }

    /// Rows [r0, r1) of p pooled into one pixel row's part: per column the rows' max and
    /// sum (a row that does not see a column holds 0 there: no effect on a max of weights
    /// >= 0) and the count of the keys they see, by ranges (every row's whole width where
    /// the column lies inside all their ranges, row by row at the ranges' ends).
    void pool_rows(const PooledRows& p, std::size_t r0, std::size_t r1, PixelRow& part) const {
        std::size_t lo = 0, hi = cols_, seeing = 0;
        for (std::size_t r = r0; r < r1; ++r) {
            if (p.key_begin[r] < p.key_end[r]) {
                lo = std::max(lo, p.key_begin[r]);
                hi = std::min(hi, p.key_end[r]);
                ++seeing;
            }
        }
        const auto open = [&](std::size_t a, std::size_t b) -> std::uint32_t {
            if (a >= b) {
                return 0;
            }
            return p.open_before != nullptr ? p.open_before[b] - p.open_before[a]
                                            : static_cast<std::uint32_t>(b - a);
        };
        for (std::size_t x = p.x_begin; x < p.x_end; ++x) {
            const std::size_t c0 = col_start_[x], c1 = col_start_[x + 1];
            std::uint32_t count = 0;
            if (c0 >= lo && c1 <= hi) {
                count = static_cast<std::uint32_t>(seeing) * open(c0, c1);
            } else {
                for (std::size_t r = r0; r < r1; ++r) {
                    count += open(std::max(c0, p.key_begin[r]), std::min(c1, p.key_end[r]));
                }
            }
            if (count == 0) {
                continue;
            }
            const float* mx = p.max + x * p.stride;
            const float* sm = p.sum + x * p.stride;
            float m = -std::numeric_limits<float>::infinity();
            double s = 0.0;
            for (std::size_t r = r0; r < r1; ++r) {
                m = std::max(m, mx[r]);
                s += static_cast<double>(sm[r]);
            }
            part.max[x] = m;
            part.sum[x] = s;
            part.count[x] = count;
        }
    }

    struct Pooled {
        float max;
        double sum;
        std::uint32_t count;
    };

    /// Cells [j0, j1) of a row pooled, NaN and `holes` left out, their sum added to `sum`
    /// in key order. Without holes, first the plain loop (every cell counted); a NaN
    /// there makes its sum NaN, and then the cells go through the checked loop instead:
    /// the same results either way.
    static Pooled pool_cells(
        const float* row, std::size_t j0, std::size_t j1, const std::uint8_t* holes, double sum) {
        if (holes == nullptr) {
            float m = -std::numeric_limits<float>::infinity();
            double s = sum;
            for (std::size_t j = j0; j < j1; ++j) {
                const float v = row[j];
                m = v > m ? v : m;
                s += static_cast<double>(v);
            }
            if (!std::isnan(s)) {
                return {m, s, static_cast<std::uint32_t>(j1 - j0)};
            }
        }
        float m = -std::numeric_limits<float>::infinity();
        double s = sum;
        std::uint32_t c = 0;
        for (std::size_t j = j0; j < j1; ++j) {
            const float v = row[j];
            const bool ok = (holes == nullptr || holes[j] == 0) && !std::isnan(v);
            m = ok && v > m ? v : m;
            s += ok ? static_cast<double>(v) : 0.0; // s + 0.0 is s: the same sums
            c += ok ? 1U : 0U;
        }
        return {m, s, c};
    }

    /// Adds a part to pixel row y of level l; a row complete is quantized into its band and
    /// pooled into the next level. Under the lock.
    void add_part(std::size_t l,
                  std::size_t y,
                  const PixelRow& part,
                  const ColorNorm& norm,
                  std::vector<Ready>& ready) {
        Level& v = levels_[l];
        auto it = v.open.try_emplace(y, v.size.w).first;
        PixelRow& acc = it->second;
        if (l == 0) {
            for (std::size_t x = 0; x < v.size.w; ++x) {
                acc.max[x] = std::max(acc.max[x], part.max[x]);
                acc.sum[x] += part.sum[x];
                acc.count[x] += part.count[x];
            }
            acc.parts += part.parts;
        } else {
            acc.merge(part, levels_[l - 1].col_parent);
            ++acc.parts;
        }
        if (acc.parts < v.parts_needed[y]) {
            return;
        }
        const PixelRow done = std::move(acc);
        v.open.erase(it);
        store_row(l, y, done, norm, ready);
        if (l + 1 < levels_.size()) {
            add_part(l + 1, v.row_parent[y], done, norm, ready);
        }
    }

    /// A finished pixel row's colour indices (max, mean) and states into its band.
    void store_row(std::size_t l,
                   std::size_t y,
                   const PixelRow& row,
                   const ColorNorm& norm,
                   std::vector<Ready>& ready) {
        Level& v = levels_[l];
        const std::size_t b = y / kLongViewBandRows, w = v.size.w;
        Band& band = v.bands[b];
        if (band.raw.empty()) {
            band.rows = std::min(kLongViewBandRows, v.size.h - b * kLongViewBandRows);
            band.raw.assign(3 * band.rows * w, 0);
        }
        const std::size_t plane = band.rows * w, at = (y - b * kLongViewBandRows) * w;
        if (!indexer_) {
            indexer_.emplace(norm);
        }
        // The max plane by the exact float rule (ColorIndexer: no division a pixel), the mean
        // (a double) by the rule itself.
        indexer_->map(row.max.data(), w, band.raw.data() + at);
        for (std::size_t x = 0; x < w; ++x) {
            const std::uint32_t c = row.count[x];
            const auto index = [&](double value) {
                return static_cast<std::uint8_t>(Colormap::colormap_index(norm(value)));
            };
            band.raw[at + x] = c == 0 ? 0 : band.raw[at + x];
            band.raw[plane + at + x] = c == 0 ? 0 : index(row.sum[x] / c);
            band.raw[2 * plane + at + x] = c == 0 ? 1 : 0;
        }
        if (l == 0) {
            add_thumb_row(y, band.raw.data() + at, band.raw.data() + plane + at, row.count);
        }
        if (++band.done == band.rows) {
            ready.push_back({l, b, std::move(band.raw)});
            v.bands.erase(b);
        }
    }

    /// Level-0 pixel row y into the thumbnail (colour indices pooled as add_thumb does).
    void add_thumb_row(std::size_t y,
                       const std::uint8_t* max,
                       const std::uint8_t* mean,
                       const std::vector<std::uint32_t>& count) {
        const LongViewLevel s = levels_[0].size;
        const std::size_t ty = pixel_of(y, s.h, th_);
        for (std::size_t x = 0; x < s.w; ++x) {
            if (count[x] == 0) {
                continue;
            }
            const std::size_t q = ty * tw_ + pixel_of(x, s.w, tw_);
            thumb_max_[q] = std::max(thumb_max_[q], max[x]);
            thumb_sum_[q] += mean[x];
            ++thumb_count_[q];
        }
    }

    /// Compresses finished bands outside the lock, then stores them under it.
    void compress(std::vector<Ready>& ready) {
        for (Ready& r : ready) {
            std::string data =
                packed(r.raw, r.level == 0 ? detail::Pack::fast : detail::Pack::small);
            const std::lock_guard lock(mutex_);
            levels_[r.level].packed[r.band] = std::move(data);
        }
    }

    std::size_t rows_, cols_, k_, tw_, th_;
    std::vector<Level> levels_;
    std::vector<std::size_t> col_start_; ///< the first key of each level-0 pixel column, and cols
    std::vector<std::uint32_t> top_idx_;
    std::vector<std::uint16_t> top_w_;
    std::vector<std::uint32_t> thumb_sum_, thumb_count_;
    std::vector<std::uint8_t> thumb_max_;
    std::optional<detail::ColorIndexer> indexer_; ///< store_row's, of the first norm it gets
    std::mutex mutex_;
};

struct LongViewPage::Impl {
    HeatmapInput shape;
    HeatmapOptions options;
    ColorNorm norm;
    std::vector<std::string> notes;
    std::size_t top_k = 0;
    std::vector<std::unique_ptr<LongPanel>> panels;
};

LongViewPage::LongViewPage(const HeatmapInput& shape,
                           const HeatmapOptions& options,
                           const ColorNorm& norm,
                           std::vector<std::string> notes,
                           std::size_t top_k)
    : impl_(std::make_unique<Impl>()) {
    impl_->shape.rows = shape.rows;
    impl_->shape.cols = shape.cols;
    impl_->shape.row_labels = shape.row_labels;
    impl_->shape.col_labels = shape.col_labels;
    impl_->shape.grid_cols = shape.grid_cols;
    for (const HeatmapPanel& p : shape.panels) {
        impl_->shape.panels.push_back({p.title, {}, {}});
    }
    impl_->options = options;
    impl_->norm = norm;
    impl_->notes = std::move(notes);
    impl_->top_k = std::min(top_k, shape.cols);
    const std::size_t tw = std::min<std::size_t>(80, shape.cols);
    const std::size_t th = std::min<std::size_t>(80, shape.rows);
    for (std::size_t p = 0; p < shape.panels.size(); ++p) {
        impl_->panels.push_back(
            std::make_unique<LongPanel>(shape.rows, shape.cols, impl_->top_k, tw, th));
    }
}

LongViewPage::~LongViewPage() = default;

void LongViewPage::add_rows(std::size_t panel,
                            std::size_t first,
                            std::size_t n,
                            const float* values,
                            const std::uint8_t* masked) {
    ATTN_ASSERT(panel < impl_->panels.size() && first + n <= impl_->shape.rows);
    impl_->panels[panel]->add_rows(first, n, values, masked, nullptr, impl_->norm);
}

void LongViewPage::add_rows_within(std::size_t panel,
                                   std::size_t first,
                                   std::size_t n,
                                   const float* values,
                                   const LongViewKeys* keys) {
    ATTN_ASSERT(panel < impl_->panels.size() && first + n <= impl_->shape.rows);
    impl_->panels[panel]->add_rows(first, n, values, nullptr, keys, impl_->norm);
}

void LongViewPage::add_pooled(std::size_t panel, std::size_t first, const PooledRows& rows) {
    ATTN_ASSERT(panel < impl_->panels.size() && first + rows.rows <= impl_->shape.rows);
    impl_->panels[panel]->add_pooled(first, rows, impl_->norm);
}

std::size_t LongViewPage::top_k() const {
    return impl_->top_k;
}

std::vector<std::uint8_t> LongViewPage::finish() {
    const Impl& m = *impl_;
    const bool wide = m.shape.cols >= 0xffff;
    std::string levels = "[";
    for (const LongViewLevel& l : long_view_levels(m.shape.rows, m.shape.cols)) {
        levels += (levels.size() > 1 ? ",[" : "[") + std::to_string(l.h) + "," +
                  std::to_string(l.w) + "]";
    }
    // Every panel's top-k blocks packed on the run's threads (a block a task), written in order.
    std::vector<std::vector<std::string>> top_k(m.panels.size());
    std::vector<std::pair<std::size_t, std::size_t>> tasks; // (panel, block)
    for (std::size_t p = 0; p < m.panels.size(); ++p) {
        top_k[p].resize(m.panels[p]->top_k_blocks());
        for (std::size_t b = 0; b < top_k[p].size(); ++b) {
            tasks.emplace_back(p, b);
        }
    }
    attn::detail::parallel_for(tasks.size(),
                               attn::detail::resolve_threads(m.options.threads, tasks.size()),
                               [&](unsigned, std::size_t t) {
                                   const auto [p, b] = tasks[t];
                                   top_k[p][b] = m.panels[p]->top_k_block(b, wide);
                               });
    detail::PageFlags flags;
    flags.states = true;
    flags.extra_meta = ",\"long\":{\"levels\":" + levels +
                       "],\"bandRows\":" + std::to_string(kLongViewBandRows) +
                       ",\"topK\":" + std::to_string(m.top_k) +
                       ",\"topKRows\":" + std::to_string(kLongViewTopKRows) +
                       ",\"indexBytes\":" + (wide ? "4" : "2") + "}";
    return detail::view_page(m.shape,
                             m.options,
                             m.norm,
                             m.notes,
                             flags,
                             [&](std::vector<std::uint8_t>& page, detail::Thumbs& thumbs) {
                                 for (std::size_t p = 0; p < m.panels.size(); ++p) {
                                     detail::append_element(page, "p" + std::to_string(p), "");
                                     m.panels[p]->write(p, page, thumbs, top_k[p]);
                                 }
                             });
}

std::vector<std::uint8_t>
long_view_html_bytes(const HeatmapInput& in, const HeatmapOptions& o, std::size_t top_k) {
    detail::validate_heatmap(in, o);
    std::vector<std::string> notes;
    const ColorNorm norm = detail::full_range(in, o, notes);
    LongViewPage page(in, o, norm, notes, top_k);
    // Each panel in blocks of rows, one block per task; the builder takes them in any order.
    constexpr std::size_t kRows = 64;
    for (std::size_t p = 0; p < in.panels.size(); ++p) {
        const HeatmapPanel& panel = in.panels[p];
        const std::size_t blocks = (in.rows + kRows - 1) / kRows;
        const unsigned threads = attn::detail::resolve_threads(o.threads, blocks);
        attn::detail::parallel_for(blocks, threads, [&](unsigned, std::size_t b) {
            const std::size_t first = b * kRows, n = std::min(kRows, in.rows - first);
            page.add_rows(p,
                          first,
                          n,
                          panel.values.data() + first * in.cols,
                          panel.masked.empty() ? nullptr : panel.masked.data() + first * in.cols);
            if (in.release) {
                in.release(p, first * in.cols, n * in.cols);
            }
        });
    }
    return page.finish();
}

} // namespace attn::render

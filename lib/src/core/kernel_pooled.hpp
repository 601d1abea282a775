// The streaming kernel's pooling for the long heatmap view (attn::PooledDestination): per
// query row and column of keys, the largest and the summed probabilities of the kernel's
// score tiles while they are in cache, and each row's strongest keys by score; turned into
// weights when the row's max and sum are final. It never holds a row of weights.
// Legend: QB query rows per task (64), KB keys per block, W columns of keys.
#pragma once

#include "attn/attention.hpp"
#include "attn/visibility.hpp"
#include "kernel_ops.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace attn::detail {

/// One worker's pooling state for its current task (rows [i0, i0 + rows) of one batch, the
/// `group` query heads of one K/V head). The kernel calls, per key block in key order and
/// head g: offer_scores() with the block's final scores, then add_probabilities() with the
/// online softmax's p = exp(s - base) and its rescale factors; finish() per head at the end.
class PooledTiles {
  public:
    /// Readies the state for a task. `pad_row`: batch b's key padding (null: none).
    void start(const PooledDestination& to,
               const KernelOps& ops,
               std::size_t group,
               std::size_t i0,
               std::size_t rows,
               const KeyRule& rule,
               const std::uint8_t* pad_row,
               std::size_t lk);

    /// Block [j0, j0 + kb) of head g's final scores, st[j · kScoreStride + r] (blocked keys -inf):
    /// each row's keys that beat its weakest kept offered to its top-k.
    void offer_scores(std::size_t g, const float* st, std::size_t j0, std::size_t kb);

    /// The same block after the online-softmax step: st holds p = exp(s - base) with base the
    /// row's running max `m` now (m: -inf while only blocked keys were seen), `alpha` the
    /// factor exp(m_old - m) that step applied to what came before.
    void add_probabilities(std::size_t g,
                           const float* st,
                           std::size_t j0,
                           std::size_t kb,
                           const float* m,
                           const float* alpha);

    /// Head g's rows, finished: `base` (exp_base of the final max) and `inv` (the factor that
    /// makes exp(s - base) a weight; 0 when the row saw no key, NaN when its weights are)
    /// per row; handed to the destination as rows from `first_row` of [B, H, Lq].
    void finish(std::size_t g, const float* base, const float* inv, std::size_t first_row);

  private:
    /// Whether row r sees key j (the positional rule and the padding).
    bool visible(std::size_t r, std::size_t j) const {
        return begin_[r] <= j && j < end_[r] && (pad_ == nullptr || pad_[j] != 0);
    }
    /// Key j of score s (beating the row's weakest kept) into row r's candidates.
    void offer(std::size_t g, std::size_t r, float s, std::uint32_t j);
    /// Row r's candidates cut to its K strongest; the weakest of them is the new bar.
    void cut(std::size_t g, std::size_t r);
    /// Row r's kept keys as weights exp(s - base) · inv, strongest first, into top_key_/_weight_.
    void top_k_row(std::size_t g, std::size_t r, float base, float inv);

    const PooledDestination* to_ = nullptr;
    const KernelOps* ops_ = nullptr;
    std::vector<std::uint64_t> hits_; // [KB] offer_scores' rows per key
    std::size_t group_ = 0, rows_ = 0, width_ = 0, k_ = 0;
    const std::uint8_t* pad_ = nullptr;
    const std::uint8_t* pad_counted_ = nullptr; // whose prefix sums pad_open_ holds
    std::vector<std::uint32_t> pad_open_;       // [Lk + 1] real keys before j
    std::vector<std::size_t> begin_, end_;      // [QB] each row's keys
    std::vector<float> max_, sum_;              // [G, W, QB] per column, against a block's base
    std::vector<std::size_t> seen_end_;         // [QB] end_, empty for a NaN row (finish())
    std::vector<std::uint32_t> last_block_;     // [G, W] the block whose base a column is at
    std::vector<std::size_t> touched_;          // [G] columns before this one have values
    std::vector<std::size_t> first_col_;        // [G] the first column with values
    std::vector<std::vector<float>> block_max_; // [G][blocks, QB] running max after each block
    std::vector<std::size_t> blocks_;           // [G] blocks seen
    // [G, QB] each row's candidates (score, key): up to 2K, cut back to the K strongest
    // when full (nth_element), so a key that gets in costs no heap update.
    std::vector<std::vector<std::uint64_t>> kept_; // as candidate() packs them
    std::vector<float> weakest_;         // [G, QB] the bar: a key must score above it to get in
    std::vector<std::uint32_t> top_key_; // [QB, K]
    std::vector<float> top_weight_;      // [QB, K]
    std::vector<float> factor_;          // [blocks, QB]
};

} // namespace attn::detail

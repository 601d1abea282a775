// The one rule for "may query i see key j?". Both kernels, `attn explain` and the
// heatmap's hatching ask it here; nothing else spells it out.
//
// Two parts:
//   KeyRule        the positional part (causal rule, sliding window, their alignment):
//                  each query row sees one contiguous range of keys [begin, end).
//   BasicVisibility the whole per-cell test for (batch b, head h, query i, key j): the
//                  key range, the keep-mask, the key-padding mask and a -inf bias.
// The kernels apply the same rule score by score: keys outside the range, or where the
// keep-mask or padding is 0, get a score of exactly -inf (weight 0, even if the score was
// NaN); a -inf bias is simply added to the score, so it blocks through the same -inf.
// Legend: Lq queries, Lk keys, s the diagonal offset (query i's diagonal key is i + s).
#pragma once

#include "attn/attention.hpp"
#include "attn/tensor.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace attn {

/// The keys [begin, end) one query row may see; empty when begin >= end (begin may then
/// exceed end: a window can lie wholly past the causal limit).
struct KeyRange {
    std::size_t begin = 0;
    std::size_t end = 0;
    bool contains(std::size_t j) const { return begin <= j && j < end; }
    bool empty() const { return begin >= end; }
};

/// The positional rule for Lq queries and Lk keys: query i sees key j iff
///   causal top_left:     j <= i
///   causal bottom_right: j <= i + Lk - Lq
///   window {left, right}: i + s - left <= j <= i + s + right (-1: unbounded side)
/// with s = Lk - Lq when the alignment or the causal rule is bottom_right, else 0.
/// Both ends of a row's range never decrease with i, which the block helpers rely on.
class KeyRule {
  public:
    KeyRule(Causal causal, Window window, Align align, std::size_t lq, std::size_t lk)
        : causal_(causal), window_(window),
          align_(causal == Causal::bottom_right ? Align::bottom_right : align), lq_(lq), lk_(lk),
          offset_(align_ == Align::bottom_right
                      ? static_cast<std::int64_t>(lk) - static_cast<std::int64_t>(lq)
                      : 0) {}

    template <class T>
    KeyRule(const BasicAttentionSpec<T>& spec, std::size_t lq, std::size_t lk)
        : KeyRule(spec.causal, spec.window, spec.align, lq, lk) {}

    /// The alignment in force: bottom_right when asked for or forced by the causal rule.
    Align alignment() const { return align_; }
    /// The diagonal offset s of the window and of ALiBi's relative positions.
    std::int64_t diagonal_offset() const { return offset_; }
    /// Query i's diagonal key, i + s (may lie outside [0, Lk)).
    std::int64_t diagonal(std::size_t i) const { return static_cast<std::int64_t>(i) + offset_; }
    bool has_window() const { return window_.bounded(); }

    /// The end of the keys the causal rule alone leaves query i: [0, causal_end(i)). The
    /// kernels compute scores up to here (a window only masks inside it).
    std::size_t causal_end(std::size_t i) const {
        switch (causal_) {
        case Causal::none:
            return lk_;
        case Causal::top_left:
            return std::min(i + 1, lk_);
        case Causal::bottom_right: {
            // j <= i + Lk - Lq  <=>  j < i + 1 + Lk - Lq, computed without unsigned wrap.
            const std::size_t end = i + 1 + lk_;
            return end <= lq_ ? 0 : std::min(end - lq_, lk_);
        }
        }
        return lk_;
    }

    /// The keys query i sees: the causal range cut by the window.
    KeyRange keys(std::size_t i) const {
        KeyRange r{0, causal_end(i)};
        const std::int64_t diag = diagonal(i);
        if (window_.left >= 0) {
            r.begin = clamp(diag - window_.left);
        }
        if (window_.right >= 0) {
            r.end = std::min(r.end, clamp(diag + window_.right + 1));
        }
        return r;
    }

    bool sees(std::size_t i, std::size_t j) const { return keys(i).contains(j); }

    /// The same rule for `lk` keys (a varlen sequence's real keys; see key_rule()).
    KeyRule with_keys(std::size_t lk) const { return KeyRule(causal_, window_, align_, lq_, lk); }

    /// A range holding every key some query of rows [first, last] sees (a block's keys
    /// outside it need not be computed): [keys(first).begin, keys(last).end).
    KeyRange any_keys(std::size_t first, std::size_t last) const {
        return {keys(first).begin, keys(last).end};
    }

    /// The keys every query of rows [first, last] sees (no per-score test needed there):
    /// [keys(last).begin, keys(first).end).
    KeyRange all_keys(std::size_t first, std::size_t last) const {
        return {keys(last).begin, keys(first).end};
    }

  private:
    std::size_t clamp(std::int64_t x) const {
        return static_cast<std::size_t>(
            std::clamp(x, std::int64_t{0}, static_cast<std::int64_t>(lk_)));
    }

    Causal causal_;
    Window window_;
    Align align_;
    std::size_t lq_;
    std::size_t lk_;
    std::int64_t offset_;
};

/// Row b of a [B|1, 1, 1, Lk] key-padding mask, or null.
inline const std::uint8_t* padding_row(const Mask* pad, std::size_t b, std::size_t lk) {
    if (pad == nullptr) {
        return nullptr;
    }
    return pad->data() + (pad->shape()[0] == 1 ? 0 : b) * lk;
}

/// The keys sequence b really has: one past its last real key in the key-padding mask
/// (0 when it has none; Lk without a mask). For a right-padded row this is its count.
inline std::size_t real_keys(const Mask* pad, std::size_t b, std::size_t lk) {
    const std::uint8_t* row = padding_row(pad, b, lk);
    if (row == nullptr) {
        return lk;
    }
    std::size_t n = lk;
    while (n > 0 && row[n - 1] == 0) {
        --n;
    }
    return n;
}

/// The positional rule of batch b: KeyRule(spec, lq, lk), or under spec.varlen (with a
/// key-padding mask) the rule of sequence b alone, with Lk = real_keys(b): its causal
/// diagonal, window edges and ALiBi distances sit where FlashAttention's varlen functions
/// put them (bottom-right: s = real keys − Lq). Keys past the real ones are padding.
template <class T>
KeyRule key_rule(const BasicAttentionSpec<T>& spec, std::size_t b, std::size_t lq, std::size_t lk) {
    const KeyRule rule(spec, lq, lk);
    return spec.varlen && spec.key_padding != nullptr
               ? rule.with_keys(real_keys(spec.key_padding, b, lk))
               : rule;
}

/// Index of a broadcast [B|1, H|1, Lq|1, Lk] operand's row (b, h, i): a size-1 dim is
/// read at 0 for every index (one row serves every query of a [B, 1, 1, Lk] mask).
template <class E>
std::size_t pair_row_offset(const E& t, std::size_t b, std::size_t h, std::size_t i) {
    const auto& s = t.shape();
    const std::size_t bb = s[0] == 1 ? 0 : b;
    const std::size_t hh = s[1] == 1 ? 0 : h;
    const std::size_t ii = s[2] == 1 ? 0 : i;
    return ((bb * s[1] + hh) * s[2] + ii) * s[3];
}

/// Row (b, h, i) of an optional broadcast [B|1, H|1, Lq|1, Lk] operand (bias or keep-mask),
/// or null when the operand is absent.
template <class E>
const E* pair_row(const xt::xtensor<E, 4>* t, std::size_t b, std::size_t h, std::size_t i) {
    return t != nullptr ? t->data() + pair_row_offset(*t, b, h, i) : nullptr;
}

/// Whether the keep-mask row and the padding row (each may be null) let key j through.
inline bool masks_keep(const std::uint8_t* mask_row, const std::uint8_t* pad_row, std::size_t j) {
    return (mask_row == nullptr || mask_row[j] != 0) && (pad_row == nullptr || pad_row[j] != 0);
}

/// The whole per-cell rule: query i of (batch b, head h) sees key j iff the key rule lets
/// it, the keep-mask and the padding are nonzero there and the bias is not -inf. Operands
/// are borrowed and may be null; shapes as in BasicAttentionSpec (attend_check()'s).
/// T: the bias element type (float: Visibility; double for the float64 spec).
template <class T> class BasicVisibility {
  public:
    /// `varlen`: the key rule of batch b uses Lk = real_keys(key_padding, b) (key_rule()).
    BasicVisibility(KeyRule rule,
                    const Mask* keep_mask,
                    const Mask* key_padding,
                    const xt::xtensor<T, 4>* bias,
                    std::size_t lk,
                    bool varlen = false)
        : rule_(rule), keep_mask_(keep_mask), key_padding_(key_padding), bias_(bias), lk_(lk),
          varlen_(varlen && key_padding != nullptr) {}

    BasicVisibility(const BasicAttentionSpec<T>& spec, std::size_t lq, std::size_t lk)
        : BasicVisibility(
              KeyRule(spec, lq, lk), spec.keep_mask, spec.key_padding, spec.bias, lk, spec.varlen) {
    }

    /// The positional rule of batch 0 (of every batch unless varlen).
    const KeyRule& rule() const { return rule_; }
    /// The positional rule of batch b.
    KeyRule rule(std::size_t b) const {
        return varlen_ ? rule_.with_keys(real_keys(key_padding_, b, lk_)) : rule_;
    }

    bool sees(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const;

    /// Whether the pattern may differ between batches or heads (else (0, 0) stands for all).
    bool varies() const;

  private:
    KeyRule rule_;
    const Mask* keep_mask_;
    const Mask* key_padding_;
    const xt::xtensor<T, 4>* bias_;
    std::size_t lk_;
    bool varlen_ = false;
};
extern template class BasicVisibility<float>;
extern template class BasicVisibility<double>;
using Visibility = BasicVisibility<float>;

} // namespace attn

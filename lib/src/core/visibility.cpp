// The per-cell visibility test (attn/visibility.hpp) for the callers that draw or count
// the pattern (`attn explain`, heatmap hatching); the kernels apply the same KeyRule and
// masks_keep() score by score.
#include "attn/visibility.hpp"

#include <limits>

namespace attn {

template <class T>
bool BasicVisibility<T>::sees(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const {
    if (!rule(b).sees(i, j) ||
        !masks_keep(pair_row(keep_mask_, b, h, i), padding_row(key_padding_, b, lk_), j)) {
        return false;
    }
    // The kernels add the bias to the score: -inf there makes the score -inf, weight 0.
    const T* bias_row = pair_row(bias_, b, h, i);
    return bias_row == nullptr || bias_row[j] != -std::numeric_limits<T>::infinity();
}

template <class T> bool BasicVisibility<T>::varies() const {
    const auto big = [](const auto* t) {
        return t != nullptr && (t->shape()[0] > 1 || t->shape()[1] > 1);
    };
    return big(keep_mask_) || big(bias_) || big(key_padding_);
    // (varlen: its per-batch rule needs a per-batch key_padding, which big() counts.)
}

template class BasicVisibility<float>;
template class BasicVisibility<double>;

} // namespace attn

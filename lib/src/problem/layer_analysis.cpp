// A layer's head statistics and rollout step around its kernel call
// (attn/problem/layer_analysis.hpp): which weights the kernel makes and where they go.
#include "attn/problem/layer_analysis.hpp"

#include "attn/error.hpp"

#include <string>

namespace attn::problem {

Rollout::Rollout(RolloutFusion fusion, std::size_t batch, std::size_t length)
    : fusion_(fusion), batch_(batch), length_(length), r_(batch * length * length, 0.0) {}

template <class T> void Rollout::add_layer(const xt::xtensor<T, 4>& weights) {
    const std::size_t heads = weights.shape()[1];
    const std::size_t plane = length_ * length_;
    ATTN_ASSERT(weights.shape()[0] == batch_ && weights.shape()[2] == length_ &&
                weights.shape()[3] == length_);
    for (std::size_t b = 0; b < batch_; ++b) {
        rollout_step(weights.data() + b * heads * plane,
                     heads,
                     length_,
                     fusion_,
                     first_,
                     r_.data() + b * plane,
                     work_);
    }
    first_ = false;
}

template void Rollout::add_layer<float>(const xt::xtensor<float, 4>&);
template void Rollout::add_layer<double>(const xt::xtensor<double, 4>&);

io::Array Rollout::result(bool batched, bool f64) const {
    io::Array a;
    a.shape = {batch_, length_, length_};
    if (!batched) {
        a.shape.erase(a.shape.begin());
    }
    a.dtype = f64 ? "float64" : "float32";
    a.values.assign(r_.begin(), r_.end());
    if (f64) {
        a.values64 = r_;
    }
    return a;
}

bool analyses_layers(const Problem& p) {
    return p.return_head_stats || p.return_rollout;
}

template <class T>
LayerAnalysis<T>::LayerAnalysis(const Problem& p, const TokenIds* ids, Rollout* rollout)
    : p_(p), rollout_(p.return_rollout ? rollout : nullptr), select_(p, p.num_heads, p.lq) {
    if (p.return_head_stats) {
        stats_.emplace(
            p.batch, p.num_heads, p.lq, p.lk, p.key_padding ? &*p.key_padding : nullptr, ids);
    }
}

template <class T> BasicAttentionSpec<T> LayerAnalysis<T>::spec(BasicAttentionSpec<T> user) {
    user_weights_ = user.want_weights;
    user_to_ = user.want_weights ? user.weights_to : nullptr;
    // "select_heads", "query_rows": the kept weights picked from each block as it comes.
    const bool pick = user_weights_ && select_.partial();
    if (rollout_ != nullptr) { // the whole layer's weights: the fused map needs every head
        user.want_weights = true;
        user.weights_to = nullptr;
    } else if ((stats_ && (!user_weights_ || user_to_ != nullptr)) || pick) {
        tee_.size = p_.batch * p_.num_heads * p_.lq * p_.lk;
        if (pick && user_to_ == nullptr) {
            kept_ = xt::xtensor<T, 4>::from_shape(
                {p_.batch, select_.heads.size(), select_.rows(), p_.lk});
        }
        tee_.store = [this](std::size_t first, const T* values, std::size_t count) {
            if (stats_) {
                stats_->add(first, values, count);
            }
            pass_on(first, values, count);
        };
        user.want_weights = true;
        user.weights_to = &tee_;
    }
    return user;
}

template <class T>
void LayerAnalysis<T>::pass_on(std::size_t first, const T* values, std::size_t count) {
    if (!select_.partial()) {
        if (user_to_ != nullptr) {
            user_to_->store(first, values, count);
        }
        return;
    }
    select_.forward(first, values, count, p_.lk, [this](std::size_t at, const T* v, std::size_t n) {
        if (user_to_ != nullptr) {
            user_to_->store(at, v, n);
        } else if (kept_) {
            std::copy(v, v + n, kept_->data() + at);
        }
    });
}

template <class T> void LayerAnalysis<T>::after(std::optional<xt::xtensor<T, 4>>& weights) {
    if (!weights) {
        if (kept_) { // the selected weights, picked through the tee
            weights = std::move(kept_);
            kept_.reset();
        }
        return; // the statistics had every block through the tee
    }
    if (stats_ && tee_.size == 0) {
        stats_->add(std::size_t{0}, weights->data(), weights->size());
    }
    if (rollout_ != nullptr) {
        rollout_->add_layer(*weights);
        if (user_to_ != nullptr) {
            pass_on(0, weights->data(), weights->size());
        }
        if (!user_weights_ || user_to_ != nullptr) {
            weights.reset();
        } else if (select_.partial()) {
            weights = select_.slice(*weights);
        }
    }
}

template <class T> void LayerAnalysis<T>::into(Solution& s) const {
    if (stats_) {
        HeadStatTotals totals = stats_->totals();
        if (select_.heads.size() != select_.all_heads) {
            totals = select_.slice(totals); // "select_heads"; the rows stay all of them
        }
        s.head_stat_totals = {std::move(totals)};
        s.head_stats =
            head_stat_means(s.head_stat_totals.front(), p_.batched, p_.precision == Precision::f64);
    }
}

template class LayerAnalysis<float>;
template class LayerAnalysis<double>;

} // namespace attn::problem

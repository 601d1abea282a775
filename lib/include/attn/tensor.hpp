// The value types of the numeric core: rank-4 tensors (float32 by default, float64 for
// the f64 precision) and uint8 keep-masks. Naming rule: X = BasicX<float>; float64 is
// BasicX<double>.
// Lower-rank inputs are lifted to rank 4 once, at the I/O edge; the core never sees
// files, JSON or the command line.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>
#include <xtensor/xtensor.hpp>

namespace attn {

/// Row-major, always rank 4: [batch, heads, length, features]. T is the precision:
/// float32 (Tensor) or float64 (BasicTensor<double>, for `precision: f64`).
template <class T> using BasicTensor = xt::xtensor<T, 4>;
using Tensor = BasicTensor<float>;
/// Row-major keep-mask, rank 4: 1 = may attend, 0 = blocked.
using Mask = xt::xtensor<std::uint8_t, 4>;
/// Row-major matrix, e.g. an nn.Linear weight [out, in].
template <class T> using BasicMatrix = xt::xtensor<T, 2>;
using Matrix = BasicMatrix<float>;
/// Row-major vector, e.g. an nn.Linear bias [out].
template <class T> using BasicVector = xt::xtensor<T, 1>;
using Vector = BasicVector<float>;
/// Row-major rank-3 tensor: [batch, length, features].
template <class T> using BasicTensor3 = xt::xtensor<T, 3>;
using Tensor3 = BasicTensor3<float>;

using Shape = std::array<std::size_t, 4>;

/// A read-only rank-4 view: the values and shape of a BasicTensor<T>, or of memory someone
/// else owns, C order. What the attention kernels read (attend_into): a tensor converts to
/// it implicitly, so they read caller-owned inputs in place.
template <class T> class BasicTensorView {
  public:
    using value_type = T;
    BasicTensorView() = default;
    BasicTensorView(const BasicTensor<T>& t) // NOLINT(google-explicit-constructor): a view
        : data_(t.data()), shape_(t.shape()) {}
    BasicTensorView(const T* data, const Shape& shape) : data_(data), shape_(shape) {}
    const T* data() const { return data_; }
    const Shape& shape() const { return shape_; }
    std::size_t size() const { return shape_[0] * shape_[1] * shape_[2] * shape_[3]; }
    const T* begin() const { return data_; }
    const T* end() const { return data_ + size(); }

  private:
    const T* data_ = nullptr;
    Shape shape_{};
};
using TensorView = BasicTensorView<float>;

/// A rank-4 input that owns its values (a BasicTensor<T> moved in) or reads memory its
/// caller owns in place (borrowed: a numpy array, a mapped file), keeping that memory's
/// owner alive as long as any copy of it. Read-only; a view of either for the kernels.
///
/// Example:
///   auto held = std::shared_ptr<const float>(owner, ptr); // aliasing: owner kept alive
///   InputTensor q = InputTensor::borrow(std::move(held), {1, 8, 4096, 64});
///   attend(q.view(), k.view(), v.view(), spec);
template <class T> class BasicInputTensor {
  public:
    using value_type = T;
    BasicInputTensor() = default;
    BasicInputTensor(BasicTensor<T> t) // NOLINT(google-explicit-constructor): owns it
        : owned_(std::move(t)), view_(owned_) {}
    /// Caller-owned values in C order: `data` points at them and owns (or aliases the
    /// owner of) their memory, which must hold product(shape) values and not change.
    static BasicInputTensor borrow(std::shared_ptr<const T> data, const Shape& shape) {
        BasicInputTensor t;
        t.view_ = BasicTensorView<T>(data.get(), shape);
        t.borrowed_ = std::move(data);
        return t;
    }
    BasicInputTensor(const BasicInputTensor& o) { *this = o; }
    BasicInputTensor(BasicInputTensor&& o) noexcept { *this = std::move(o); }
    BasicInputTensor& operator=(const BasicInputTensor& o) {
        if (this != &o) {
            owned_ = o.owned_;
            borrowed_ = o.borrowed_;
            view_ = o.borrowed_ ? o.view_ : BasicTensorView<T>(owned_);
        }
        return *this;
    }
    BasicInputTensor& operator=(BasicInputTensor&& o) noexcept {
        if (this != &o) {
            owned_ = std::move(o.owned_);
            borrowed_ = std::move(o.borrowed_);
            view_ = borrowed_ ? o.view_ : BasicTensorView<T>(owned_);
            o.owned_ = BasicTensor<T>();
            o.borrowed_.reset();
            o.view_ = BasicTensorView<T>(o.owned_);
        }
        return *this;
    }
    ~BasicInputTensor() = default;

    BasicTensorView<T> view() const { return view_; }
    operator BasicTensorView<T>() const { return view_; } // NOLINT(google-explicit-constructor)
    const T* data() const { return view_.data(); }
    const Shape& shape() const { return view_.shape(); }
    std::size_t size() const { return view_.size(); }
    const T* begin() const { return view_.begin(); }
    const T* end() const { return view_.end(); }
    /// Whether the values are the caller's memory, read in place.
    bool borrowed() const { return borrowed_ != nullptr; }
    /// A copy that owns its values (to modify: RoPE rotates a copy).
    BasicTensor<T> copy() const {
        auto t = BasicTensor<T>::from_shape(shape());
        std::copy(begin(), end(), t.begin());
        return t;
    }

  private:
    BasicTensor<T> owned_;
    std::shared_ptr<const T> borrowed_;
    BasicTensorView<T> view_{owned_};
};
using InputTensor = BasicInputTensor<float>;

/// The shape of any xtensor container as a vector (for messages).
template <class E> std::vector<std::size_t> shape_of(const E& e) {
    return std::vector<std::size_t>(e.shape().begin(), e.shape().end());
}

} // namespace attn

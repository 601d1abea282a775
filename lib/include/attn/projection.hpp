// Linear projections and head split/merge: the layer above attend(). Layouts follow
// PyTorch nn.Linear: weight [out, in], y = x·wᵀ + b.
#pragma once

#include "attn/stored_weight.hpp"
#include "attn/tensor.hpp"

#include <optional>

namespace attn {

/// The shape rule of linear(): x's `in` features through w [out, in] and b [out] give `out`
/// features (w absent: `in`; a bias alone must be [in]). `w_shape`/`b_size` are null for an
/// absent weight/bias. Throws InputError naming `w_name` ("w_q: expected shape [*, 8], got
/// [8, 6]", "bias of w_q: ...") or `b_name`.
std::size_t linear_features(std::size_t in,
                            const std::vector<std::size_t>* w_shape,
                            const std::size_t* b_size,
                            const char* w_name,
                            const char* b_name);

/// The shape rule of split_heads(): `features` split into `num_heads` heads give this head
/// dim. Throws InputError("WHAT: feature size 10 is not divisible by 3 heads").
std::size_t head_dim(std::size_t features, std::size_t num_heads, const char* what);

/// y = x·wᵀ + b.  x: [B, L, in]   w: [out, in]   b: [out] or absent  ->  [B, L, out].
/// `threads`: threads for the GEMM (0: every hardware thread), sharing fixed-size slabs of
/// rows, so the result is bit-identical for any count.
/// Throws InputError (naming `what`) when w's in-dimension or b's length disagree.
Tensor3 linear(const Tensor3& x,
               const Matrix& w,
               const Vector* b,
               const char* what = "weight",
               unsigned threads = 1);

/// y = x·Wᵀ + b with W as its model file stores it (w.multiply on SIMD target `simd`):
/// linear()'s shapes, threads and errors.
Tensor3 linear(const Tensor3& x,
               const StoredWeight& w,
               const Vector* b,
               const char* what = "weight",
               unsigned threads = 1,
               Simd simd = Simd::best);

/// linear() through `stored` when it is set, else through `w`: the one choice between a
/// weight as stored and a float weight. A float64 run never holds a stored weight.
template <class T>
BasicTensor3<T> linear_of(const BasicTensor3<T>& x,
                          const BasicMatrix<T>& w,
                          const std::optional<StoredWeight>& stored,
                          const BasicVector<T>* b,
                          const char* what,
                          unsigned threads,
                          Simd simd);

/// [B, L, H·Dh] -> [B, H, L, Dh]. Throws InputError if the feature size is not
/// divisible by num_heads. `threads` copy fixed blocks of rows (the result is the same).
Tensor split_heads(const Tensor3& x,
                   std::size_t num_heads,
                   const char* what = "input",
                   unsigned threads = 1);

/// [B, H, L, Dh] -> [B, L, H·Dh], on `threads` as split_heads.
Tensor3 merge_heads(const Tensor& y, unsigned threads = 1);

/// The float64 overloads (`precision: f64`; dgemm), same shapes and errors.
BasicTensor3<double> linear(const BasicTensor3<double>& x,
                            const BasicMatrix<double>& w,
                            const BasicVector<double>* b,
                            const char* what = "weight",
                            unsigned threads = 1);
BasicTensor<double> split_heads(const BasicTensor3<double>& x,
                                std::size_t num_heads,
                                const char* what = "input",
                                unsigned threads = 1);
BasicTensor3<double> merge_heads(const BasicTensor<double>& y, unsigned threads = 1);

} // namespace attn

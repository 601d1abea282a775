// nn.Linear projections (one GEMM each) and the head split/merge reshapes.
#include "attn/projection.hpp"

#include "attn/error.hpp"

#include "blas.hpp"

#include <string>

namespace attn {

Tensor3 linear(const Tensor3& x, const Matrix& w, const Vector* b, const char* what) {
    const std::size_t n_b = x.shape()[0];
    const std::size_t len = x.shape()[1];
    const std::size_t in = x.shape()[2];
    const std::size_t out = w.shape()[0];
    if (w.shape()[1] != in) {
        throw InputError::shape(what, {kAnyDim, in}, shape_of(w));
    }
    if (b != nullptr && b->shape()[0] != out) {
        throw InputError("bias of " + std::string(what) + ": expected shape " +
                         shape_string({out}) + ", got " + shape_string(shape_of(*b)));
    }
    Tensor3 y = Tensor3::from_shape({n_b, len, out});
    detail::blas_single_threaded();
    detail::sgemm(n_b * len, out, in, 1.0f, x.data(), in, w.data(), in, true, 0.0f, y.data(), out);
    if (b != nullptr) {
        float* row = y.data();
        for (std::size_t r = 0; r < n_b * len; ++r, row += out) {
            for (std::size_t j = 0; j < out; ++j) {
                row[j] += (*b)(j);
            }
        }
    }
    return y;
}

Tensor split_heads(const Tensor3& x, std::size_t num_heads, const char* what) {
    const std::size_t n_b = x.shape()[0];
    const std::size_t len = x.shape()[1];
    const std::size_t e = x.shape()[2];
    if (num_heads == 0 || e % num_heads != 0) {
        throw InputError(std::string(what) + ": feature size " + std::to_string(e) +
                         " is not divisible by " + std::to_string(num_heads) + " heads");
    }
    const std::size_t dh = e / num_heads;
    Tensor y = Tensor::from_shape({n_b, num_heads, len, dh});
    for (std::size_t b = 0; b < n_b; ++b) {
        for (std::size_t l = 0; l < len; ++l) {
            const float* src = x.data() + (b * len + l) * e;
            for (std::size_t h = 0; h < num_heads; ++h) {
                float* dst = y.data() + ((b * num_heads + h) * len + l) * dh;
                std::copy(src + h * dh, src + (h + 1) * dh, dst);
            }
        }
    }
    return y;
}

Tensor3 merge_heads(const Tensor& y) {
    const std::size_t n_b = y.shape()[0];
    const std::size_t n_h = y.shape()[1];
    const std::size_t len = y.shape()[2];
    const std::size_t dh = y.shape()[3];
    Tensor3 x = Tensor3::from_shape({n_b, len, n_h * dh});
    for (std::size_t b = 0; b < n_b; ++b) {
        for (std::size_t h = 0; h < n_h; ++h) {
            for (std::size_t l = 0; l < len; ++l) {
                const float* src = y.data() + ((b * n_h + h) * len + l) * dh;
                std::copy(src, src + dh, x.data() + (b * len + l) * n_h * dh + h * dh);
            }
        }
    }
    return x;
}

}  // namespace attn

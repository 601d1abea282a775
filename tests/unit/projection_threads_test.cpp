// The projections' and the MLP's GEMMs on the run's threads (linear(), mlp_forward()): one
// single-threaded GEMM per fixed-size slab of rows gives every row, and the same bits for
// any thread count; the head split and merge move every value to its place on any count.
#include "attn/block.hpp"
#include "attn/projection.hpp"

#include <gtest/gtest.h>

namespace {

template <class T> xt::xtensor<T, 3> filled3(std::size_t b, std::size_t l, std::size_t e) {
    xt::xtensor<T, 3> x = xt::xtensor<T, 3>::from_shape({b, l, e});
    for (std::size_t i = 0; i < x.size(); ++i) {
        x.data()[i] = static_cast<T>(static_cast<double>((i * 7919) % 1009) / 1009.0 - 0.5);
    }
    return x;
}

template <class T> xt::xtensor<T, 2> filled2(std::size_t r, std::size_t c) {
    xt::xtensor<T, 2> w = xt::xtensor<T, 2>::from_shape({r, c});
    for (std::size_t i = 0; i < w.size(); ++i) {
        w.data()[i] = static_cast<T>(static_cast<double>((i * 104729) % 997) / 997.0 - 0.5);
    }
    return w;
}

TEST(ProjectionThreads, EveryRowWhateverTheThreads) {
    // 300 rows: slabs of 128 and a short last one.
    const attn::Tensor3 x = filled3<float>(1, 300, 192);
    const attn::Matrix w = filled2<float>(320, 192);
    const attn::Tensor3 one = attn::linear(x, w, nullptr, "w", 1);
    for (std::size_t r = 0; r < 300; ++r) { // against dot products in double
        for (std::size_t j = 0; j < 320; ++j) {
            double dot = 0.0;
            for (std::size_t k = 0; k < 192; ++k) {
                dot += static_cast<double>(x(0, r, k)) * static_cast<double>(w(j, k));
            }
            ASSERT_NEAR(one(0, r, j), dot, 1e-4) << r << ", " << j;
        }
    }
    for (const unsigned threads : {2U, 3U, 0U}) {
        const attn::Tensor3 many = attn::linear(x, w, nullptr, "w", threads);
        ASSERT_EQ(many.shape(), one.shape());
        for (std::size_t i = 0; i < one.size(); ++i) {
            ASSERT_EQ(many.data()[i], one.data()[i]) << i << ", " << threads << " threads";
        }
    }
}

TEST(ProjectionThreads, MlpWhateverTheThreads) {
    const attn::BasicTensor3<double> x = filled3<double>(2, 150, 64);
    attn::BasicMlp<double> mlp;
    mlp.up = filled2<double>(256, 64);
    mlp.gate = filled2<double>(256, 64);
    mlp.down = filled2<double>(64, 256);
    const auto one = attn::mlp_forward(x, mlp, attn::Activation::silu, 1);
    const auto two = attn::mlp_forward(x, mlp, attn::Activation::silu, 2);
    ASSERT_EQ(one.shape(), two.shape());
    for (std::size_t i = 0; i < one.size(); ++i) {
        ASSERT_EQ(one.data()[i], two.data()[i]) << i;
    }
}

TEST(ProjectionThreads, HeadSplitAndMergeWhateverTheThreads) {
    // 2 batches x 700 rows of 6 heads x 12: several row blocks of the split and a short last.
    const attn::Tensor3 x = filled3<float>(2, 700, 72);
    for (const unsigned threads : {1U, 2U, 3U}) {
        const attn::Tensor heads = attn::split_heads(x, 6, "x", threads);
        ASSERT_EQ(heads.shape(), (attn::Shape{2, 6, 700, 12}));
        for (std::size_t b = 0; b < 2; ++b) { // x[b, l, h * 12 + d] == heads[b, h, l, d]
            for (std::size_t l = 0; l < 700; ++l) {
                for (std::size_t f = 0; f < 72; ++f) {
                    ASSERT_EQ(heads(b, f / 12, l, f % 12), x(b, l, f))
                        << b << ", " << l << ", " << f << ", " << threads << " threads";
                }
            }
        }
        const attn::Tensor3 back = attn::merge_heads(heads, threads);
        ASSERT_EQ(back.shape(), x.shape());
        for (std::size_t i = 0; i < x.size(); ++i) {
            ASSERT_EQ(back.data()[i], x.data()[i]) << i << ", " << threads << " threads";
        }
    }
}

} // namespace

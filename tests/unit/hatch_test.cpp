// plot::hatched_cells: a keep-mask file's blocked cells (the keep convention: 0 blocks,
// nonzero and NaN keep, as the problem's "mask" field) and the exact zeros, per panel.
#include "attn/plot/hatch.hpp"
#include "unit/test_util.hpp"

#include <gtest/gtest.h>
#include <limits>
#include <vector>

namespace attn::plot {
namespace {

using namespace attn::testing;

io::Array array(std::vector<std::size_t> shape, std::vector<float> values) {
    io::Array a;
    a.shape = std::move(shape);
    a.values = std::move(values);
    return a;
}

TEST(Hatch, AKeepMaskPlaneForEveryPanel) {
    // Two heads of [2, 2].
    const io::Array w = array({2, 2, 2}, {0.5f, 0.5f, 1.0f, 0.0f, 0.5f, 0.5f, 0.0f, 1.0f});
    const Dims d = dims_of(w.shape, problem::axes_of_rank(w.shape.size()), "w");
    const auto refs = pick_panels(d, kAll, kAll, "w");
    constexpr float nan = std::numeric_limits<float>::quiet_NaN();
    const io::Array plane = array({2, 2}, {1.0f, 0.0f, nan, 2.0f});
    const auto cells = hatched_cells(w.shape, w.values, d, refs, &plane, false, "--mask m");
    ASSERT_EQ(cells.size(), 2U);
    EXPECT_EQ(cells[0], (std::vector<std::uint8_t>{0, 1, 0, 0})); // NaN keeps, as decode_mask
    EXPECT_EQ(cells[1], cells[0]);
    // With the zeros too: head 0's [1][1], head 1's [1][0].
    const auto both = hatched_cells(w.shape, w.values, d, refs, &plane, true, "--mask m");
    EXPECT_EQ(both[0], (std::vector<std::uint8_t>{0, 1, 0, 1}));
    EXPECT_EQ(both[1], (std::vector<std::uint8_t>{0, 1, 1, 0}));
}

TEST(Hatch, AMaskOfTheWeightsShapeAndErrors) {
    const io::Array w = array({2, 1, 2}, {0.5f, 0.5f, 1.0f, 0.0f});
    const Dims d = dims_of(w.shape, problem::axes_of_rank(w.shape.size()), "w");
    const auto refs = pick_panels(d, kAll, kAll, "w");
    const io::Array full = array({2, 1, 2}, {1.0f, 0.0f, 0.0f, 1.0f});
    const auto cells = hatched_cells(w.shape, w.values, d, refs, &full, false, "--mask m");
    EXPECT_EQ(cells[0], (std::vector<std::uint8_t>{0, 1}));
    EXPECT_EQ(cells[1], (std::vector<std::uint8_t>{1, 0}));
    EXPECT_TRUE(hatched_cells(w.shape, w.values, d, refs, nullptr, false, "--mask m").empty());
    const io::Array wrong = array({3}, {1.0f, 1.0f, 1.0f});
    EXPECT_INPUT_ERROR(hatched_cells(w.shape, w.values, d, refs, &wrong, false, "--mask m"),
                       "^--mask m: ");
}

} // namespace
} // namespace attn::plot

// "select_heads" and "query_rows" (attn/problem/selection.hpp): the one "0,3,5-7" parser
// with heads as its items, A:B resolved as Python's slice(A, B).indices(L) (expected values
// written out by hand from Python's rule), and Selection's kept elements of a
// [B, H, Lq, X] tensor handed over in blocks of whole rows, against plain index arithmetic.
#include "attn/error.hpp"
#include "attn/model/checkpoint_layers.hpp"
#include "attn/problem/selection.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <vector>

namespace attn::problem {
namespace {

using nlohmann::json;

TEST(SelectHeads, OneParserWithHeadsAsItsItems) {
    EXPECT_EQ(model::parse_index_list("0,3,8-11", "select_heads", "head"),
              (std::vector<std::size_t>{0, 3, 8, 9, 10, 11}));
    EXPECT_EQ(index_selection(json("3, 1"), "select_heads", "head"),
              (std::vector<std::size_t>{3, 1}));
    EXPECT_EQ(index_selection(json::array({2, 0}), "select_heads", "head"),
              (std::vector<std::size_t>{2, 0}));
    EXPECT_INPUT_ERROR(
        model::parse_index_list("", "select_heads", "head"),
        attn::testing::exactly("select_heads: a head number is missing in '' (expected head "
                               "numbers and ranges, e.g. 0,3,5-7)"));
    EXPECT_INPUT_ERROR(model::parse_index_list("1,0-2", "select_heads", "head"),
                       "^select_heads: head 1 is given twice in");
    EXPECT_INPUT_ERROR(index_selection(json::array(), "select_heads", "head"),
                       "^select_heads: expected a non-empty list of head numbers");
    EXPECT_INPUT_ERROR(index_selection(json::array({1, 1}), "select_heads", "head"),
                       attn::testing::exactly("select_heads: head 1 is given twice"));
    // The layers' messages are the same rule's.
    EXPECT_INPUT_ERROR(model::parse_layer_list("1,1", "layers"), "^layers: layer 1 is given twice");
}

TEST(QueryRows, PythonSliceRule) {
    // slice(A, B).indices(9) in Python: (A', B') as written beside each case.
    const struct {
        json rows;
        std::size_t begin, end;
    } cases[] = {
        {"2:7", 2, 7},
        {"-3:", 6, 9},
        {":4", 0, 4},
        {":", 0, 9},
        {"-100:100", 0, 9},
        {"8:", 8, 9},
        {"1:-1", 1, 8},
        {" -9 : -8 ", 0, 1},
        {json::array({2, 7}), 2, 7},
        {json::array({nullptr, -2}), 0, 7},
        {json::array({-1, nullptr}), 8, 9},
    };
    for (const auto& c : cases) {
        const auto got = query_rows_of(c.rows, 9);
        EXPECT_EQ(got[0], c.begin) << c.rows.dump();
        EXPECT_EQ(got[1], c.end) << c.rows.dump();
    }
    for (const json& bad : {json("5:3"), json("9:"), json("-1:-1"), json(":0"), json("-20:-10")}) {
        EXPECT_INPUT_ERROR(query_rows_of(bad, 9), "^query_rows: .* keeps no row of 9 query rows")
            << bad.dump();
    }
    for (const json& bad : {json("1:2:3"),
                            json("a:2"),
                            json(""),
                            json("3"),
                            json::array({1}),
                            json::array({1.5, 2}),
                            json(4),
                            json("1 2:3")}) {
        EXPECT_INPUT_ERROR(query_rows_of(bad, 9), "^query_rows: expected \\[A, B\\] or \"A:B\"")
            << bad.dump();
    }
}

TEST(Selection, KeptRowsOfBlocksAsPlainIndexArithmetic) {
    Problem p;
    p.select_heads = {1, 3};
    p.query_rows = std::array<std::size_t, 2>{2, 5};
    const std::size_t b = 2, h = 4, lq = 7, x = 3;
    const Selection s(p, h, lq);
    ASSERT_TRUE(s.partial());
    std::vector<float> all(b * h * lq * x);
    for (std::size_t i = 0; i < all.size(); ++i) {
        all[i] = static_cast<float>(i);
    }
    // Handed over in blocks of 3 rows (crossing heads), as a kernel's destination gets them.
    std::vector<float> got(s.kept_size(b, x), -1.0f);
    for (std::size_t row = 0; row < b * h * lq; row += 3) {
        const std::size_t n = std::min<std::size_t>(3, b * h * lq - row);
        s.forward(row * x,
                  all.data() + row * x,
                  n * x,
                  x,
                  [&](std::size_t at, const float* v, std::size_t count) {
                      ASSERT_LE(at + count, got.size());
                      std::copy(v, v + count, got.begin() + static_cast<std::ptrdiff_t>(at));
                  });
    }
    std::vector<float> want;
    for (std::size_t bi = 0; bi < b; ++bi) {
        for (const std::size_t hi : {std::size_t{1}, std::size_t{3}}) {
            for (std::size_t i = 2; i < 5; ++i) {
                for (std::size_t k = 0; k < x; ++k) {
                    want.push_back(all[((bi * h + hi) * lq + i) * x + k]);
                }
            }
        }
    }
    EXPECT_EQ(got, want);
    xt::xtensor<float, 4> t = xt::xtensor<float, 4>::from_shape({b, h, lq, x});
    std::copy(all.begin(), all.end(), t.begin());
    const xt::xtensor<float, 4> kept = s.slice(t);
    EXPECT_EQ(std::vector<float>(kept.begin(), kept.end()), want);
    EXPECT_EQ(kept.shape()[1], 2U);
    EXPECT_EQ(kept.shape()[2], 3U);
}

} // namespace
} // namespace attn::problem

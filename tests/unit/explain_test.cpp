// problem::explain: the plan `attn explain` prints, as rows of data (the CLI's text is
// explain_cli cases'); the default scale in the problem's precision, as the kernels
// compute it; the fully-masked-row count against a count by hand.
#include "attn/problem/explain.hpp"
#include "attn/problem/solve.hpp"
#include "unit/test_util.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

namespace attn::problem {
namespace {

using namespace attn::testing;

/// The text of the row labelled `label` (the first), or "" when there is none.
std::string row(const Explanation& e, const std::string& label) {
    for (const ExplainRow& r : e.rows) {
        if (r.label == label) {
            return r.text;
        }
    }
    return "";
}

nlohmann::json three_dims(const char* precision) {
    // Lq = Lk = 2, D = 3: 1/sqrt(3) differs between float and double.
    return {{"input", {{1.0, 0.0, 2.0}, {0.0, 1.0, 0.0}}}, {"precision", precision}};
}

TEST(Explain, DefaultScaleInTheProblemsPrecision) {
    const Problem f32 = decode_problem(three_dims("f32"), ".");
    EXPECT_EQ(row(explain(three_dims("f32"), "p", f32), "scale"),
              "0.57735026 = 1/sqrt(3) (default)");
    const Problem f64 = decode_problem(three_dims("f64"), ".");
    // 1/sqrt(3) in double, printed as the shortest text that reads back as it.
    EXPECT_EQ(1.0 / std::sqrt(3.0), 0.5773502691896258);
    EXPECT_EQ(row(explain(three_dims("f64"), "p", f64), "scale"),
              "0.5773502691896258 = 1/sqrt(3) (default)");
}

TEST(Explain, RowsPrintInTheLabelColumn) {
    Explanation e;
    e.row("scale", "0.5");
    e.more("next");
    e.row("a-very-long-label", "x");
    EXPECT_EQ(e.str(), "scale        0.5\n             next\na-very-long-label x\n");
}

TEST(Explain, FullyMaskedRowsCountedOverBatchesAndHeads) {
    // Two heads, causal bottom-right with Lq = 3 > Lk = 2: query 0 sees no key, in each
    // batch and head: 2 batches x 2 heads x 1 row.
    nlohmann::json doc = {
        {"query", {{{1.0, 0.0}, {0.0, 1.0}, {1.0, 1.0}}, {{1.0, 0.0}, {0.0, 1.0}, {1.0, 1.0}}}},
        {"key", {{{1.0, 0.0}, {0.0, 1.0}}, {{1.0, 0.0}, {0.0, 1.0}}}},
        {"value", {{{1.0, 0.0}, {0.0, 1.0}}, {{1.0, 0.0}, {0.0, 1.0}}}},
        {"num_heads", 2},
        {"causal", "bottom-right"}};
    const Problem p = decode_problem(doc, ".");
    const Visibility vis(attention_spec(p), p.lq, p.lk);
    EXPECT_EQ(fully_masked_rows(p, vis), std::optional<std::size_t>(4));
    EXPECT_EQ(fully_masked_rows(p, vis, 10.0), std::nullopt); // 2·2·3·2 = 24 cells > 10
    const Explanation e = explain(doc, "p", p);
    bool warned = false;
    for (const ExplainRow& r : e.rows) {
        warned = warned ||
                 r.text.starts_with(
                     "4 query row(s) (over all batches and heads) can see no key (fully masked)");
    }
    EXPECT_TRUE(warned);
}

} // namespace
} // namespace attn::problem

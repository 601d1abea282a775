// Inputs read in place: an io::Array that borrows its caller's float32 memory
// (io::Array::borrowed) becomes a rank-4 query, key or value without a copy
// (InputTensor::borrow), keeps its owner alive as long as the problem holds it, and solves
// to the same numbers as the same values owned. Arrays the library cannot read in place
// (masks, weights, rank-2/3 sources) are copied and equal too.
#include "attn/attention.hpp"
#include "attn/io/array.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "unit/test_util.hpp"

#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

namespace attn {
namespace {

using nlohmann::json;

/// Values 0.01·i - 0.3 (i < n): distinct, mixed signs.
std::vector<float> ramp(std::size_t n, float offset) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = 0.01f * static_cast<float>(i) - offset;
    }
    return v;
}

/// An array borrowing `values` (a shared vector: its use count shows who holds it).
io::Array borrowed(const std::shared_ptr<std::vector<float>>& values,
                   std::vector<std::size_t> shape) {
    io::Array a;
    a.shape = std::move(shape);
    a.dtype = "float32";
    a.borrowed = std::shared_ptr<const float>(values, values->data());
    return a;
}

/// The same values owned.
io::Array owned(const std::vector<float>& values, std::vector<std::size_t> shape) {
    io::Array a;
    a.shape = std::move(shape);
    a.dtype = "float32";
    a.values = values;
    return a;
}

TEST(BorrowedInput, Rank4QueryKeyValueAreReadInPlaceAndKeepTheirOwnerAlive) {
    const std::vector<std::size_t> shape = {1, 2, 5, 4};
    const auto q = std::make_shared<std::vector<float>>(ramp(40, 0.3f));
    const auto k = std::make_shared<std::vector<float>>(ramp(40, 0.1f));
    const auto v = std::make_shared<std::vector<float>>(ramp(40, -0.2f));
    const json doc = {{"causal", true}};
    std::weak_ptr<std::vector<float>> q_alive = q;
    problem::Solution from_borrowed;
    {
        problem::Problem p = problem::decode_problem(doc,
                                                     ".",
                                                     {{"query", borrowed(q, shape)},
                                                      {"key", borrowed(k, shape)},
                                                      {"value", borrowed(v, shape)}});
        EXPECT_TRUE(p.q4.borrowed());
        EXPECT_EQ(p.q4.data(), q->data()); // the caller's memory itself: no copy
        EXPECT_EQ(p.k4.data(), k->data());
        EXPECT_EQ(p.v4.data(), v->data());
        EXPECT_EQ(q.use_count(), 2); // the caller and the problem
        from_borrowed = problem::solve(p, {});
        // The problem's copies keep the owner alive; none of them copies the values.
        const problem::Problem copy = p;
        EXPECT_EQ(copy.q4.data(), q->data());
        EXPECT_EQ(q.use_count(), 3);
    }
    EXPECT_EQ(q.use_count(), 1); // the problem let go
    EXPECT_FALSE(q_alive.expired());
    const problem::Problem p_owned = problem::decode_problem(
        doc,
        ".",
        {{"query", owned(*q, shape)}, {"key", owned(*k, shape)}, {"value", owned(*v, shape)}});
    EXPECT_FALSE(p_owned.q4.borrowed());
    const problem::Solution want = problem::solve(p_owned, {});
    EXPECT_EQ(from_borrowed.output.values, want.output.values);
    ASSERT_TRUE(from_borrowed.weights && want.weights);
    EXPECT_EQ(from_borrowed.weights->values, want.weights->values);
}

TEST(BorrowedInput, ArraysNotReadInPlaceAreCopiedAndEqual) {
    // A rank-2 self-attention input with params and a bias whose key dim broadcasts (it is
    // grown in the array's own values), all borrowed.
    const auto x = std::make_shared<std::vector<float>>(ramp(12, 0.2f));
    const auto w = std::make_shared<std::vector<float>>(ramp(16, 0.05f));
    const auto bias = std::make_shared<std::vector<float>>(ramp(3, 0.0f));
    const json doc = {{"params", json::object()}, {"num_heads", 2}};
    problem::ArrayValues b, o;
    b["input"] = borrowed(x, {3, 4});
    o["input"] = owned(*x, {3, 4});
    b["bias"] = borrowed(bias, {3, 1});
    o["bias"] = owned(*bias, {3, 1});
    for (const char* name : {"params.w_q", "params.w_k", "params.w_v"}) {
        b[name] = borrowed(w, {4, 4});
        o[name] = owned(*w, {4, 4});
    }
    const problem::Problem pb = problem::decode_problem(doc, ".", std::move(b));
    const problem::Problem po = problem::decode_problem(doc, ".", std::move(o));
    EXPECT_NE(pb.query_src.data(), x->data());
    EXPECT_EQ(x.use_count(), 1); // nothing kept: the values were copied
    EXPECT_EQ(w.use_count(), 1);
    EXPECT_EQ(bias.use_count(), 1);
    const problem::Solution sb = problem::solve(pb, {});
    const problem::Solution so = problem::solve(po, {});
    EXPECT_EQ(sb.output.values, so.output.values);
}

TEST(BorrowedInput, F64ProblemsWidenBorrowedValuesExactly) {
    const std::vector<std::size_t> shape = {1, 1, 3, 2};
    const auto x = std::make_shared<std::vector<float>>(
        std::vector<float>{0.5f, -1.25f, 2.0f, 0.75f, -3.5f, 1.0f});
    const json doc = {{"precision", "f64"}};
    const problem::Problem pb = problem::decode_problem(doc,
                                                        ".",
                                                        {{"query", borrowed(x, shape)},
                                                         {"key", borrowed(x, shape)},
                                                         {"value", borrowed(x, shape)}});
    const problem::Problem po = problem::decode_problem(
        doc,
        ".",
        {{"query", owned(*x, shape)}, {"key", owned(*x, shape)}, {"value", owned(*x, shape)}});
    const problem::Solution sb = problem::solve(pb, {});
    const problem::Solution so = problem::solve(po, {});
    ASSERT_FALSE(so.output.values64.empty());
    EXPECT_EQ(sb.output.values64, so.output.values64);
}

TEST(BorrowedInput, InputTensorCopiesAndMovesKeepTheirView) {
    Tensor t = Tensor::from_shape({1, 1, 2, 2});
    std::iota(t.begin(), t.end(), 1.0f);
    InputTensor owned_t(t);
    InputTensor copy = owned_t; // an owning copy views its own values
    EXPECT_NE(copy.data(), owned_t.data());
    EXPECT_EQ(std::vector<float>(copy.begin(), copy.end()), std::vector<float>(t.begin(), t.end()));
    const float* before = copy.data();
    InputTensor moved = std::move(copy);
    EXPECT_EQ(moved.data(), before); // a move keeps the storage
    EXPECT_EQ(moved.shape(), (Shape{1, 1, 2, 2}));
    const Tensor c = moved.copy();
    EXPECT_EQ(c, t);
    EXPECT_FALSE(moved.borrowed());
}

} // namespace
} // namespace attn

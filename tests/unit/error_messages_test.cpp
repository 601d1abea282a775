// One rule, one wording (attn/error.hpp): the messages its builders make, and the same
// wording whoever checks the rule: a window refused by the problem's decoder and by the
// core, a weight of the wrong rank from a params file and from a checkpoint layout.
#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/problem/problem.hpp"
#include "unit/test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <random>

namespace attn {
namespace {

using namespace attn::testing;

TEST(ErrorMessages, Builders) {
    EXPECT_EQ(std::string(InputError::rank("params.w_q", 2, "[out, in] weight", {3}).what()),
              "params.w_q: expected a rank-2 [out, in] weight, got shape [3]");
    EXPECT_EQ(std::string(InputError::window("--window", "L,R", "'2'").what()),
              "--window: expected L,R, integers >= -1 (-1 = unbounded), got '2'");
    EXPECT_EQ(fully_masked_text("2 query row(s)"),
              "2 query row(s) can see no key (fully masked): their weights are zeros and their "
              "attention output is zeros");
    EXPECT_EQ(fully_masked_text("1 problem(s) have query rows that", "the first on line 3"),
              "1 problem(s) have query rows that can see no key (fully masked; the first on line "
              "3): their weights are zeros and their attention output is zeros");
}

TEST(ErrorMessages, OneWindowWordingForTheFieldAndTheCore) {
    const nlohmann::json doc = {{"input", {{1.0, 0.0}, {0.0, 1.0}}}, {"window", {-2, 0}}};
    const std::string field = message_of([&] { (void)problem::decode_problem(doc, "."); });
    EXPECT_EQ(field, "window: expected [left, right], integers >= -1 (-1 = unbounded), got [-2,0]");
    std::mt19937 rng(1);
    const Qkv t = random_qkv(rng, {1, 1, 2, 2}, {1, 1, 2, 2}, 2);
    AttentionSpec spec;
    spec.window = {.left = -2, .right = 0};
    const std::string core = message_of([&] { (void)attend(t.q, t.k, t.v, spec); });
    EXPECT_EQ(core, "window: expected [left, right], integers >= -1 (-1 = unbounded), got [-2, 0]");
}

TEST(ErrorMessages, OneRankWordingForParamsFiles) {
    const nlohmann::json doc = {
        {"input", {{1.0, 0.0}, {0.0, 1.0}}},
        {"params", {{"w_q", {1.0, 2.0}}, {"w_k", nullptr}, {"w_v", nullptr}}}};
    EXPECT_INPUT_ERROR(problem::decode_problem(doc, "."),
                       exactly("params.w_q: expected a rank-2 [out, in] weight, got shape [2]"));
}

} // namespace
} // namespace attn

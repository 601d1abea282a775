// Tests of closest_name / did_you_mean (attn/suggest.hpp): typos within the allowed edit
// distance are found (insertions, deletions, substitutions, adjacent swaps), distant words
// and empty candidate lists give nothing.
#include "attn/suggest.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace {

const std::vector<std::string> commands{"compute", "heatmap", "batch", "info", "diff", "explain"};

TEST(Suggest, FindsTypos) {
    EXPECT_EQ(attn::closest_name("comptue", commands), "compute");  // swap
    EXPECT_EQ(attn::closest_name("compte", commands), "compute");   // deletion
    EXPECT_EQ(attn::closest_name("heatmaps", commands), "heatmap"); // insertion
    EXPECT_EQ(attn::closest_name("inf", commands), "info");
    EXPECT_EQ(attn::closest_name("EXPLAIN", commands), "explain"); // case-insensitive
    EXPECT_EQ(attn::closest_name("--cuasal", {"--causal", "--scale"}), "--causal");
    EXPECT_EQ(attn::closest_name("key_paddng_mask", {"key_padding_mask", "mask"}),
              "key_padding_mask");
}

TEST(Suggest, NothingWhenFar) {
    EXPECT_EQ(attn::closest_name("nope", commands), "");
    EXPECT_EQ(attn::closest_name("xyz", {}), "");
    EXPECT_EQ(attn::closest_name("bt", commands), ""); // 3 edits from "batch" is too many
    EXPECT_EQ(attn::did_you_mean("nope", commands), "");
    EXPECT_EQ(attn::did_you_mean("batc", commands), " (did you mean 'batch'?)");
}

TEST(Suggest, ClosestWinsThenEarliest) {
    EXPECT_EQ(attn::closest_name("mask", {"masks", "mask2", "task"}), "masks");
    EXPECT_EQ(attn::closest_name("diff", {"dif", "diff"}), "diff");
}

} // namespace

// The tokenizer pipeline's rules on small hand-made tokenizer.json documents, each
// expectation derived by hand from Hugging Face's documentation and source (the split
// behaviours' "the-final--countdown" example, BPE's lowest-rank-first merges, WordPiece's
// greedy longest match), and the readable labels. Whole tokenizers against Hugging Face's
// own library are in tests/cli/tokenize_test.py.
#include "attn/error.hpp"
#include "attn/text/tokenizer.hpp"
#include "test_files.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::text {
namespace {

using Tokens = std::vector<std::string>;
using nlohmann::json;

Tokens tokens_of(const json& doc, std::string_view text, bool special = true) {
    return parse_tokenizer_json(doc.dump(), "t.json")->encode(text, special).tokens;
}

/// A BPE whose vocabulary holds whole pieces, with ignore_merges: each piece is one token.
json split_doc(const char* behavior) {
    json vocab = json::object();
    for (const char* t :
         {"the", "-", "final", "countdown", "the-", "final-", "-final", "--", "-countdown"}) {
        vocab[t] = vocab.size();
    }
    return {
        {"pre_tokenizer",
         {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}}},
        {"model",
         {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"ignore_merges", true}}}};
}

TEST(Tokenizer, SplitBehavioursAsHuggingFaceDocumentsThem) {
    const std::string text = "the-final--countdown";
    EXPECT_EQ(tokens_of(split_doc("Removed"), text), (Tokens{"the", "final", "countdown"}));
    EXPECT_EQ(tokens_of(split_doc("Isolated"), text),
              (Tokens{"the", "-", "final", "-", "-", "countdown"}));
    EXPECT_EQ(tokens_of(split_doc("MergedWithPrevious"), text),
              (Tokens{"the-", "final-", "-", "countdown"}));
    EXPECT_EQ(tokens_of(split_doc("MergedWithNext"), text),
              (Tokens{"the", "-final", "-", "-countdown"}));
    EXPECT_EQ(tokens_of(split_doc("Contiguous"), text),
              (Tokens{"the", "-", "final", "--", "countdown"}));
}

TEST(Tokenizer, BpeMergesTheLowestRankFirst) {
    const json vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}};
    const auto doc = [&](json merges) {
        return json{{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
    };
    EXPECT_EQ(tokens_of(doc({"b c", "a b"}), "abc"), (Tokens{"a", "bc"}));
    EXPECT_EQ(tokens_of(doc({"a b", "b c"}), "abc"), (Tokens{"ab", "c"}));
    // [a, b] pairs are the same merges; equal pairs merge leftmost first.
    EXPECT_EQ(tokens_of(doc(json::array({json::array({"a", "b"})})), "ababa"),
              (Tokens{"ab", "ab", "a"}));
}

TEST(Tokenizer, ByteFallbackAndFusedUnknowns) {
    const json doc = {{"model",
                       {{"type", "BPE"},
                        {"vocab", {{"<unk>", 0}, {"a", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}}},
                        {"merges", json::array()},
                        {"unk_token", "<unk>"},
                        {"fuse_unk", true},
                        {"byte_fallback", true}}}};
    // é is C3 A9: its bytes; x and y are unknown and have no byte tokens: one fused <unk>.
    EXPECT_EQ(tokens_of(doc, "a\xC3\xA9xya"), (Tokens{"a", "<0xC3>", "<0xA9>", "<unk>", "a"}));
}

TEST(Tokenizer, WordPieceGreedyLongestMatchAndUnk) {
    const json doc = {{"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}}},
                      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
                      {"model",
                       {{"type", "WordPiece"},
                        {"max_input_chars_per_word", 6},
                        {"vocab",
                         {{"[UNK]", 0},
                          {"un", 1},
                          {"##aff", 2},
                          {"##able", 3},
                          {"una", 4},
                          {"##ble", 7},
                          {"##una", 8},
                          {"!", 5},
                          {"cafe", 6}}}}}};
    // "una" is the longest match, and leaves "ff", which no ## piece covers: WordPiece does
    // not backtrack to "un" + "##aff", so the word is [UNK].
    EXPECT_EQ(tokens_of(doc, "UNAFF! Café"), (Tokens{"[UNK]", "!", "cafe"}));
    EXPECT_EQ(tokens_of(doc, "Unable"), (Tokens{"una", "##ble"}));
    EXPECT_EQ(tokens_of(doc, "unable una"), (Tokens{"una", "##ble", "una"}));
    EXPECT_EQ(tokens_of(doc, "unableuna"), (Tokens{"[UNK]"})); // 9 characters > 6
    EXPECT_EQ(tokens_of(doc, "unx"), (Tokens{"[UNK]"}));
}

TEST(Tokenizer, AddedTokensBeforeTheModelAndTheTemplate) {
    const json doc = {
        {"added_tokens",
         {{{"id", 9},
           {"content", "<mask>"},
           {"special", true},
           {"lstrip", true},
           {"normalized", false}}}},
        {"post_processor",
         {{"type", "TemplateProcessing"},
          {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
          {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {7}}, {"tokens", {"<s>"}}}}}}}},
        {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {" ", 1}}}, {"merges", json::array()}}}};
    // lstrip: the spaces before <mask> go with it.
    EXPECT_EQ(tokens_of(doc, "a  <mask>a"), (Tokens{"<s>", "a", "<mask>", "a"}));
    EXPECT_EQ(tokens_of(doc, "a", false), (Tokens{"a"}));
    EXPECT_EQ(parse_tokenizer_json(doc.dump(), "t")->encode("", true).ids,
              (std::vector<std::int64_t>{7}));
}

TEST(Tokenizer, InvalidUtf8IsRefusedWithItsOffset) {
    const auto t =
        parse_tokenizer_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})", "t");
    for (const std::string bad :
         {"a\xFF", "a\xC0\xAF", "a\xED\xA0\x80", "a\xF4\x90\x80\x80", "a\xE2\x82"}) {
        testing::expect_error_message<InputError>(
            [&] { (void)t->encode(bad); }, "text: invalid UTF-8 at byte 1", "");
    }
}

TEST(Tokenizer, ReadableLabels) {
    EXPECT_EQ(readable_token("\xC4\xA0world", true), "\xE2\x90\xA3world");           // Ġworld
    EXPECT_EQ(readable_token("\xC4\x8A\xC4\x8A", true), "\xE2\x86\xB5\xE2\x86\xB5"); // ĊĊ
    EXPECT_EQ(readable_token("\xC3\xA2\xC4\xA2", true), "<E2 80>"); // half of a character
    EXPECT_EQ(readable_token("\xC3\xA6\xC4\xB9\xC2\xA5", true), "\xE6\x97\xA5"); // 日
    EXPECT_EQ(readable_token("\xE2\x96\x81the", false), "\xE2\x90\xA3the");      // ▁the
    EXPECT_EQ(readable_token("##ing", false), "##ing");
    EXPECT_EQ(readable_token("<0xE6>", false), "<0xE6>");
    EXPECT_EQ(readable_token("<|endoftext|>", true), "<|endoftext|>");
}

TEST(Tokenizer, HostileDocumentsAreOneLineInputErrors) {
    using testing::expect_error_message;
    const auto parse = [](const std::string& text) {
        return [text] { (void)parse_tokenizer_json(text, "t.json"); };
    };
    expect_error_message<InputError>(parse("{"), "t.json: ", "invalid JSON");
    expect_error_message<InputError>(parse(R"({"model": {"type": "Unigram"}})"),
                                     "t.json: ",
                                     "model type \"Unigram\" is not supported");
    expect_error_message<InputError>(
        parse(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})"),
        "t.json: ",
        "merges[0]: the token \"b\" is not in the vocabulary");
    expect_error_message<InputError>(
        parse(
            R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Precompiled"}})"),
        "t.json: normalizer: ",
        "unsupported type \"Precompiled\"");
}

} // namespace
} // namespace attn::text

// One rule, one wording (attn/error.hpp): the messages its builders make, and the same
// wording whoever checks the rule: a window refused by the problem's decoder and by the
// core, a weight of the wrong rank from a params file and from a checkpoint layout, a list
// of strings from a problem, a result and a token file, trailing bytes from each NPY
// reader, a missing file from each reader that opens one.
#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/token_list.hpp"
#include "attn/model/gguf.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/result_read.hpp"
#include "unit/npy_bytes.hpp"
#include "unit/test_files.hpp"
#include "unit/test_util.hpp"

#include <cerrno>
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

TEST(ErrorMessages, EveryKind) {
    EXPECT_EQ(std::string(InputError::field("causal", "true or false", "3").what()),
              "causal: expected true or false, got 3");
    EXPECT_EQ(std::string(InputError::field("--tokens", "a file").what()),
              "--tokens: expected a file");
    EXPECT_EQ(std::string(InputError::shape("mask", {2, kAnyDim}, {2, 3, 4}).what()),
              "mask: expected shape [2, *], got [2, 3, 4]");
    EXPECT_EQ(std::string(InputError::at("d/f.json", "bad").what()), "d/f.json: bad");
    EXPECT_EQ(std::string(InputError::string_list("labels", "dict").what()),
              "labels: expected a list of strings, got dict");
    EXPECT_EQ(std::string(InputError::string_list("labels").what()),
              "labels: expected a list of strings");
    EXPECT_EQ(std::string(InputError::string_list_item("labels", 2, "int").what()),
              "labels: [2]: expected a string, got int");
    EXPECT_EQ(std::string(InputError::label_count("tokens", 3, 2).what()),
              "tokens: expected 3 tokens, got 2");
    EXPECT_EQ(
        std::string(InputError::label_count("--tokens", 3, 4, "one per query and key").what()),
        "--tokens: expected 3 tokens (one per query and key), got 4");
    EXPECT_EQ(std::string(InputError::cannot_read("x.npy", ENOENT).what()),
              "x.npy: cannot read: No such file or directory");
    EXPECT_EQ(std::string(InputError::cannot_read("d", EISDIR).what()),
              "d: cannot read: Is a directory");
    EXPECT_EQ(std::string(InputError::trailing_bytes("x.npy", 8, 12).what()),
              "x.npy: trailing bytes: header says 8 bytes of data, file has 12");
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

TEST(ErrorMessages, OneStringListWordingForAProblemAResultAndATokenFile) {
    const nlohmann::json doc = {{"input", {{1.0, 0.0}, {0.0, 1.0}}}, {"tokens", {"a", 7}}};
    EXPECT_EQ(message_of([&] { (void)problem::decode_problem(doc, "."); }),
              "tokens: [1]: expected a string, got number");
    EXPECT_EQ(message_of([&] {
                  (void)problem::read_result_bytes(
                      bytes_of(R"({"output": [1], "key_tokens": ["a", 7]})"), "r");
              }),
              "r: key_tokens: [1]: expected a string, got number");
    EXPECT_EQ(message_of([&] { (void)io::parse_token_text(R"(["a", 7])", "t.json"); }),
              "t.json: [1]: expected a string, got number");
    const nlohmann::json short_list = {{"input", {{1.0, 0.0}, {0.0, 1.0}}}, {"tokens", {"a"}}};
    EXPECT_EQ(message_of([&] { (void)problem::decode_problem(short_list, "."); }),
              "tokens: expected 2 tokens, got 1");
    const nlohmann::json not_list = {{"input", {{1.0, 0.0}, {0.0, 1.0}}}, {"tokens", "ab"}};
    EXPECT_EQ(message_of([&] { (void)problem::decode_problem(not_list, "."); }),
              "tokens: expected a list of strings, got string");
}

class OneFileWording : public TempDirTest {};

TEST_F(OneFileWording, TrailingBytesFromEveryNpyReader) {
    const std::vector<std::uint8_t> npy =
        make_npy(dict_for("<f4", "(2,)"), std::vector<std::uint8_t>(12, 0));
    const std::string path = write("x.npy", npy).string();
    const std::string want = "x.npy: trailing bytes: header says 8 bytes of data, file has 12";
    EXPECT_EQ(message_of([&] { (void)io::parse_npy(npy, "x.npy"); }), want);
    EXPECT_EQ(message_of([&] { (void)io::NpyView(path, "x.npy"); }), want);
    EXPECT_EQ(message_of([&] { (void)io::read_array_file(path, io::ArrayKind::mask); }),
              path + ": trailing bytes: header says 8 bytes of data, file has 12");
}

TEST_F(OneFileWording, AMissingFileFromEveryReader) {
    const std::string path = (dir_ / "missing").string();
    const std::string want = path + ": cannot read: No such file or directory";
    EXPECT_EQ(message_of([&] { (void)io::read_file(path); }), want);
    EXPECT_EQ(message_of([&] { (void)model::SafetensorsFile(path); }), want);
    EXPECT_EQ(message_of([&] { (void)model::GgufFile(path); }), want);
    EXPECT_EQ(message_of([&] { (void)io::read_array_file(path + ".npy", io::ArrayKind::mask); }),
              path + ".npy: cannot read: No such file or directory");
}

} // namespace
} // namespace attn

// The problem flags' values into the problem document (attn/cli/problem_flags.hpp): each
// flag's field as the contract (shared/interface.md, README) names it, the messages of a
// malformed value, and problem_input with stdin given by the test.
#include "attn/cli/problem_flags.hpp"
#include "attn/error.hpp"
#include "attn/io/npy.hpp"
#include "attn/problem/document.hpp"
#include "unit/test_files.hpp"
#include "unit/test_util.hpp"

#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::cli {
namespace {

using namespace attn::testing;
using nlohmann::json;
using problem::problem_json;

TEST(FlagValues, ScaleNumberOrDefault) {
    EXPECT_EQ(parse_scale_flag("0.125"), json(0.125));
    EXPECT_EQ(parse_scale_flag("1"), json(1.0));
    for (const char* s : {"default", "none", "null"}) {
        EXPECT_TRUE(parse_scale_flag(s).is_null()) << s;
    }
    EXPECT_EQ(message_of([] { parse_scale_flag("abc"); }),
              "--scale: expected a finite number or 'default', got 'abc'");
    EXPECT_INPUT_ERROR(parse_scale_flag("1e999"), "got '1e999'");
    EXPECT_INPUT_ERROR(parse_scale_flag("nan"), "got 'nan'");
    EXPECT_INPUT_ERROR(parse_scale_flag("0.5x"), "got '0.5x'");
    EXPECT_INPUT_ERROR(parse_scale_flag(""), "got ''");
}

TEST(FlagValues, CommasKeepEmptyItems) {
    EXPECT_EQ(split_commas("a,b,c"), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(split_commas("1,,2"), (std::vector<std::string>{"1", "", "2"}));
    EXPECT_EQ(split_commas(""), (std::vector<std::string>{""}));
    EXPECT_EQ(split_commas("x,"), (std::vector<std::string>{"x", ""}));
}

TEST(FlagValues, WindowSidesAreIntegersFromMinusOne) {
    EXPECT_EQ(flag_window_side("-1"), -1);
    EXPECT_EQ(flag_window_side("0"), 0);
    EXPECT_EQ(flag_window_side("12"), 12);
    EXPECT_EQ(message_of([] { flag_window_side("-2"); }),
              "--window: expected L,R, integers >= -1 (-1 = unbounded), got '-2'");
    EXPECT_INPUT_ERROR(flag_window_side("1.5"), "got '1.5'");
    EXPECT_INPUT_ERROR(flag_window_side(""), "got ''");
}

TEST(FlagValues, NumberListsAndMinusInfinityForSinks) {
    EXPECT_EQ(flag_numbers("0.5,-1", "--alibi"), json::parse("[0.5, -1.0]"));
    EXPECT_EQ(flag_numbers("1,-inf", "--sinks", true), json::parse(R"([1.0, "-inf"])"));
    EXPECT_EQ(message_of([] { flag_numbers("1,-inf", "--alibi"); }),
              "--alibi: expected comma-separated numbers, one per head, got '-inf'");
    EXPECT_INPUT_ERROR(flag_numbers("1,,2", "--alibi"), "got ''");
    EXPECT_TRUE(is_off("none") && is_off("off") && is_off("false"));
    EXPECT_FALSE(is_off("true") || is_off("") || is_off("0"));
}

TEST(FeatureFlags, EachFlagSetsItsField) {
    ProblemFlags f;
    f.window = "2,-1";
    f.window_align = "bottom-right";
    f.varlen = true;
    f.softcap = "30";
    f.alibi = "default";
    f.sinks = "0.5,-inf";
    f.mask_convention = "torch-mha";
    f.returns = "lse,entropy";
    f.top_k = 3;
    f.average_heads = true;
    json doc = json::object();
    apply_feature_flags(f, doc);
    EXPECT_EQ(doc, json::parse(R"({"window": [2, -1], "window_align": "bottom-right",
        "varlen": true, "softcap": 30.0, "alibi": true, "sinks": [0.5, "-inf"],
        "mask_convention": "torch-mha", "return": ["lse", "entropy", "top_k"], "top_k": 3,
        "average_heads": true})"));
}

TEST(FeatureFlags, OffValuesAndOverrides) {
    ProblemFlags f;
    f.softcap = "none";
    f.alibi = "off";
    f.sinks = "false";
    json doc = json::parse(R"({"softcap": 5, "alibi": [1, 2], "sinks": [0], "return": ["top_k"]})");
    f.top_k = 2;
    apply_feature_flags(f, doc);
    EXPECT_TRUE(doc["softcap"].is_null());
    EXPECT_EQ(doc["alibi"], json(false));
    EXPECT_TRUE(doc["sinks"].is_null());
    EXPECT_EQ(doc["return"], json::parse(R"(["top_k"])")); // not twice
    f = {};
    f.alibi = "0.5,0.25";
    apply_feature_flags(f, doc);
    EXPECT_EQ(doc["alibi"], json::parse("[0.5, 0.25]"));
}

TEST(FeatureFlags, MalformedValuesNameTheFlag) {
    const auto fails = [](auto set, const char* message) {
        ProblemFlags f;
        set(f);
        json doc = json::object();
        EXPECT_EQ(message_of([&] { apply_feature_flags(f, doc); }), message);
    };
    fails([](ProblemFlags& f) { f.window = "1"; },
          "--window: expected L,R, integers >= -1 (-1 = unbounded), got '1'");
    fails([](ProblemFlags& f) { f.window = "1,2,3"; },
          "--window: expected L,R, integers >= -1 (-1 = unbounded), got '1,2,3'");
    fails([](ProblemFlags& f) { f.softcap = "x"; },
          "--softcap: expected a number > 0 or 'none', got 'x'");
    fails([](ProblemFlags& f) { f.rope = "abc"; },
          "--rope: expected a theta > 0, or 'off', got 'abc'");
    fails([](ProblemFlags& f) { f.prefix = "h.0."; },
          "--prefix: needs --params FILE.safetensors (or a problem whose params is a .safetensors "
          "file)");
}

TEST(FeatureFlags, RopeKeysMergeIntoTheField) {
    ProblemFlags f;
    f.rope_style = "interleaved";
    f.rope_offset = 4;
    json doc = json::parse(R"({"rope": 500000, "norm": true})");
    f.no_norm = true;
    apply_feature_flags(f, doc);
    EXPECT_EQ(doc, json::parse(R"({"rope": {"theta": 500000, "style": "interleaved",
        "offset": 4}, "norm": false})"));
    doc = json::parse(R"({"rope": {"theta": 10, "positions": [0, 1]}})");
    f = {};
    f.rope = "true";
    f.rope_dim = 8;
    f.rope_offset = 1; // an offset replaces the explicit positions
    apply_feature_flags(f, doc);
    EXPECT_EQ(doc["rope"], json::parse(R"({"theta": 10, "dim": 8, "offset": 1})"));
    f = {};
    f.rope = "off";
    f.rope_dim = 8; // off wins over the keys
    apply_feature_flags(f, doc);
    EXPECT_EQ(doc["rope"], json(false));
    f = {};
    f.rope = "1e4";
    doc = json::object();
    apply_feature_flags(f, doc);
    EXPECT_EQ(doc["rope"], json::parse(R"({"theta": 10000.0})"));
}

TEST(FeatureFlags, CheckpointParamsBecomeAnObject) {
    ProblemFlags f;
    f.prefix = "transformer.h.0.attn.";
    f.layout = "gpt2";
    json doc = json::parse(R"({"params": "/m/model.safetensors"})");
    apply_feature_flags(f, doc);
    EXPECT_EQ(doc["params"], json::parse(R"({"file": "/m/model.safetensors",
        "prefix": "transformer.h.0.attn.", "layout": "gpt2"})"));
}

TEST(CommonFlags, OverrideTheirFields) {
    CommonProblemFlags f;
    f.variant = "scaled";
    f.causal = "bottom-right";
    f.scale = "default";
    f.heads = 4;
    f.kv_heads = 2;
    f.precision = "f64";
    json doc = json::parse(R"({"causal": true, "scale": 0.5, "num_heads": 1})");
    apply_common_flags(f, doc);
    EXPECT_EQ(doc, json::parse(R"({"variant": "scaled", "causal": "bottom-right", "scale": null,
        "num_heads": 4, "num_kv_heads": 2, "precision": "f64"})"));
    json untouched = json::parse(R"({"scale": 0.5})");
    apply_common_flags(CommonProblemFlags{}, untouched);
    EXPECT_EQ(untouched, json::parse(R"({"scale": 0.5})"));
}

class ProblemInputTest : public TempDirTest {};

/// A stdin that holds `bytes` once and records who read it.
struct FakeStdin {
    std::vector<std::uint8_t> bytes;
    std::vector<std::string> readers;
    StdinReader reader() {
        return [this](std::string_view what) {
            readers.emplace_back(what);
            return bytes;
        };
    }
};

TEST_F(ProblemInputTest, FileFieldsThenFlags) {
    const auto file = write("p.json", R"({"query": "q.npy", "scale": 0.5, "init": {"dim": 4}})");
    ProblemFlags f;
    f.problem = file.string();
    f.key = "rel/k.npy";
    f.seed = 7;
    f.scale = "0.25";
    const ProblemInput in = problem_input(f, "compute");
    EXPECT_EQ(in.name, file.string());
    EXPECT_EQ(in.base, dir_);
    EXPECT_EQ(in.doc["query"], "q.npy"); // the problem's own path: against its folder
    EXPECT_EQ(in.doc["key"], (std::filesystem::current_path() / "rel/k.npy").string());
    EXPECT_EQ(in.doc["scale"], json(0.25));
    EXPECT_EQ(in.doc["init"], json::parse(R"({"dim": 4, "seed": 7})"));
}

TEST_F(ProblemInputTest, ArraysFromStdinKeepFloat64ForF64) {
    io::Array a;
    a.shape = {2};
    a.values64 = {0.1, 1.0 / 3.0};
    a.values = {0.1f, static_cast<float>(1.0 / 3.0)};
    FakeStdin in{io::encode_npy(a, true), {}};
    ProblemFlags f;
    f.query = "-";
    f.precision = "f64";
    const ProblemInput got = problem_input(f, "compute", in.reader());
    EXPECT_EQ(in.readers, std::vector<std::string>{"--query"});
    ASSERT_EQ(got.arrays.count("query"), 1U);
    EXPECT_EQ(got.arrays.at("query").values64, a.values64);
    EXPECT_FALSE(got.doc.contains("query"));
    EXPECT_EQ(got.name, "flags");
}

TEST_F(ProblemInputTest, StdinProblemAndItsMistakes) {
    FakeStdin json_in{bytes_of(R"({"variant": "dot"})"), {}};
    ProblemFlags f;
    f.problem = "-";
    const ProblemInput got = problem_input(f, "explain", json_in.reader());
    EXPECT_EQ(got.name, "<stdin>");
    EXPECT_EQ(got.doc, json::parse(R"({"variant": "dot"})"));
    EXPECT_EQ(json_in.readers, std::vector<std::string>{"PROBLEM"});

    io::Array a;
    a.shape = {1};
    a.values = {1.0f};
    FakeStdin npy_in{io::encode_npy(a, false), {}};
    EXPECT_EQ(message_of([&] { problem_input(f, "compute", npy_in.reader()); }),
              "<stdin>: this is an array (NPY), not a problem; did you mean -q <stdin> (or -k, "
              "-v, -x)?");
    FakeStdin zip_in{bytes_of(std::string("PK\x03\x04rest", 8)), {}};
    EXPECT_INPUT_ERROR(problem_input(f, "compute", zip_in.reader()),
                       "this is a zip archive \\(\\.npz\\?\\), not a problem");
    FakeStdin list_in{bytes_of("[1, 2]"), {}};
    EXPECT_EQ(message_of([&] { problem_input(f, "compute", list_in.reader()); }),
              "<stdin>: expected a JSON object (a problem), got array");
}

TEST_F(ProblemInputTest, NoProblemAtAllNamesTheCommand) {
    EXPECT_EQ(message_of([] { problem_input(ProblemFlags{}, "explain"); }),
              "explain: no problem: give a PROBLEM file (or - for stdin), or "
              "--query/--key/--value or --input (see 'attn explain --help')");
}

TEST_F(ProblemInputTest, TextFilesAndParamsFromStdin) {
    const auto text = write("t.txt", "the cat");
    FakeStdin in{bytes_of(R"({"w_q": [[1]]})"), {}};
    ProblemFlags f;
    f.text = {"a dog"};
    f.text_file = {text.string()};
    f.params = "-";
    f.no_special_tokens = true;
    f.layers = "0,2-3";
    const ProblemInput got = problem_input(f, "compute", in.reader());
    EXPECT_EQ(got.doc["text"], json::parse(R"(["a dog", "the cat"])"));
    EXPECT_EQ(got.doc["params"], json::parse(R"({"w_q": [[1]]})"));
    EXPECT_EQ(got.doc["special_tokens"], json(false));
    EXPECT_EQ(got.doc["layers"], "0,2-3");
    f.text = {};
    f.params = {};
    EXPECT_EQ(problem_input(f, "compute").doc["text"], "the cat"); // one text: a string
}

} // namespace
} // namespace attn::cli

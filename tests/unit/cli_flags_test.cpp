// attn::cli flags: the count and precision checks, the closest flag of a parse error, the
// parse-error line and the unknown command's message, on a small CLI11 app; the library's
// fields spelled as flags (flag_of, error_text).
#include "attn/cli/flags.hpp"
#include "attn/render/heatmap.hpp"
#include "unit/test_util.hpp"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace attn::cli {
namespace {

class Flags : public ::testing::Test {
  protected:
    Flags() {
        app.allow_extras(false);
        CLI::App* run = app.add_subcommand("compute", "compute it");
        run->add_option("--threads", threads, "threads")->check(positive_count());
        run->add_option("--precision", precision, "f32 or f64")->check(precision_name());
        run->add_flag("--causal", causal, "causal");
        app.add_subcommand("heatmap", "draw it");
        app.failure_message(parse_error_text);
    }

    /// The parse-error line of `attn ARGS...`, or "" when it parses.
    std::string error_of(std::vector<std::string> args) {
        std::vector<const char*> argv{"attn"};
        for (const std::string& a : args) {
            argv.push_back(a.c_str());
        }
        try {
            app.parse(static_cast<int>(argv.size()), argv.data());
        } catch (const CLI::ParseError& e) {
            return parse_error_text(&app, e);
        }
        return "";
    }

    CLI::App app{"attn", "attn"};
    int threads = 0;
    std::string precision;
    bool causal = false;
};

TEST_F(Flags, CountsAreWholeNumbersOfAtLeastOne) {
    EXPECT_EQ(error_of({"compute", "--threads", "4"}), "");
    EXPECT_EQ(error_of({"compute", "--threads", "0"}),
              "attn: error: --threads: expected a whole number of at least 1, got '0' "
              "(see 'attn compute --help')\n");
    EXPECT_NE(error_of({"compute", "--threads", "-2"}), "");
    EXPECT_NE(error_of({"compute", "--threads", "1234567890"}), ""); // more than 9 digits
}

TEST_F(Flags, PrecisionIsF32OrF64) {
    EXPECT_EQ(error_of({"compute", "--precision", "f64"}), "");
    EXPECT_NE(error_of({"compute", "--precision", "f16"}).find("f16"), std::string::npos);
}

TEST_F(Flags, AnUnknownFlagGetsTheClosestOne) {
    const std::string line = error_of({"compute", "--casual"});
    EXPECT_NE(line.find("(did you mean '--causal'?) (see 'attn compute --help')\n"),
              std::string::npos)
        << line;
}

TEST_F(Flags, NoSuggestionWhenNothingIsClose) {
    const std::string line = error_of({"compute", "--zzzzzzzz"});
    EXPECT_EQ(line.find("did you mean"), std::string::npos) << line;
    EXPECT_NE(line.find("(see 'attn compute --help')"), std::string::npos) << line;
}

TEST_F(Flags, SubcommandsInOrder) {
    EXPECT_EQ(subcommand_names(app), (std::vector<std::string>{"compute", "heatmap"}));
}

TEST_F(Flags, UnknownCommandNamesTheClosest) {
    EXPECT_EQ(unknown_command(app, "computer").what(),
              std::string("unknown command 'computer' (did you mean 'compute'?) (see 'attn "
                          "--help')"));
    EXPECT_EQ(unknown_command(app, "xyzzy").what(),
              std::string("unknown command 'xyzzy' (see 'attn --help')"));
}

TEST(FieldsAsFlags, TheTableAndTheRule) {
    EXPECT_EQ(flag_of("colormap"), "--cmap");
    EXPECT_EQ(flag_of("annotate=False"), "--no-annotate");
    EXPECT_EQ(flag_of("key_tokens"), "--xlabels");
    EXPECT_EQ(flag_of("query_tokens"), "--ylabels");
    EXPECT_EQ(flag_of("num_heads"), "--heads");
    EXPECT_EQ(flag_of("max_memory"), "--max-memory");
    EXPECT_EQ(flag_of("font_size"), "--font-size");
    EXPECT_EQ(flag_of("vmin"), "--vmin");
}

TEST(FieldsAsFlags, AMessageReadsFieldsInTheLibraryAndFlagsOnTheCommandLine) {
    const InputError e(option_name("vmin") + ": must be > 0 with " + option_name("scale") + " log");
    EXPECT_EQ(std::string(e.what()), "vmin: must be > 0 with scale log");
    EXPECT_EQ(error_text(e), "--vmin: must be > 0 with --scale log");
    // The factories keep the marks: the named form of a field's rule.
    const InputError f = InputError::field(option_name("font_size"), "4 to 72 (points)");
    EXPECT_EQ(std::string(f.what()), "font_size: expected 4 to 72 (points)");
    EXPECT_EQ(error_text(f), "--font-size: expected 4 to 72 (points)");
    // A message without options, and a copy, are as they were.
    const InputError plain("query: expected a file");
    EXPECT_EQ(error_text(plain), "query: expected a file");
    const InputError copy = e; // NOLINT(performance-unnecessary-copy-initialization)
    EXPECT_EQ(error_text(copy), "--vmin: must be > 0 with --scale log");
    EXPECT_EQ(with_flags("(" + option_name("no_weights") + ")"), "(--no-weights)");
}

TEST(FieldsAsFlags, TheRenderersRefusalsNameTheFlagsOnTheCommandLine) {
    const std::vector<float> values(4, 0.25f);
    render::HeatmapInput in;
    in.rows = in.cols = 2;
    in.panels.push_back({"", values, {}});
    render::HeatmapOptions o;
    o.colormap = "jet";
    try {
        (void)render::heatmap(in, o);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("colormap: unknown colormap 'jet'", 0), 0U);
        EXPECT_EQ(error_text(e).rfind("--cmap: unknown colormap 'jet'", 0), 0U);
    }
}

} // namespace
} // namespace attn::cli

// attn::cli flags: the count and precision checks, the closest flag of a parse error, the
// parse-error line and the unknown command's message, on a small CLI11 app.
#include "attn/cli/flags.hpp"
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

} // namespace
} // namespace attn::cli

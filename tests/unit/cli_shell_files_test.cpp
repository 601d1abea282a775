// attn::cli::shell_file: the bash, zsh and fish completions and the man page written from a
// small CLI11 app's definitions carry every command, flag and choice; roff text is escaped.
#include "attn/cli/shell_files.hpp"
#include "unit/test_util.hpp"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <string>

namespace attn::cli {
namespace {

/// "tool" with two commands: "run" (a positional, a file option, a choice, a flag, a hidden
/// option) and "show".
class ShellFiles : public ::testing::Test {
  protected:
    ShellFiles() {
        CLI::App* run = app.add_subcommand("run", "Run the thing\nsecond line not shown");
        run->add_option("input", input, "the input");
        run->add_option("--output,-o", output, "where it goes");
        run->add_option("--mode", mode, "how: fast or slow")
            ->check(CLI::IsMember({"fast", "slow"}));
        run->add_flag("--dry-run", flag, "don't: just say it");
        run->add_option("--secret", output, "never shown")->group("");
        app.add_subcommand("show", "Show [it]: all of it")->add_flag("--all", flag, "everything");
    }

    CLI::App app{"A tool. It's small.", "tool"};
    std::string input, output, mode;
    bool flag = false;
};

TEST_F(ShellFiles, EveryShellHasEveryCommandFlagAndChoice) {
    for (const char* shell : {"bash", "zsh", "fish"}) {
        SCOPED_TRACE(shell);
        const std::string s = shell_file(app, shell, "1.2.3");
        for (const char* word :
             {"run", "show", "output", "mode", "dry-run", "all", "fast", "slow"}) {
            EXPECT_NE(s.find(word), std::string::npos) << word;
        }
        EXPECT_EQ(s.find("secret"), std::string::npos); // hidden (no group)
        EXPECT_EQ(s.find("second line"), std::string::npos);
    }
}

TEST_F(ShellFiles, BashCompletesChoicesAfterTheirFlag) {
    const std::string s = shell_file(app, "bash", "1.2.3");
    EXPECT_NE(s.find("--mode) choices='fast slow' ;;"), std::string::npos) << s;
    EXPECT_NE(s.find("run|show) cmd="), std::string::npos) << s;
    EXPECT_NE(s.find("values=' --output -o --mode '"), std::string::npos) << s; // take a value
    EXPECT_NE(s.find("complete -o filenames -o bashdefault -F _attn attn\n"), std::string::npos);
}

TEST_F(ShellFiles, ZshDescriptionsHaveNoBracketsOrColons) {
    const std::string s = shell_file(app, "zsh", "1.2.3");
    EXPECT_NE(s.find("'show:Show (it), all of it'"), std::string::npos) << s;
    EXPECT_NE(s.find("'--mode[how, fast or slow]:TEXT:(fast slow)'"), std::string::npos) << s;
    EXPECT_NE(s.find("'--output[where it goes]:TEXT:_files'"), std::string::npos) << s;
}

TEST_F(ShellFiles, FishQuotesApostrophes) {
    const std::string s = shell_file(app, "fish", "1.2.3");
    EXPECT_NE(s.find("-l dry-run -d 'don'\\''t: just say it'"), std::string::npos) << s;
    EXPECT_NE(s.find("-l mode -x -a 'fast slow'"), std::string::npos) << s;
    EXPECT_NE(s.find("-l output -s o -r -F"), std::string::npos) << s;
}

TEST_F(ShellFiles, ManPageNamesTheVersionAndEscapesRoff) {
    const std::string s = shell_file(app, "man", "1.2.3");
    EXPECT_NE(s.find(".TH ATTN 1 \"\" \"attn 1.2.3\""), std::string::npos) << s;
    EXPECT_NE(s.find(".SH \"attn run\"\n.B attn run [\\fIinput\\fR] [\\fIoptions\\fR]"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find(".B \\-\\-dry\\-run\n"), std::string::npos) << s;
    EXPECT_NE(s.find(".B \\-\\-output, \\-o \" \" \\fITEXT\\fR\n"), std::string::npos) << s;
}

TEST(Roff, EscapesBackslashesHyphensAndALeadingControlCharacter) {
    EXPECT_EQ(roff(R"(a\b-c)"), R"(a\eb\-c)");
    EXPECT_EQ(roff(".TH not a macro"), "\\&.TH not a macro");
    EXPECT_EQ(roff("'quote"), "\\&'quote");
    EXPECT_EQ(roff("mid.dle'"), "mid.dle'");
    EXPECT_EQ(roff(""), "");
}

TEST_F(ShellFiles, AnythingElseIsAnInputError) {
    EXPECT_EQ(testing::message_of([&] { shell_file(app, "tcsh", "1"); }),
              "--completions: expected bash, zsh or fish, got 'tcsh'");
}

} // namespace
} // namespace attn::cli

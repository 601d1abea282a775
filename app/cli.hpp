// The CLI front-end's shared declarations: one add_* function per subcommand file.
// Each registers its subcommand on the root app and sets a callback that does the work;
// errors propagate as exceptions to the one catch ladder in main.cpp.
#pragma once

#include "attn/cli/flags.hpp"
#include "attn/cli/progress.hpp"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace attn::app {

/// Thrown to end the program with this exit code and no further message (e.g. batch
/// exits 1 when any line failed, having already reported each failure).
struct ExitCode {
    int code;
};

/// The project version (CMake's PROJECT_VERSION).
const char* version();

/// Adds a --version flag to a (sub)command: prints "attn VERSION" and exits 0.
void add_version_flag(CLI::App& app);

/// What a subcommand's help shows: its name, its line under `attn --help`, and a footer
/// under its own --help (empty: none).
struct CommandHelp {
    const char* name;
    const char* description;
    const char* footer = "";
};

/// Registers subcommand `help.name` on `app` with its --version flag and its footer.
CLI::App* add_command(CLI::App& app, const CommandHelp& help);

/// Whether this run declares subcommand `name`'s flags: every subcommand's, unless the command
/// line starts with a subcommand's name (`attn compute …`), when only that one's are (see
/// `declare_flags_of` in main.cpp).
bool declares_flags(const char* name);

/// Registers a subcommand whose flags fill an `Args` (it lives as long as `app`):
/// `options(cmd, args)` declares them, `run(args)` does the work when the subcommand is
/// chosen. `run` returns nothing, or the exit code (nonzero ends the program with it: diff
/// "different", batch "a line failed").
template <class Args, class Options, class Run>
void add_command(CLI::App& app, const CommandHelp& help, Options options, Run run) {
    auto args = std::make_shared<Args>();
    CLI::App* cmd = add_command(app, help);
    if (declares_flags(help.name)) {
        options(*cmd, *args);
    }
    cmd->callback([args, run] {
        if constexpr (std::is_void_v<std::invoke_result_t<Run, const Args&>>) {
            run(*args);
        } else if (const int code = run(*args); code != 0) {
            throw ExitCode{code};
        }
    });
}

void add_compute(CLI::App& app);  // cmd_compute.cpp
void add_info(CLI::App& app);     // cmd_info.cpp
void add_heatmap(CLI::App& app);  // cmd_heatmap.cpp
void add_batch(CLI::App& app);    // cmd_batch.cpp
void add_diff(CLI::App& app);     // cmd_diff.cpp
void add_explain(CLI::App& app);  // cmd_explain.cpp
void add_tokenize(CLI::App& app); // cmd_tokenize.cpp
void add_census(CLI::App& app);   // cmd_census.cpp
void add_compare(CLI::App& app);  // cmd_compare.cpp

// The command line's shared checks and the progress on stderr (attn_cli).
using cli::DelayedSpinner;
using cli::LayerProgress;
using cli::positive_count;
using cli::precision_name;
using cli::progress_wanted;
using cli::ProgressLine;

/// Prints "attn: warning: MESSAGE" on stderr (unless warnings are silenced).
void warn(const std::string& message);

/// Flushes what was written to std::cout; SystemError("<stdout>: cannot write") when
/// stdout did not take it all (a closed pipe, a full disk).
void flush_stdout();

/// A table of [layers][H] results (census, compare) in each of --output's formats.
struct TableFiles {
    std::function<std::string()> json, csv;
    std::function<std::vector<std::uint8_t>()> npz;
};

/// --output's format by extension: "json", "csv" or "npz"; "" for stdout (empty or -).
/// InputError naming the flag for any other name (checked before any work).
std::string table_format(const std::string& path);

/// The table written as --output names it (atomically), or its JSON on stdout.
void write_table(const std::string& path, const TableFiles& files);

} // namespace attn::app

// The CLI front-end's shared declarations: one add_* function per subcommand file.
// Each registers its subcommand on the root app and sets a callback that does the work;
// errors propagate as exceptions to the one catch ladder in main.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

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

/// Registers subcommand `name` on `app` with its --version flag and, when not empty, a
/// footer under its --help.
CLI::App* add_command(CLI::App& app,
                      const std::string& name,
                      const std::string& description,
                      const std::string& footer = "");

void add_compute(CLI::App& app); // cmd_compute.cpp
void add_info(CLI::App& app);    // cmd_info.cpp
void add_heatmap(CLI::App& app); // cmd_heatmap.cpp
void add_batch(CLI::App& app);   // cmd_batch.cpp
void add_diff(CLI::App& app);    // cmd_diff.cpp
void add_explain(CLI::App& app); // cmd_explain.cpp

/// A CLI11 check for counts (--threads, --jobs, --heads, ...): a whole number >= 1, with a
/// plain message ("--threads: expected a whole number of at least 1, got '0'").
const CLI::Validator& positive_count();

/// Prints "attn: warning: MESSAGE" on stderr (unless warnings are silenced).
void warn(const std::string& message);

} // namespace attn::app

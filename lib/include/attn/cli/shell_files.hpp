// Shell completions and the man page, written from the CLI11 definitions (shell_files.cpp).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

namespace attn::cli {

/// The completion script for `what` = "bash", "zsh" or "fish", or the man page for "man"
/// (its header names `version`), of the commands and flags registered on `root`. Throws
/// InputError for anything else.
std::string shell_file(const CLI::App& root, const std::string& what, std::string_view version);

/// Text for roff: backslashes as \e, hyphens as \-, a leading '.' or '\'' guarded by \&.
std::string roff(const std::string& text);

} // namespace attn::cli

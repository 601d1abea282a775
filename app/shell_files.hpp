// Shell completions and the man page, written from the CLI11 definitions (shell_files.cpp).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace attn::app {

/// The completion script for `what` = "bash", "zsh" or "fish", or the man page for "man",
/// of the commands and flags registered on `root`. Throws InputError for anything else.
std::string shell_file(const CLI::App& root, const std::string& what);

} // namespace attn::app

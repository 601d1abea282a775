// What every command line over CLI11 shares: the checks of counts and precisions, the
// message of a parse error (with the closest flag and the --help to read), the message of
// an unknown command. The front end (app/) registers flags and prints; the rules live here.
#pragma once

#include "attn/error.hpp"

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace attn::cli {

/// The flag of an option the library names by its field (attn::option_name): "colormap"
/// -> "--cmap", "max_memory" -> "--max-memory", "annotate=False" -> "--no-annotate". The
/// command line's one table of the names that differ; any other field is "--" and the
/// field with '-' for '_' ("font_size" -> "--font-size").
std::string flag_of(std::string_view field);

/// Library text as the command line prints it: each option_name in `marked` spelled as its
/// flag (flag_of). For InputError::marked() (error_text) and any text of the library's
/// that names options (the info summary).
std::string with_flags(std::string_view marked);

/// An InputError's message as the command line prints it: with_flags(e.marked()).
std::string error_text(const InputError& e);

/// A CLI11 check for counts (--threads, --jobs, --heads, ...): a whole number >= 1, with a
/// plain message ("--threads: expected a whole number of at least 1, got '0'").
const CLI::Validator& positive_count();

/// A CLI11 check for a precision (--precision, --dtype): f32 or f64.
const CLI::Validator& precision_name();

/// The names of the subcommands registered on `app`, in order.
std::vector<std::string> subcommand_names(const CLI::App& app);

/// " (did you mean '--causal'?)" for the first unknown --flag among `app`'s extras (the
/// arguments its parse left over); empty when none is close to a flag of `app`.
std::string flag_suggestion(const CLI::App& app);

/// The line (with its newline) a parse error of `root` prints: "attn: error: WHAT", the
/// closest flag for an unknown one, and "(see 'attn compute --help')" naming the command
/// being parsed (CLI11 reports errors through the root; `root` null: no hints).
std::string parse_error_text(const CLI::App* root, const CLI::Error& e);

/// "unknown command 'WORD' (did you mean 'compute'?) (see 'attn --help')", over the
/// subcommands of `root`.
InputError unknown_command(const CLI::App& root, const std::string& word);

} // namespace attn::cli

// Token labels from the command line: a comma-separated list, or a file that holds one
// token per line (so a token may contain ",") or a JSON list of strings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn::io {

/// The tokens `arg` names. An existing file is read: a JSON list of strings when its first
/// non-blank character is '[', else one token per line (LF or CR LF; the newline after
/// the last token is optional; a leading UTF-8 BOM is dropped). Anything else is split at
/// commas ("a,b,c"). A name that looks like a file (no comma, and a '/' or an extension
/// .txt/.json/.tokens) but does not exist is an error rather than one token.
/// Throws InputError starting with "FLAG ARG: ".
/// Example: parse_token_list("the,cat,sat", "tokens") -> {"the", "cat", "sat"}.
std::vector<std::string> parse_token_list(const std::string& arg, std::string_view flag);

/// The tokens of a token file's bytes (what parse_token_list does with a file): a JSON
/// list of strings when the first non-blank character is '[', else one token per line.
/// `name` prefixes every message. Throws InputError.
std::vector<std::string> parse_token_text(std::string_view text, std::string_view name);

} // namespace attn::io

// The texts a head census runs on (`attn census MODEL TEXTS`): JSON Lines of {"text": ...}
// or {"token_ids": [...]}, or plain text with one text per line. A reader of hostile input
// (tests/fuzz/targets/census_texts_fuzz.cpp). Does not: tokenize, or run the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::problem {

/// One text of a census: a string to tokenize (as "text" is), or ids used as given.
struct CensusText {
    std::optional<std::string> text;
    std::vector<std::int64_t> token_ids; ///< when !text: non-empty, each >= 0
    std::size_t line = 0;                ///< its line in the input, from 1
};

/// The texts of `bytes` (a file's or stdin's contents; `name` starts every message). The
/// input is JSON Lines when its first non-blank line starts with '{': every non-blank line
/// is then an object holding exactly one of "text" (a string) or "token_ids" (a non-empty
/// list of integer ids >= 0). Otherwise every non-blank line is one text (a trailing '\r'
/// dropped; the tokenizer refuses invalid UTF-8). Throws InputError "NAME: line N: ...".
std::vector<CensusText> read_census_texts(std::string_view bytes, std::string_view name);

} // namespace attn::problem

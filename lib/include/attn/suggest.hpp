// "Did you mean ...?": the closest of a set of names to a word the user typed, for the
// error messages of unknown commands, flags and problem fields. Plain strings, no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn {

/// The candidate closest to `word` by edit distance (insertions, deletions, substitutions
/// and swaps of adjacent characters, case-insensitive), if it is close enough to be a
/// likely typo: at most 1 edit for words of up to 4 characters, 2 up to 8, 3 beyond.
/// Ties go to the earlier candidate. Empty when nothing is that close.
std::string closest_name(std::string_view word, const std::vector<std::string>& candidates);

/// " (did you mean 'NAME'?)" for closest_name, or "" when there is none.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

} // namespace attn

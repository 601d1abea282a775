// tokenizer.json's "pre_tokenizer": the pieces the model sees. Hugging Face's split
// behaviours (split_piece) and each pre-tokenizer type a model folder carries (Sequence,
// ByteLevel with GPT-2's regex, Split, Metaspace, BertPreTokenizer, Whitespace,
// WhitespaceSplit, Punctuation, Digits). Regexes run on PCRE2 (tokenizer_regex.cpp).
#include "attn/error.hpp"
#include "detail.hpp"

#include <algorithm>
#include <array>

namespace attn::text::detail {

namespace {

using Matches = std::vector<std::pair<std::size_t, std::size_t>>;

/// GPT-2's pre-tokenizer regex, as Hugging Face's ByteLevel runs it.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// Each code point for which `pred` holds is one match.
template <class Pred> Matches char_matches(std::string_view s, Pred pred) {
    Matches out;
    const auto cps = code_points(s);
    for (std::size_t i = 0; i < cps.size(); ++i) {
        if (pred(cps[i].first)) {
            const std::size_t end = i + 1 < cps.size() ? cps[i + 1].second : s.size();
            out.emplace_back(cps[i].second, end);
        }
    }
    return out;
}

Matches literal_matches(std::string_view s, std::string_view literal) {
    Matches out;
    for (std::size_t at = s.find(literal); at != std::string_view::npos;
         at = s.find(literal, at + literal.size())) {
        out.emplace_back(at, at + literal.size());
    }
    return out;
}

/// A pre-tokenizer that splits every piece by `find`'s matches with `behavior`.
PreTokenizer splitter(std::function<Matches(std::string_view)> find,
                      SplitBehavior behavior,
                      bool invert = false) {
    return [find = std::move(find), behavior, invert](const std::vector<Piece>& pieces) {
        std::vector<Piece> out;
        for (const Piece& p : pieces) {
            for (Piece& q : split_piece(p, find(p.text), behavior, invert)) {
                out.push_back(std::move(q));
            }
        }
        return out;
    };
}

SplitBehavior
behavior_of(const nlohmann::json& j, const std::string& what, SplitBehavior fallback) {
    const auto name = field_or<std::string>(j, "behavior", "", what);
    if (name.empty()) {
        return fallback;
    }
    static const std::array<std::pair<std::string_view, SplitBehavior>, 5> names = {{
        {"Removed", SplitBehavior::removed},
        {"Isolated", SplitBehavior::isolated},
        {"MergedWithPrevious", SplitBehavior::merged_with_previous},
        {"MergedWithNext", SplitBehavior::merged_with_next},
        {"Contiguous", SplitBehavior::contiguous},
    }};
    for (const auto& [n, b] : names) {
        if (n == name) {
            return b;
        }
    }
    throw InputError(what + ": unknown behavior " + quote_input(name));
}

PreTokenizer split_pre_tokenizer(const nlohmann::json& j, const std::string& what) {
    const nlohmann::json pattern = field_or<nlohmann::json>(j, "pattern", nullptr, what);
    const SplitBehavior behavior = behavior_of(j, what, SplitBehavior::isolated);
    const bool invert = field_or<bool>(j, "invert", false, what);
    if (pattern.is_object() && pattern.contains("String")) {
        const auto literal = field_or<std::string>(pattern, "String", "", what + ": pattern");
        if (literal.empty()) {
            throw InputError(what + ": an empty pattern");
        }
        return splitter([literal](std::string_view s) { return literal_matches(s, literal); },
                        behavior,
                        invert);
    }
    if (pattern.is_object() && pattern.contains("Regex")) {
        const auto re = std::make_shared<const Regex>(
            field_or<std::string>(pattern, "Regex", "", what + ": pattern"), what);
        return splitter([re](std::string_view s) { return re->find_all(s); }, behavior, invert);
    }
    throw InputError(what + ": expected \"pattern\": {\"String\": ..} or {\"Regex\": ..}");
}

/// ByteLevel: a space before each piece (add_prefix_space), GPT-2's regex (use_regex),
/// then every byte as its stand-in from GPT-2's bytes_to_unicode.
PreTokenizer byte_level_pre_tokenizer(const nlohmann::json& j, const std::string& what) {
    const bool prefix = field_or<bool>(j, "add_prefix_space", true, what);
    const bool use_regex = field_or<bool>(j, "use_regex", true, what);
    const auto re = std::make_shared<const Regex>(kGpt2Pattern, what);
    return [=](std::vector<Piece> pieces) {
        std::vector<Piece> out;
        for (Piece& p : pieces) {
            if (prefix && (p.text.empty() || p.text.front() != ' ')) {
                p.text.insert(0, " ");
            }
            std::vector<Piece> parts;
            if (use_regex) {
                parts = split_piece(p, re->find_all(p.text), SplitBehavior::isolated, false);
            } else if (!p.text.empty()) {
                parts.push_back(std::move(p));
            }
            for (Piece& q : parts) {
                std::string mapped;
                mapped.reserve(q.text.size() * 2);
                for (const char c : q.text) {
                    append_utf8(mapped, byte_level_char(static_cast<std::uint8_t>(c)));
                }
                out.push_back({std::move(mapped), q.first});
            }
        }
        return out;
    };
}

/// Metaspace: spaces become the replacement (▁), which is prepended per prepend_scheme
/// ("always", "first": only to the piece that starts the text, "never"; older files say
/// add_prefix_space), then pieces split before each ▁ (unless "split": false).
PreTokenizer metaspace_pre_tokenizer(const nlohmann::json& j, const std::string& what) {
    const auto replacement = field_or<std::string>(j, "replacement", "\xE2\x96\x81", what);
    if (code_points(replacement).size() != 1) {
        throw InputError(what + ": \"replacement\" must be one character");
    }
    std::string scheme = field_or<bool>(j, "add_prefix_space", true, what) ? "always" : "never";
    scheme = field_or<std::string>(j, "prepend_scheme", scheme, what);
    if (scheme != "always" && scheme != "first" && scheme != "never") {
        throw InputError(what + ": unknown prepend_scheme " + quote_input(scheme));
    }
    const bool split = field_or<bool>(j, "split", true, what);
    return [=](const std::vector<Piece>& pieces) {
        std::vector<Piece> out;
        for (const Piece& p : pieces) {
            std::string text;
            for (const char c : p.text) {
                text += c == ' ' ? replacement : std::string(1, c);
            }
            const bool prepend = scheme == "always" || (scheme == "first" && p.first);
            if (prepend && text.compare(0, replacement.size(), replacement) != 0) {
                text.insert(0, replacement);
            }
            const Piece q{std::move(text), p.first};
            if (!split) {
                if (!q.text.empty()) {
                    out.push_back(q);
                }
                continue;
            }
            for (Piece& r : split_piece(q,
                                        literal_matches(q.text, replacement),
                                        SplitBehavior::merged_with_next,
                                        false)) {
                out.push_back(std::move(r));
            }
        }
        return out;
    };
}

PreTokenizer
sequence_pre_tokenizer(const nlohmann::json& j, const std::string& what, bool& byte_level) {
    const auto list = field_or<nlohmann::json>(j, "pretokenizers", nlohmann::json::array(), what);
    if (!list.is_array()) {
        throw InputError(what + ": \"pretokenizers\" must be a list");
    }
    std::vector<PreTokenizer> steps;
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (PreTokenizer p =
                make_pre_tokenizer(list[i], what + "[" + std::to_string(i) + "]", byte_level)) {
            steps.push_back(std::move(p));
        }
    }
    return [steps](std::vector<Piece> pieces) {
        for (const PreTokenizer& p : steps) {
            pieces = p(std::move(pieces));
        }
        return pieces;
    };
}

} // namespace

std::vector<Piece>
split_piece(const Piece& piece, const Matches& matches, SplitBehavior behavior, bool invert) {
    // The whole text as [begin, end) ranges, each a match or the gap between matches.
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>> parts;
    std::size_t at = 0;
    for (const auto& [b, e] : matches) {
        if (b > at) {
            parts.push_back({{at, b}, invert});
        }
        parts.push_back({{b, e}, !invert});
        at = e;
    }
    if (at < piece.text.size()) {
        parts.push_back({{at, piece.text.size()}, invert});
    }
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    bool previous_match = false;
    switch (behavior) {
    case SplitBehavior::removed:
    case SplitBehavior::isolated:
        for (const auto& [r, is_match] : parts) {
            if (!(is_match && behavior == SplitBehavior::removed)) {
                ranges.push_back(r);
            }
        }
        break;
    case SplitBehavior::merged_with_previous:
        for (const auto& [r, is_match] : parts) {
            if (is_match && !previous_match && !ranges.empty()) {
                ranges.back().second = r.second;
            } else {
                ranges.push_back(r);
            }
            previous_match = is_match;
        }
        break;
    case SplitBehavior::merged_with_next:
        for (std::size_t k = parts.size(); k-- > 0;) { // right to left
            const auto& [r, is_match] = parts[k];
            if (is_match && !previous_match && !ranges.empty()) {
                ranges.back().first = r.first;
            } else {
                ranges.push_back(r);
            }
            previous_match = is_match;
        }
        std::reverse(ranges.begin(), ranges.end());
        break;
    case SplitBehavior::contiguous:
        for (std::size_t i = 0; i < parts.size(); ++i) {
            if (i > 0 && parts[i].second == previous_match) {
                ranges.back().second = parts[i].first.second;
            } else {
                ranges.push_back(parts[i].first);
            }
            previous_match = parts[i].second;
        }
        break;
    }
    std::vector<Piece> out;
    for (const auto& [b, e] : ranges) {
        if (e > b) {
            out.push_back({piece.text.substr(b, e - b), piece.first && b == 0});
        }
    }
    return out;
}

char32_t byte_level_char(std::uint8_t b) {
    // Printable Latin-1 bytes stand for themselves; the others (0-32, 127-160, 173) take
    // the code points from U+0100 on, in byte order.
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    if (printable) {
        return b;
    }
    unsigned n = 0;
    for (unsigned k = 0; k < b; ++k) {
        const bool p = (k >= 33 && k <= 126) || (k >= 161 && k <= 172) || k >= 174;
        n += p ? 0 : 1;
    }
    return 0x100 + n;
}

PreTokenizer
make_pre_tokenizer(const nlohmann::json& j, const std::string& name, bool& byte_level) {
    if (j.is_null()) {
        return {};
    }
    const std::string what =
        name.find("pre_tokenizer") == std::string::npos ? name + ": pre_tokenizer" : name;
    const auto type = field_or<std::string>(j, "type", "", what);
    if (type == "Sequence") {
        return sequence_pre_tokenizer(j, what, byte_level);
    }
    if (type == "ByteLevel") {
        byte_level = true;
        return byte_level_pre_tokenizer(j, what);
    }
    if (type == "Split") {
        return split_pre_tokenizer(j, what);
    }
    if (type == "Metaspace") {
        return metaspace_pre_tokenizer(j, what);
    }
    if (type == "BertPreTokenizer") {
        const PreTokenizer spaces =
            splitter([](std::string_view s) { return char_matches(s, is_whitespace); },
                     SplitBehavior::removed);
        const PreTokenizer punct =
            splitter([](std::string_view s) { return char_matches(s, is_punctuation); },
                     SplitBehavior::isolated);
        return [=](std::vector<Piece> p) { return punct(spaces(std::move(p))); };
    }
    if (type == "Whitespace") {
        const auto re = std::make_shared<const Regex>(R"(\w+|[^\w\s]+)", what);
        return splitter(
            [re](std::string_view s) { return re->find_all(s); }, SplitBehavior::removed, true);
    }
    if (type == "WhitespaceSplit") {
        return splitter([](std::string_view s) { return char_matches(s, is_whitespace); },
                        SplitBehavior::removed);
    }
    if (type == "Punctuation") {
        return splitter([](std::string_view s) { return char_matches(s, is_punctuation); },
                        behavior_of(j, what, SplitBehavior::isolated));
    }
    if (type == "Digits") {
        const bool individual = field_or<bool>(j, "individual_digits", false, what);
        return splitter([](std::string_view s) { return char_matches(s, is_numeric); },
                        individual ? SplitBehavior::isolated : SplitBehavior::contiguous);
    }
    throw InputError(what + ": unsupported type " + quote_input(type) +
                     " (supported: Sequence, ByteLevel, Split, Metaspace, BertPreTokenizer, "
                     "Whitespace, WhitespaceSplit, Punctuation, Digits)");
}

} // namespace attn::text::detail

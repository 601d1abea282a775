// tokenizer.json's "normalizer": each type Hugging Face's tokenizers declares that a
// model folder carries (Sequence, NFC/NFD/NFKC/NFKD, Lowercase, Strip, StripAccents,
// Replace, Prepend, BertNormalizer, ByteLevel) as a function of the text. Precompiled
// (SentencePiece's charsmap) is refused: read the folder's tokenizer.model instead.
#include "attn/error.hpp"
#include "detail.hpp"

namespace attn::text::detail {

namespace {

/// The text with each code point c replaced by f(c) (appended to the output string).
template <class F> std::string map_chars(std::string_view s, F f) {
    std::string out;
    out.reserve(s.size());
    for (const auto& [c, at] : code_points(s)) {
        f(c, out);
    }
    return out;
}

bool is_chinese_char(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::string strip_nonspacing(std::string_view s) {
    return map_chars(s, [](char32_t c, std::string& out) {
        if (!is_nonspacing_mark(c)) {
            append_utf8(out, c);
        }
    });
}

/// BERT's normalizer (Hugging Face's BertNormalizer, transformers' BasicTokenizer):
/// clean_text drops NUL, U+FFFD and control characters and turns whitespace into ' ';
/// handle_chinese_chars puts spaces around CJK ideographs; strip_accents (default: as
/// lowercase) is NFD without nonspacing marks; then lowercase.
Normalizer bert_normalizer(const nlohmann::json& j, const std::string& what) {
    const bool clean = field_or<bool>(j, "clean_text", true, what);
    const bool chinese = field_or<bool>(j, "handle_chinese_chars", true, what);
    const bool lower = field_or<bool>(j, "lowercase", true, what);
    const bool strip = field_or<bool>(j, "strip_accents", lower, what);
    return [=](std::string_view in) {
        std::string s(in);
        if (clean) {
            s = map_chars(s, [](char32_t c, std::string& out) {
                const bool space = c == '\t' || c == '\n' || c == '\r' || is_whitespace(c);
                if (space) {
                    out.push_back(' ');
                } else if (c != 0 && c != 0xFFFD && !is_other(c)) {
                    append_utf8(out, c);
                }
            });
        }
        if (chinese) {
            s = map_chars(s, [](char32_t c, std::string& out) {
                if (is_chinese_char(c)) {
                    out.push_back(' ');
                    append_utf8(out, c);
                    out.push_back(' ');
                } else {
                    append_utf8(out, c);
                }
            });
        }
        if (strip) {
            s = strip_nonspacing(normalize_form(s, "NFD"));
        }
        return lower ? to_lower(s) : s;
    };
}

Normalizer strip_normalizer(const nlohmann::json& j, const std::string& what) {
    const bool left = field_or<bool>(j, "strip_left", true, what);
    const bool right = field_or<bool>(j, "strip_right", true, what);
    return [=](std::string_view s) {
        const auto cps = code_points(s);
        std::size_t b = 0;
        std::size_t e = cps.size();
        while (left && b < e && is_whitespace(cps[b].first)) {
            ++b;
        }
        while (right && e > b && is_whitespace(cps[e - 1].first)) {
            --e;
        }
        const std::size_t from = b < cps.size() ? cps[b].second : s.size();
        const std::size_t to = e < cps.size() ? cps[e].second : s.size();
        return std::string(s.substr(from, to - from));
    };
}

/// Replace: every match of {"String": s} or {"Regex": r} becomes "content".
Normalizer replace_normalizer(const nlohmann::json& j, const std::string& what) {
    const nlohmann::json pattern = field_or<nlohmann::json>(j, "pattern", nullptr, what);
    const auto content = field_or<std::string>(j, "content", "", what);
    check_utf8(content, what + ": content");
    std::string regex;
    if (pattern.is_object() && pattern.contains("String")) {
        const auto literal = field_or<std::string>(pattern, "String", "", what + ": pattern");
        check_utf8(literal, what + ": pattern");
        if (literal.empty()) {
            throw InputError(what + ": an empty pattern");
        }
        regex = Regex::quote(literal);
    } else if (pattern.is_object() && pattern.contains("Regex")) {
        regex = field_or<std::string>(pattern, "Regex", "", what + ": pattern");
        check_utf8(regex, what + ": pattern");
    } else {
        throw InputError(what + ": expected \"pattern\": {\"String\": ..} or {\"Regex\": ..}");
    }
    const auto re = std::make_shared<const Regex>(regex, what);
    return [=](std::string_view s) {
        std::string out;
        std::size_t at = 0;
        for (const auto& [b, e] : re->find_all(s)) {
            out.append(s.substr(at, b - at));
            out.append(content);
            at = e;
        }
        out.append(s.substr(at));
        return out;
    };
}

Normalizer sequence_normalizer(const nlohmann::json& j, const std::string& what) {
    const auto list = field_or<nlohmann::json>(j, "normalizers", nlohmann::json::array(), what);
    if (!list.is_array()) {
        throw InputError(what + ": \"normalizers\" must be a list");
    }
    std::vector<Normalizer> steps;
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (Normalizer n = make_normalizer(list[i], what + "[" + std::to_string(i) + "]")) {
            steps.push_back(std::move(n));
        }
    }
    return [steps](std::string_view s) {
        std::string text(s);
        for (const Normalizer& n : steps) {
            text = n(text);
        }
        return text;
    };
}

} // namespace

Normalizer make_normalizer(const nlohmann::json& j, const std::string& name) {
    if (j.is_null()) {
        return {};
    }
    const std::string what =
        name.find("normalizer") == std::string::npos ? name + ": normalizer" : name;
    const auto type = field_or<std::string>(j, "type", "", what);
    if (type == "Sequence") {
        return sequence_normalizer(j, what);
    }
    if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
        return [type](std::string_view s) { return normalize_form(s, type); };
    }
    if (type == "Lowercase") {
        return [](std::string_view s) { return to_lower(s); };
    }
    if (type == "StripAccents") {
        return [](std::string_view s) { return strip_nonspacing(s); };
    }
    if (type == "Strip") {
        return strip_normalizer(j, what);
    }
    if (type == "Replace") {
        return replace_normalizer(j, what);
    }
    if (type == "Prepend") {
        const auto prepend = field_or<std::string>(j, "prepend", "", what);
        check_utf8(prepend, what + ": prepend");
        return [prepend](std::string_view s) {
            return s.empty() ? std::string() : prepend + std::string(s);
        };
    }
    if (type == "BertNormalizer") {
        return bert_normalizer(j, what);
    }
    if (type == "ByteLevel") {
        return [](std::string_view s) {
            std::string out;
            for (const char c : s) {
                append_utf8(out, byte_level_char(static_cast<std::uint8_t>(c)));
            }
            return out;
        };
    }
    throw InputError(what + ": unsupported type " + quote_input(type) +
                     " (supported: Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
                     "StripAccents, Replace, Prepend, BertNormalizer, ByteLevel)");
}

} // namespace attn::text::detail

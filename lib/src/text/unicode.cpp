// Unicode for the tokenizers: UTF-8 checks and decoding, character classes as Rust's char
// methods define them, normalization forms and lowercasing, all through ICU. No tokenizer
// logic here.
#include "attn/error.hpp"
#include "detail.hpp"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

namespace attn::text::detail {

namespace {

/// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no
/// surrogates, nothing past U+10FFFF), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b = byte(i);
    const std::size_t left = s.size() - i;
    const auto cont = [&](std::size_t k) { return k < left && (byte(i + k) & 0xC0) == 0x80; };
    if (b < 0x80) {
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        return cont(1) ? 2 : 0;
    }
    if (b >= 0xE0 && b <= 0xEF) {
        if (!cont(1) || !cont(2)) {
            return 0;
        }
        const unsigned char c = byte(i + 1);
        if ((b == 0xE0 && c < 0xA0) || (b == 0xED && c >= 0xA0)) {
            return 0;
        }
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (!cont(1) || !cont(2) || !cont(3)) {
            return 0;
        }
        const unsigned char c = byte(i + 1);
        if ((b == 0xF0 && c < 0x90) || (b == 0xF4 && c >= 0x90)) {
            return 0;
        }
        return 4;
    }
    return 0;
}

std::string to_utf8(const icu::UnicodeString& u) {
    std::string out;
    u.toUTF8String(out);
    return out;
}

icu::UnicodeString from_utf8(std::string_view s) {
    return icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<int32_t>(s.size())));
}

} // namespace

void check_utf8(std::string_view s, std::string_view name) {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = utf8_length(s, i);
        if (n == 0) {
            throw InputError(std::string(name) + ": invalid UTF-8 at byte " + std::to_string(i));
        }
        i += n;
    }
}

std::vector<std::pair<char32_t, std::size_t>> code_points(std::string_view s) {
    std::vector<std::pair<char32_t, std::size_t>> out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = utf8_length(s, i);
        ATTN_ASSERT(n != 0);
        auto c = static_cast<char32_t>(static_cast<unsigned char>(s[i]));
        if (n > 1) {
            c &= 0x3FU >> (n - 1);
            for (std::size_t k = 1; k < n; ++k) {
                c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3FU);
            }
        }
        out.emplace_back(c, i);
        i += n;
    }
    return out;
}

void append_utf8(std::string& out, char32_t c) {
    const auto put = [&](unsigned v) { out.push_back(static_cast<char>(v)); };
    if (c < 0x80) {
        put(c);
    } else if (c < 0x800) {
        put(0xC0 | (c >> 6));
        put(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        put(0xE0 | (c >> 12));
        put(0x80 | ((c >> 6) & 0x3F));
        put(0x80 | (c & 0x3F));
    } else {
        put(0xF0 | (c >> 18));
        put(0x80 | ((c >> 12) & 0x3F));
        put(0x80 | ((c >> 6) & 0x3F));
        put(0x80 | (c & 0x3F));
    }
}

bool is_whitespace(char32_t c) {
    return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE) != 0;
}

bool is_punctuation(char32_t c) {
    if (c < 0x80) {
        return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126);
    }
    return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_P_MASK) != 0;
}

bool is_other(char32_t c) {
    constexpr auto other = U_GC_CC_MASK | U_GC_CF_MASK | U_GC_CS_MASK | U_GC_CO_MASK | U_GC_CN_MASK;
    return (U_GET_GC_MASK(static_cast<UChar32>(c)) & other) != 0;
}

bool is_nonspacing_mark(char32_t c) {
    return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_MN_MASK) != 0;
}

bool is_alphanumeric(char32_t c) {
    constexpr auto alnum = U_GC_L_MASK | U_GC_N_MASK;
    return (U_GET_GC_MASK(static_cast<UChar32>(c)) & alnum) != 0;
}

bool is_numeric(char32_t c) {
    return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_N_MASK) != 0;
}

std::string normalize_form(std::string_view s, std::string_view form) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = nullptr;
    if (form == "NFC") {
        n = icu::Normalizer2::getNFCInstance(status);
    } else if (form == "NFD") {
        n = icu::Normalizer2::getNFDInstance(status);
    } else if (form == "NFKC") {
        n = icu::Normalizer2::getNFKCInstance(status);
    } else {
        ATTN_ASSERT(form == "NFKD");
        n = icu::Normalizer2::getNFKDInstance(status);
    }
    if (U_FAILURE(status)) {
        throw SystemError("ICU: cannot load the " + std::string(form) + " normalizer");
    }
    const icu::UnicodeString out = n->normalize(from_utf8(s), status);
    if (U_FAILURE(status)) {
        throw SystemError("ICU: " + std::string(form) + " normalization failed");
    }
    return to_utf8(out);
}

std::string to_lower(std::string_view s) {
    // One code point at a time, as Rust's char::to_lowercase (which Hugging Face's
    // normalizers call): full mappings (İ -> i̇) but no context, so Σ is always σ.
    std::string out;
    out.reserve(s.size());
    for (const auto& [c, at] : code_points(s)) {
        if (c < 0x80) {
            out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c));
            continue;
        }
        icu::UnicodeString u(static_cast<UChar32>(c));
        u.toLower(icu::Locale::getRoot());
        out += to_utf8(u);
    }
    return out;
}

} // namespace attn::text::detail

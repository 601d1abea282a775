// The pre-tokenizers' regular expressions through PCRE2 (UTF + UCP, so \s, \w, \d and
// \p{L}, \p{N} are Unicode's, as Oniguruma runs Hugging Face's patterns), JIT-compiled when
// PCRE2 can. Only compiling, matching and quoting live here.
#define PCRE2_CODE_UNIT_WIDTH 8

#include "attn/error.hpp"
#include "detail.hpp"

#include <array>
#include <cctype>
#include <memory>
#include <pcre2.h>

namespace attn::text::detail {

namespace {

pcre2_code* code_of(void* p) {
    return static_cast<pcre2_code*>(p);
}

struct MatchDataDeleter {
    void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

} // namespace

Regex::Regex(std::string_view pattern, std::string_view name) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                                     pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP,
                                     &error,
                                     &offset,
                                     nullptr);
    if (code == nullptr) {
        std::array<PCRE2_UCHAR, 256> text{};
        pcre2_get_error_message(error, text.data(), text.size());
        throw InputError(std::string(name) + ": invalid regex at offset " + std::to_string(offset) +
                         ": " + reinterpret_cast<const char*>(text.data()));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); // a failure leaves the interpreter: fine
    code_ = code;
}

Regex::~Regex() {
    pcre2_code_free(code_of(code_));
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(std::string_view s) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    const std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
        pcre2_match_data_create_from_pattern(code_of(code_), nullptr));
    if (!data) {
        throw std::bad_alloc();
    }
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    std::size_t start = 0;
    while (start <= s.size()) {
        // The text was checked as UTF-8 before it got here, so PCRE2 need not check again.
        const int rc = pcre2_match(
            code_of(code_), subject, s.size(), start, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) {
            break;
        }
        if (rc < 0) {
            std::array<PCRE2_UCHAR, 256> text{};
            pcre2_get_error_message(rc, text.data(), text.size());
            throw InputError(std::string("regex match failed: ") +
                             reinterpret_cast<const char*>(text.data()));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
        out.emplace_back(ov[0], ov[1]);
        if (ov[1] > ov[0]) {
            start = ov[1];
            continue;
        }
        // An empty match: step over one code point.
        start = ov[1] + 1;
        while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
            ++start;
        }
    }
    return out;
}

std::string Regex::quote(std::string_view literal) {
    std::string out;
    for (const char c : literal) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80 && std::isalnum(u) == 0) {
            out.push_back('\\'); // a backslash before a non-alphanumeric: that character
        }
        out.push_back(c);
    }
    return out;
}

} // namespace attn::text::detail

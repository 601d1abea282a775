// The parts of a tokenizer.json pipeline, shared by the files that build and run them:
// Unicode helpers (ICU), the PCRE2 regex, normalizers, pre-tokenizers and models. Private
// to attn_text; the public face is attn/text/tokenizer.hpp.
#pragma once

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/number_text.hpp"
#include "attn/text/tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace attn::text::detail {

// The io readers' helpers (quote_name, message pieces), under the tokenizers' own detail
// namespace.
using namespace io::detail;

// --- Unicode (tokenizer_unicode.cpp) ---------------------------------------------------

/// Throws InputError("NAME: invalid UTF-8 at byte N") unless `s` is well-formed UTF-8.
void check_utf8(std::string_view s, std::string_view name);
/// The code points of valid UTF-8 `s` and each one's byte offset.
std::vector<std::pair<char32_t, std::size_t>> code_points(std::string_view s);
void append_utf8(std::string& out, char32_t c);
/// Rust's char::is_whitespace (the White_Space property).
bool is_whitespace(char32_t c);
/// Unicode general category P* or ASCII punctuation (Hugging Face's is_bert_punc).
bool is_punctuation(char32_t c);
/// Categories Cc, Cf, Cs, Co, Cn (Rust's is_other).
bool is_other(char32_t c);
bool is_nonspacing_mark(char32_t c);
bool is_alphanumeric(char32_t c);
/// General category N* (Rust's char::is_numeric).
bool is_numeric(char32_t c);
/// Unicode normalization form "NFC", "NFD", "NFKC" or "NFKD" of valid UTF-8.
std::string normalize_form(std::string_view s, std::string_view form);
/// Full lowercase mapping of each code point on its own (Rust's char::to_lowercase).
std::string to_lower(std::string_view s);

// --- Regex (tokenizer_regex.cpp) -------------------------------------------------------

/// A PCRE2 pattern compiled with UTF and UCP (Unicode classes for \s, \w, \d, \p{..}), as
/// Oniguruma runs Hugging Face's patterns. Matching is thread-safe (match data per call).
class Regex {
  public:
    /// Throws InputError("NAME: invalid regex ...").
    Regex(std::string_view pattern, std::string_view name);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;
    Regex(Regex&&) = delete;
    Regex& operator=(Regex&&) = delete;
    /// Every non-overlapping match [begin, end) in valid UTF-8 `s`, left to right (an empty
    /// match advances one code point).
    std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view s) const;
    /// PCRE2's quoting of a literal string.
    static std::string quote(std::string_view literal);

  private:
    void* code_ = nullptr; // pcre2_code_8*
};

// --- Pieces and splitting (tokenizer_pretokenizers.cpp) --------------------------------

/// A piece of text on its way to the model; `first`: it starts the original text (what
/// Metaspace's prepend_scheme "first" asks).
struct Piece {
    std::string text;
    bool first = false;
};

enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

/// Hugging Face's SplitDelimiterBehavior over `matches` ([begin, end) in order): the
/// non-empty sub-pieces of `piece` (only the one at offset 0 keeps `first`).
std::vector<Piece> split_piece(const Piece& piece,
                               const std::vector<std::pair<std::size_t, std::size_t>>& matches,
                               SplitBehavior behavior,
                               bool invert);

using Normalizer = std::function<std::string(std::string_view)>;
using PreTokenizer = std::function<std::vector<Piece>(std::vector<Piece>)>;

/// The normalizer a tokenizer.json "normalizer" object declares (null: none, an empty
/// function). Throws InputError("NAME: normalizer: ...") for an unknown type.
Normalizer make_normalizer(const nlohmann::json& j, const std::string& name);
/// The pre-tokenizer a "pre_tokenizer" object declares (null: the whole piece).
/// `byte_level` is set when a ByteLevel pre-tokenizer maps bytes to its alphabet.
PreTokenizer make_pre_tokenizer(const nlohmann::json& j, const std::string& name, bool& byte_level);

/// GPT-2's bytes_to_unicode: the code point that stands for byte b.
char32_t byte_level_char(std::uint8_t b);

// --- Models (tokenizer_bpe.cpp, tokenizer_wordpiece.cpp) -------------------------------

struct Token {
    std::int64_t id = 0;
    std::string text;
};

class Model {
  public:
    virtual ~Model() = default;
    Model() = default;
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;
    Model(Model&&) = delete;
    Model& operator=(Model&&) = delete;
    /// Appends the tokens of one pre-tokenized piece (non-empty, valid UTF-8).
    virtual void tokenize(std::string_view word, std::vector<Token>& out) const = 0;
    /// The id of a vocabulary string, or -1.
    virtual std::int64_t id_of(std::string_view token) const = 0;
};

/// The vocabulary object {"token": id, ...}: strings checked for UTF-8, ids distinct
/// non-negative integers. Throws InputError naming `what`.
std::vector<std::pair<std::string, std::int64_t>> read_vocab(const nlohmann::json& j,
                                                             const std::string& what);

/// A tokenizer.json document already parsed (a GGUF's vocabulary is built as one).
std::unique_ptr<Tokenizer> make_json_tokenizer(const nlohmann::json& doc, const std::string& name);

std::unique_ptr<Model> make_bpe(const nlohmann::json& j, const std::string& name);
std::unique_ptr<Model> make_wordpiece(const nlohmann::json& j, const std::string& name);

/// A string from the input quoted for a one-line message (control characters escaped, cut
/// to 80 bytes).
inline std::string quote_input(std::string_view s) {
    return "\"" + io::message_text(s, 80) + "\"";
}

/// JSON access with one-line errors: `key` of object `j` as T, `fallback` when absent or null.
template <class T>
T field_or(const nlohmann::json& j, const char* key, T fallback, const std::string& what) {
    if (!j.is_object()) {
        throw InputError(what + ": expected an object, got " + std::string(j.type_name()));
    }
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
        return fallback;
    }
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // nlohmann's get<T> of a float or an out-of-range integer is a cast out of range
        // (undefined; fuzzing found 4.6e26): only integers T holds are taken.
        const bool fits = it->is_number_unsigned()
                              ? it->template get<std::uint64_t>() <=
                                    static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                              : it->is_number_integer() && std::is_signed_v<T> &&
                                    it->template get<std::int64_t>() >=
                                        static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
                                    it->template get<std::int64_t>() <=
                                        static_cast<std::int64_t>(std::numeric_limits<T>::max());
        if (!fits) {
            throw InputError(what + ": \"" + key + "\": expected an integer in [" +
                             std::to_string(std::numeric_limits<T>::min()) + ", " +
                             std::to_string(std::numeric_limits<T>::max()) + "], got " +
                             io::message_text(it->dump(), 40));
        }
    }
    try {
        return it->template get<T>();
    } catch (const nlohmann::json::exception&) {
        throw InputError(what + ": \"" + key + "\" has the wrong type (" +
                         std::string(it->type_name()) + ")");
    }
}

} // namespace attn::text::detail

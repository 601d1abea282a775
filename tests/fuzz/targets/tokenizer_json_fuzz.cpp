// Fuzz target: tokenizer.json documents (text::parse_tokenizer_json). Properties: nothing but
// InputError escapes, its message is one line; a tokenizer that loads encodes a few fixed
// texts (every script, emoji, whitespace, the empty text) with and without special tokens,
// again with InputError alone escaping (a fuzzed regex may hit PCRE2's match limit), and
// gives one id, one vocabulary string and one label per token.
#include "attn/text/tokenizer.hpp"
#include "fuzz_common.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

using namespace attn;

ATTN_FUZZ_TARGET(tokenizer_json) {
    const std::string_view text = fuzz::input_text(data, size);
    std::unique_ptr<text::Tokenizer> tokenizer;
    if (!fuzz::only_input_errors("parse_tokenizer_json", [&] {
            tokenizer = text::parse_tokenizer_json(text, "fuzz.json");
        })) {
        return 0;
    }
    static constexpr std::array<std::string_view, 5> texts = {
        "",
        "Hello world, it's 2024!",
        "  \t\n\n ab  ",
        "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xE6\x97\xA5\xE6\x9C\xAC",
        "<s>[CLS]<|endoftext|> caf\xC3\xA9 e\xCC\x81"};
    for (const std::string_view t : texts) {
        for (const bool special : {true, false}) {
            text::Encoding e;
            if (!fuzz::only_input_errors("encode", [&] { e = tokenizer->encode(t, special); })) {
                continue;
            }
            fuzz::expect(e.ids.size() == e.tokens.size() && e.ids.size() == e.labels.size(),
                         "ids, tokens and labels differ in count");
        }
    }
    return 0;
}

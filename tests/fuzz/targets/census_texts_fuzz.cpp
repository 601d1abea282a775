// Fuzz target: the texts of `attn census` (problem::read_census_texts: JSON Lines of
// {"text": ...} or {"token_ids": [...]}, or plain lines). Properties: nothing but
// InputError escapes, its message is one line; every text read has a line number within
// the input and is a string or non-empty ids >= 0; a plain-text input read again from its
// texts joined by '\n' gives the same texts (unless one ends in a CR the join would drop).
#include "attn/problem/census_texts.hpp"
#include "fuzz_common.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace attn;

ATTN_FUZZ_TARGET(census_texts) {
    const std::string_view bytes = fuzz::input_text(data, size);
    std::vector<problem::CensusText> texts;
    if (!fuzz::only_input_errors("read_census_texts", [&] {
            texts = problem::read_census_texts(bytes, "fuzz.jsonl");
        })) {
        return 0;
    }
    fuzz::expect(!texts.empty(), "no texts and no error");
    const std::size_t lines =
        static_cast<std::size_t>(std::count(bytes.begin(), bytes.end(), '\n')) + 1;
    bool plain = true;
    std::string joined;
    for (const problem::CensusText& t : texts) {
        fuzz::expect(t.line >= 1 && t.line <= lines, "a text's line is outside the input");
        if (!t.text) {
            plain = false;
            fuzz::expect(!t.token_ids.empty(), "empty token ids accepted");
            for (const std::int64_t id : t.token_ids) {
                fuzz::expect(id >= 0, "a negative token id accepted");
            }
        } else {
            plain = plain && (t.text->empty() || t.text->back() != '\r'); // a second CR
            joined += (joined.empty() ? "" : "\n") + *t.text;
        }
    }
    const std::size_t first = bytes.find_first_not_of(" \t\r\n");
    if (plain && first != std::string_view::npos && bytes[first] != '{') {
        std::vector<problem::CensusText> again;
        fuzz::expect(fuzz::only_input_errors(
                         "reread", [&] { again = problem::read_census_texts(joined, "rt"); }),
                     "the texts joined do not read back");
        fuzz::expect(again.size() == texts.size(), "the texts joined read back as another count");
        for (std::size_t i = 0; i < again.size() && i < texts.size(); ++i) {
            fuzz::expect(again[i].text == texts[i].text, "a text reads back changed");
        }
    }
    return 0;
}

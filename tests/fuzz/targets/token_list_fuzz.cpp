// Fuzz target: token files for labels (io::parse_token_text: a JSON list of strings, or
// one token per line). Properties: nothing but InputError escapes, its message is one
// line; a line file round-trips (its tokens joined by "\n" parse to the same tokens), and
// a JSON list round-trips through nlohmann's dump.
#include "attn/io/token_list.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

using namespace attn;

ATTN_FUZZ_TARGET(token_list) {
    const std::string_view text = fuzz::input_text(data, size);
    std::vector<std::string> tokens;
    if (!fuzz::only_input_errors("parse_token_text",
                                 [&] { tokens = io::parse_token_text(text, "fuzz.txt"); })) {
        return 0;
    }
    std::string joined;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        joined += (i == 0 ? "" : "\n") + tokens[i];
    }
    const std::size_t first = joined.find_first_not_of(" \t\r\n");
    const bool json_like = first != std::string::npos && joined[first] == '[';
    const bool line_safe = !joined.empty() && !json_like && joined.rfind("\xEF\xBB\xBF", 0) != 0;
    bool any_special = false; // tokens a line file cannot hold: newlines, a final CR
    for (const auto& t : tokens) {
        any_special =
            any_special || t.find('\n') != std::string::npos || (!t.empty() && t.back() == '\r');
    }
    if (line_safe && !any_special && !(tokens.size() > 1 && tokens.back().empty())) {
        std::vector<std::string> again;
        fuzz::expect(fuzz::only_input_errors(
                         "reparse lines", [&] { again = io::parse_token_text(joined, "rt.txt"); }),
                     "joined tokens do not parse");
        fuzz::expect(again == tokens, "line tokens change on a round trip");
    }
    // Any token list as JSON (dump escapes everything, invalid UTF-8 replaced).
    const std::string dumped =
        nlohmann::json(tokens).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::vector<std::string> from_json;
    fuzz::expect(fuzz::only_input_errors(
                     "reparse json", [&] { from_json = io::parse_token_text(dumped, "rt.json"); }),
                 "a dumped JSON list does not parse");
    fuzz::expect(from_json.size() == tokens.size(), "JSON round trip changes the count");
    return 0;
}

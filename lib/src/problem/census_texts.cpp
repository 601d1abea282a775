// The census's texts (attn/problem/census_texts.hpp): JSON Lines or plain lines, each line
// checked as it is read, with its number in every message.
#include "attn/problem/census_texts.hpp"

#include "attn/error.hpp"
#include "attn/io/json_lines.hpp"
#include "decode_detail.hpp"

#include <cmath>

namespace attn::problem {

using nlohmann::json;

namespace {

/// A JSON Lines text: {"text": STRING} or {"token_ids": [ID, ...]}.
CensusText json_text(const json& doc, std::size_t line) {
    const auto bad = [&](const std::string& why) {
        return InputError("line " + std::to_string(line) + ": " + why);
    };
    if (!doc.is_object() || doc.size() != 1 ||
        !(doc.contains("text") || doc.contains("token_ids"))) {
        throw bad("expected {\"text\": STRING} or {\"token_ids\": [ID, ...]}, got " +
                  detail::shown(doc));
    }
    CensusText t;
    t.line = line;
    if (doc.contains("text")) {
        if (!doc["text"].is_string()) {
            throw bad("text: expected a string, got " + detail::shown(doc["text"]));
        }
        t.text = doc["text"].get<std::string>();
        return t;
    }
    const json& ids = doc["token_ids"];
    if (!ids.is_array() || ids.empty()) {
        throw bad("token_ids: expected a non-empty list of token ids, got " + detail::shown(ids));
    }
    for (const json& id : ids) {
        if (!id.is_number_unsigned() || id.get<std::uint64_t>() > (std::uint64_t{1} << 53)) {
            throw bad("token_ids: expected token ids (integers >= 0), got " + detail::shown(id));
        }
        t.token_ids.push_back(static_cast<std::int64_t>(id.get<std::uint64_t>()));
    }
    return t;
}

} // namespace

std::vector<CensusText> read_census_texts(std::string_view bytes, std::string_view name) {
    std::vector<CensusText> out;
    std::optional<bool> json_lines; // decided by the first non-blank line
    std::size_t line = 0;
    for (std::size_t at = 0; at < bytes.size();) {
        const std::size_t end = std::min(bytes.find('\n', at), bytes.size());
        std::string_view text = bytes.substr(at, end - at);
        at = end + 1;
        ++line;
        if (io::blank_line(text)) {
            continue;
        }
        if (!text.empty() && text.back() == '\r') {
            text.remove_suffix(1);
        }
        if (!json_lines) {
            json_lines = text.find_first_not_of(" \t") != std::string_view::npos &&
                         text[text.find_first_not_of(" \t")] == '{';
        }
        try {
            if (*json_lines) {
                out.push_back(json_text(io::parse_json_line(text, line), line));
            } else {
                out.push_back({std::string(text), {}, line});
            }
        } catch (const InputError& e) {
            throw InputError(std::string(name) + ": " + e.marked());
        }
    }
    if (out.empty()) {
        throw InputError(std::string(name) + ": no texts (one per line, or JSON Lines of "
                                             "{\"text\": ...} or {\"token_ids\": [...]})");
    }
    return out;
}

} // namespace attn::problem

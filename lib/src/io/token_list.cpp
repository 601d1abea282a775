// Token lists for labels: comma-separated on the command line, or a file (one per line, or
// a JSON list). Reads through io::read_file, so the memory limit holds.
#include "attn/io/token_list.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

namespace attn::io {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

std::vector<std::string> split(std::string_view text, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t at = text.find(sep, start);
        out.emplace_back(text.substr(start, at == std::string_view::npos ? at : at - start));
        if (at == std::string_view::npos) {
            return out;
        }
        start = at + 1;
    }
}

} // namespace

std::vector<std::string> parse_token_text(std::string_view text, std::string_view name_view) {
    const std::string name(name_view);
    if (text.substr(0, 3) == "\xEF\xBB\xBF") {
        text.remove_prefix(3);
    }
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && text[first] == '[') {
        const nlohmann::json doc = parse_json_text(text, name);
        std::vector<std::string> out;
        for (const auto& t : doc) {
            if (!t.is_string()) {
                throw InputError::string_list_item(name, out.size(), t.type_name());
            }
            out.push_back(t.get<std::string>());
        }
        return out;
    }
    if (text.empty()) {
        throw InputError(name + ": the file is empty (expected one token per line)");
    }
    if (text.back() == '\n') {
        text.remove_suffix(1);
    }
    std::vector<std::string> out = split(text, '\n');
    for (std::string& t : out) {
        if (!t.empty() && t.back() == '\r') {
            t.pop_back();
        }
    }
    return out;
}

std::vector<std::string> parse_token_list(const std::string& arg, std::string_view flag) {
    std::error_code ec;
    if (!arg.empty() && std::filesystem::exists(arg, ec)) {
        const std::vector<std::uint8_t> bytes = read_file(arg);
        return parse_token_text(
            std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
            std::string(flag) + " " + arg);
    }
    const bool looks_like_file = arg.find(',') == std::string::npos &&
                                 (arg.find('/') != std::string::npos || ends_with(arg, ".txt") ||
                                  ends_with(arg, ".json") || ends_with(arg, ".tokens"));
    if (looks_like_file) {
        throw InputError(std::string(flag) + " " + arg +
                         ": no such file (give a file with one token per line, or tokens "
                         "separated by commas)");
    }
    return split(arg, ',');
}

} // namespace attn::io

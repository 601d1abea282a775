// Finding and loading a model's tokenizer (a folder's tokenizer.json, else its
// tokenizer.model and tokenizer_config.json's add_bos_token/add_eos_token), and tokens
// shown readably as labels. The pipelines themselves live in tokenizer_json.cpp and
// tokenizer_sentencepiece.cpp.
#include "attn/text/tokenizer.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/number_text.hpp"
#include "attn/model/gguf.hpp"
#include "detail.hpp"

#include <array>
#include <cstdio>

namespace attn::text {

using model::GgufFile;
using model::is_gguf_path;

namespace {

/// tokenizer_config.json's add_bos_token / add_eos_token beside a tokenizer.model.
std::pair<bool, bool> bos_eos_of(const std::filesystem::path& model) {
    const std::filesystem::path config = model.parent_path() / "tokenizer_config.json";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(config, ec)) {
        return {true, false};
    }
    const nlohmann::json doc =
        io::parse_json_text(io::as_text(io::read_file(config)), config.string());
    return {detail::field_or<bool>(doc, "add_bos_token", true, config.string()),
            detail::field_or<bool>(doc, "add_eos_token", false, config.string())};
}

/// The byte a byte-level BPE character stands for, or -1.
int byte_of_char(char32_t c) {
    static const std::array<char32_t, 256> table = [] {
        std::array<char32_t, 256> t{};
        for (unsigned b = 0; b < 256; ++b) {
            t.at(b) = detail::byte_level_char(static_cast<std::uint8_t>(b));
        }
        return t;
    }();
    for (unsigned b = 0; b < 256; ++b) {
        if (table.at(b) == c) {
            return static_cast<int>(b);
        }
    }
    return -1;
}

std::string hex_bytes(std::string_view bytes) {
    std::string out = "<";
    for (const char c : bytes) {
        std::array<char, 4> h{};
        std::snprintf(h.data(), h.size(), "%02X", static_cast<unsigned char>(c));
        out += (out.size() > 1 ? " " : "") + std::string(h.data());
    }
    return out + ">";
}

bool valid_utf8(std::string_view s) {
    try {
        detail::check_utf8(s, "");
        return true;
    } catch (const InputError&) {
        return false;
    }
}

} // namespace

std::filesystem::path tokenizer_file_in(const std::filesystem::path& folder) {
    for (const char* name : {"tokenizer.json", "tokenizer.model"}) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(folder / name, ec)) {
            return folder / name;
        }
    }
    return {};
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::path file = path;
    if (std::filesystem::is_directory(path, ec)) {
        file = tokenizer_file_in(path);
        if (file.empty()) {
            throw InputError::at(path, "no tokenizer.json or tokenizer.model in this folder");
        }
    }
    if (is_gguf_path(file.string())) { // mapped: only the header is read
        const GgufFile gguf(file);
        return parse_gguf_vocab(gguf.header(), gguf.shown());
    }
    const std::vector<std::uint8_t> bytes = io::read_file(file);
    const std::string_view text = io::as_text(bytes);
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    const std::string name = io::message_text(file.string());
    const bool json =
        file.extension() == ".json" ||
        (file.extension() != ".model" && first != std::string_view::npos && text[first] == '{');
    if (json) {
        return parse_tokenizer_json(text, name);
    }
    const auto [bos, eos] = bos_eos_of(file);
    return parse_sentencepiece_model(text, name, bos, eos);
}

std::string readable_token(std::string_view token, bool byte_level) {
    std::string text(token);
    if (byte_level) {
        std::string bytes;
        bool all = true;
        for (const auto& [c, at] : detail::code_points(token)) {
            const int b = byte_of_char(c);
            all = all && b >= 0;
            bytes.push_back(static_cast<char>(b));
        }
        if (all) {
            if (!valid_utf8(bytes)) {
                return hex_bytes(bytes);
            }
            text = bytes;
        }
    }
    std::string out;
    const auto cps = detail::code_points(text);
    for (const auto& [c, at] : cps) {
        if (c == ' ' || c == 0x2581) { // a space, or SentencePiece's ▁
            out += "\xE2\x90\xA3";     // ␣
        } else if (c == '\n') {
            out += "\xE2\x86\xB5"; // ↵
        } else if (c == '\t') {
            out += "\xE2\x87\xA5"; // ⇥
        } else if (c < 0x20 || c == 0x7F) {
            out += hex_bytes(std::string(1, static_cast<char>(c)));
        } else {
            detail::append_utf8(out, c);
        }
    }
    return out;
}

} // namespace attn::text

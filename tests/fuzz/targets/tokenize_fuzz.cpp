// Fuzz target: any bytes as text through fixed tokenizers (text::Tokenizer::encode): GPT-2's
// byte-level BPE with added tokens, llama-2's byte-fallback BPE and a BERT WordPiece.
// Properties: invalid UTF-8 is an InputError (one line) from each, valid UTF-8 never throws;
// byte-level BPE is lossless (its tokens' bytes are the text), and so is byte fallback (its
// tokens, ▁ read as a space and <0xNN> as the byte, are "▁" + the text with spaces as ▁).
#include "attn/text/tokenizer.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

using namespace attn;

namespace {

/// GPT-2's bytes_to_unicode inverted: the byte a character of its alphabet stands for.
int byte_level_byte(char32_t c) {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
        if (printable ? c == static_cast<char32_t>(b) : c == static_cast<char32_t>(0x100 + n++)) {
            return b;
        }
    }
    return -1;
}

std::u32string code_points(std::string_view s) {
    std::u32string out;
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        const std::size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        char32_t c = n == 1 ? b : b & (0x3FU >> (n - 1));
        for (std::size_t k = 1; k < n && i + k < s.size(); ++k) {
            c = (c << 6U) | (static_cast<unsigned char>(s[i + k]) & 0x3FU);
        }
        out.push_back(c);
        i += n;
    }
    return out;
}

nlohmann::json added(int id, const char* content, bool lstrip, bool rstrip) {
    return {{"id", id},
            {"content", content},
            {"single_word", false},
            {"lstrip", lstrip},
            {"rstrip", rstrip},
            {"normalized", false},
            {"special", true}};
}

/// A byte-level BPE: every byte a token, a few merges, two added tokens.
std::unique_ptr<text::Tokenizer> byte_level() {
    nlohmann::json vocab = nlohmann::json::object();
    std::string alphabet[256];
    for (int b = 0, n = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
        const char32_t c =
            printable ? static_cast<char32_t>(b) : static_cast<char32_t>(0x100 + n++);
        std::string s;
        if (c < 0x80) {
            s.push_back(static_cast<char>(c));
        } else {
            s.push_back(static_cast<char>(0xC0 | (c >> 6U)));
            s.push_back(static_cast<char>(0x80 | (c & 0x3FU)));
        }
        alphabet[b] = s;
        vocab[s] = b;
    }
    const std::string sp = alphabet[0x20]; // the space
    const char* merges[][2] = {{"t", "h"}, {"th", "e"}, {"", "t"}, {"e", "r"}, {"i", "n"}};
    nlohmann::json m = nlohmann::json::array();
    for (const auto& [a, b] : merges) {
        const std::string left = *a == '\0' ? sp : std::string(a);
        vocab[left + b] = vocab.size();
        m.push_back(left + " " + b);
    }
    vocab["<|endoftext|>"] = vocab.size();
    vocab["<mask>"] = vocab.size();
    const nlohmann::json doc = {
        {"added_tokens",
         {added(vocab["<|endoftext|>"].get<int>(), "<|endoftext|>", false, false),
          added(vocab["<mask>"].get<int>(), "<mask>", false, false)}},
        {"pre_tokenizer",
         {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", m}}}};
    return text::parse_tokenizer_json(doc.dump(), "byte_level.json");
}

/// llama-2's layout: ▁ for spaces, <0xNN> for what the vocabulary lacks, <s> first.
std::unique_ptr<text::Tokenizer> byte_fallback() {
    nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = vocab.size();
    }
    for (const char* t : {"\xE2\x96\x81",
                          "a",
                          "b",
                          "c",
                          "\xE2\x96\x81\x61", // ▁a
                          "ab"}) {
        vocab[t] = vocab.size();
    }
    const nlohmann::json doc = {
        {"added_tokens", {added(0, "<unk>", false, false), added(1, "<s>", false, false)}},
        {"normalizer",
         {{"type", "Sequence"},
          {"normalizers",
           {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
            {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}}},
        {"model",
         {{"type", "BPE"},
          {"vocab", vocab},
          {"merges", {"\xE2\x96\x81 a", "a b"}},
          {"unk_token", "<unk>"},
          {"fuse_unk", true},
          {"byte_fallback", true}}}};
    return text::parse_tokenizer_json(doc.dump(), "byte_fallback.json");
}

std::unique_ptr<text::Tokenizer> wordpiece() {
    const nlohmann::json doc = {
        {"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}}},
        {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
        {"post_processor",
         {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}}},
        {"model",
         {{"type", "WordPiece"},
          {"max_input_chars_per_word", 8},
          {"vocab",
           {{"[PAD]", 0},
            {"[UNK]", 1},
            {"[CLS]", 2},
            {"[SEP]", 3},
            {"a", 4},
            {"##a", 5},
            {"b", 6},
            {"##b", 7},
            {"ab", 8},
            {"##ab", 9},
            {"!", 10}}}}}};
    return text::parse_tokenizer_json(doc.dump(), "wordpiece.json");
}

} // namespace

ATTN_FUZZ_TARGET(tokenize) {
    static const std::unique_ptr<text::Tokenizer> gpt2 = byte_level();
    static const std::unique_ptr<text::Tokenizer> llama = byte_fallback();
    static const std::unique_ptr<text::Tokenizer> bert = wordpiece();
    const std::string_view text = fuzz::input_text(data, size);
    text::Encoding e;
    if (!fuzz::only_input_errors("gpt2", [&] { e = gpt2->encode(text, true); })) {
        // Invalid UTF-8: refused by every tokenizer alike.
        fuzz::expect(!fuzz::only_input_errors("llama", [&] { (void)llama->encode(text, true); }),
                     "byte fallback takes what byte-level refuses");
        fuzz::expect(!fuzz::only_input_errors("bert", [&] { (void)bert->encode(text, true); }),
                     "WordPiece takes what byte-level refuses");
        return 0;
    }
    std::string bytes;
    for (const std::string& t : e.tokens) {
        if (t == "<|endoftext|>" || t == "<mask>") {
            bytes += t;
            continue;
        }
        for (const char32_t c : code_points(t)) {
            const int b = byte_level_byte(c);
            fuzz::expect(b >= 0, "a byte-level token outside the alphabet");
            bytes.push_back(static_cast<char>(b));
        }
    }
    fuzz::expect(bytes == text, "byte-level BPE lost or changed bytes");

    fuzz::expect(fuzz::only_input_errors("llama", [&] { e = llama->encode(text, false); }),
                 "byte fallback refuses valid UTF-8");
    std::string want;
    std::string got;
    if (!text.empty()) {
        want = "\xE2\x96\x81";
    }
    for (const char c : text) {
        want += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    }
    for (const std::string& t : e.tokens) {
        if (t.size() == 6 && t.rfind("<0x", 0) == 0) {
            got.push_back(static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16)));
        } else {
            got += t;
        }
    }
    // <unk> and <s> in the text are added tokens, matched before the normalizer prepends ▁.
    if (text.find("<unk>") == std::string_view::npos &&
        text.find("<s>") == std::string_view::npos) {
        fuzz::expect(got == want, "byte fallback lost or changed bytes");
    }
    fuzz::expect(fuzz::only_input_errors("bert", [&] { e = bert->encode(text, true); }),
                 "WordPiece refuses valid UTF-8");
    fuzz::expect(e.ids.size() >= 2 && e.ids.front() == 2 && e.ids.back() == 3,
                 "WordPiece without [CLS] ... [SEP]");
    return 0;
}

// A GGUF's own vocabulary (tokenizer.ggml.*) as the tokenizer.json pipeline it stands for,
// run by the same code as a model folder's tokenizer.json (tokenizer_json.cpp), tokenizing
// as llama.cpp's llama-vocab.cpp does:
// - "gpt2": byte-level BPE over tokenizer.ggml.tokens and .merges (ranked in file order),
//   split first by the regex tokenizer.ggml.pre names (gpt-2, llama-bpe, qwen2 and their
//   aliases; any other name is refused, never guessed).
// - "llama": SentencePiece-style BPE: the text's spaces as "▁" (a "▁" before each stretch
//   of text when add_space_prefix, llama.cpp's default), pieces merged pairwise by the
//   score of the merged token (the highest first: merges ranked by score), characters no
//   token covers as byte tokens <0xNN>.
// Control, user-defined and unknown tokens are matched in the raw text first (llama.cpp's
// parse_special, Hugging Face's added tokens); BOS/EOS are added as add_bos_token and
// add_eos_token say (llama.cpp's defaults per model and pre-tokenizer when absent).
#include "attn/error.hpp"
#include "attn/model/gguf.hpp"
#include "detail.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace attn::text {

namespace {

using detail::quote_name;
using model::GgufHeader;
using model::GgufType;
using model::GgufValue;
using nlohmann::json;

/// llama.cpp's token types (gguf-py's TokenType).
enum TokenType : std::int32_t {
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6,
};

/// llama.cpp's adaptation of llama-3's regex (its case-insensitive group spelled out).
constexpr std::string_view kLlama3Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// Qwen2's: llama-3's with single digits.
constexpr std::string_view kQwen2Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr std::string_view kPreNames =
    "gpt-2, llama-bpe (llama3, llama-v3), qwen2 (deepseek-r1-qwen)";

struct Vocab {
    const GgufHeader& h;
    std::string name;

    [[noreturn]] void fail(std::string_view key, const std::string& what) const {
        throw InputError(name + ": metadata " + quote_name(key) + ": " + what);
    }

    const GgufValue* array_of(std::string_view key, GgufType element, bool required) const {
        const GgufValue* v = h.find_value(key);
        if (v == nullptr) {
            if (required) {
                fail(key, "missing (the vocabulary needs it)");
            }
            return nullptr;
        }
        if (v->type != GgufType::array || v->element != element) {
            fail(key,
                 "expected an array of " + std::string(gguf_type_name(element)) + ", got " +
                     (v->type == GgufType::array
                          ? "an array of " + std::string(gguf_type_name(v->element))
                          : std::string(gguf_type_name(v->type))));
        }
        return v;
    }

    std::optional<std::string> text(std::string_view key) const {
        const GgufValue* v = h.find_value(key);
        if (v == nullptr) {
            return std::nullopt;
        }
        if (v->type != GgufType::string) {
            fail(key, "expected a string, got " + std::string(gguf_type_name(v->type)));
        }
        return v->text;
    }

    std::optional<bool> flag(std::string_view key) const {
        const GgufValue* v = h.find_value(key);
        if (v == nullptr) {
            return std::nullopt;
        }
        if (v->type != GgufType::boolean) {
            fail(key, "expected a bool, got " + std::string(gguf_type_name(v->type)));
        }
        return v->bits != 0;
    }

    /// A token id key: an integer below the vocabulary's size.
    std::optional<std::int64_t> id(std::string_view key, std::size_t n_tokens) const {
        const GgufValue* v = h.find_value(key);
        if (v == nullptr) {
            return std::nullopt;
        }
        const auto u = v->type == GgufType::boolean ? std::nullopt : v->as_uint();
        if (!u || *u >= n_tokens) {
            fail(key,
                 "expected a token id below the vocabulary's " + std::to_string(n_tokens) +
                     " tokens");
        }
        return static_cast<std::int64_t>(*u);
    }
};

/// One token's entry: its text (unique), type and score.
struct Entry {
    std::string text;
    std::int32_t type = normal;
    float score = 0.0F;
};

std::vector<Entry> read_entries(const Vocab& v) {
    const GgufValue* tokens = v.array_of("tokenizer.ggml.tokens", GgufType::string, true);
    const std::size_t n = tokens->strings.size();
    if (n == 0 || n > std::numeric_limits<std::uint32_t>::max()) {
        v.fail("tokenizer.ggml.tokens", "expected 1 to 2^32 - 1 tokens, got " + std::to_string(n));
    }
    const GgufValue* scores = v.array_of("tokenizer.ggml.scores", GgufType::f32, false);
    const GgufValue* types = v.array_of("tokenizer.ggml.token_type", GgufType::i32, false);
    for (const auto& [key, arr] : {std::pair("tokenizer.ggml.scores", scores),
                                   std::pair("tokenizer.ggml.token_type", types)}) {
        if (arr != nullptr && arr->count != n) {
            v.fail(key,
                   std::to_string(arr->count) + " entries for " + std::to_string(n) + " tokens");
        }
    }
    std::vector<Entry> out(n);
    std::unordered_map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < n; ++i) {
        Entry& e = out[i];
        e.text = tokens->strings[i];
        if (e.text.empty()) { // llama.cpp's name for an empty token
            e.text = "[EMPTY_" + std::to_string(i) + "]";
        }
        detail::check_utf8(e.text, v.name + ": tokenizer.ggml.tokens[" + std::to_string(i) + "]");
        if (scores != nullptr) {
            std::memcpy(&e.score, scores->raw.data() + i * 4, 4);
        }
        if (types != nullptr) {
            std::memcpy(&e.type, types->raw.data() + i * 4, 4);
            if (e.type < undefined || e.type > byte) {
                v.fail("tokenizer.ggml.token_type",
                       "token " + std::to_string(i) + " has type " + std::to_string(e.type) +
                           " (llama.cpp's types are 0 to 6)");
            }
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (const auto [it, fresh] = seen.try_emplace(out[i].text, i); !fresh) {
            v.fail("tokenizer.ggml.tokens",
                   "tokens " + std::to_string(it->second) + " and " + std::to_string(i) +
                       " are both " + detail::quote_input(out[i].text));
        }
    }
    return out;
}

json vocab_object(const std::vector<Entry>& entries) {
    json vocab = json::object();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        vocab[entries[i].text] = i;
    }
    return vocab;
}

/// Control, user-defined and unknown tokens: matched in the raw text before the model.
json added_tokens(const std::vector<Entry>& entries) {
    json added = json::array();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::int32_t t = entries[i].type;
        if (t == control || t == user_defined || t == unknown) {
            added.push_back({{"id", i},
                             {"content", entries[i].text},
                             {"normalized", false},
                             {"special", t != user_defined}});
        }
    }
    return added;
}

/// [BOS] A [EOS] as the flags say; null when neither is added.
json template_of(const std::vector<Entry>& entries,
                 std::optional<std::int64_t> bos,
                 std::optional<std::int64_t> eos) {
    if (!bos && !eos) {
        return nullptr;
    }
    json single = json::array();
    json specials = json::object();
    const auto special = [&](std::int64_t id) {
        const std::string& text = entries[static_cast<std::size_t>(id)].text;
        specials[text] = {{"id", text}, {"ids", {id}}, {"tokens", {text}}};
        return json{{"SpecialToken", {{"id", text}}}};
    };
    if (bos) {
        single.push_back(special(*bos));
    }
    single.push_back({{"Sequence", {{"id", "A"}}}});
    if (eos) {
        single.push_back(special(*eos));
    }
    return {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}};
}

json split_then_bytes(std::string_view pattern) {
    return {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", pattern}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
}

/// The "gpt2" model: byte-level BPE. Returns the document without its post-processor;
/// `add_bos` gets llama.cpp's default for the pre-tokenizer.
json gpt2_document(const Vocab& v, const std::vector<Entry>& entries, bool& add_bos) {
    const auto pre = v.text("tokenizer.ggml.pre");
    if (!pre) {
        v.fail("tokenizer.ggml.pre",
               "missing: llama.cpp then splits with its 'default' regexes, which attn does not "
               "run (known: " +
                   std::string(kPreNames) + ")");
    }
    json doc;
    add_bos = false;
    bool ignore_merges = false;
    if (*pre == "gpt-2") {
        doc["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
    } else if (*pre == "llama-bpe" || *pre == "llama3" || *pre == "llama-v3") {
        doc["pre_tokenizer"] = split_then_bytes(kLlama3Pattern);
        ignore_merges = true;
        add_bos = true;
    } else if (*pre == "qwen2" || *pre == "deepseek-r1-qwen") {
        doc["pre_tokenizer"] = split_then_bytes(kQwen2Pattern);
    } else {
        v.fail("tokenizer.ggml.pre",
               "pre-tokenizer " + quote_name(*pre) +
                   " is not supported (supported: " + std::string(kPreNames) + ")");
    }
    const GgufValue* merges = v.array_of("tokenizer.ggml.merges", GgufType::string, true);
    json pairs = json::array();
    for (std::size_t i = 0; i < merges->strings.size(); ++i) {
        const std::string& m = merges->strings[i];
        const std::size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
        if (space == std::string::npos) {
            v.fail("tokenizer.ggml.merges",
                   "merge " + std::to_string(i) + " " + detail::quote_input(m) +
                       " is not two tokens and a space");
        }
        pairs.push_back({m.substr(0, space), m.substr(space + 1)});
    }
    doc["model"] = {{"type", "BPE"},
                    {"vocab", vocab_object(entries)},
                    {"merges", std::move(pairs)},
                    {"ignore_merges", ignore_merges}};
    doc["decoder"] = {{"type", "ByteLevel"}};
    return doc;
}

/// llama.cpp merges through characters that are no token of their own; the BPE here starts
/// from tokens (or bytes), so a normal token must be made of characters that are tokens
/// (SentencePiece's trainer makes them so).
void check_characters(const Vocab& v,
                      const std::vector<Entry>& entries,
                      const std::unordered_map<std::string_view, std::size_t>& index,
                      std::size_t i) {
    if (entries[i].type != normal) {
        return;
    }
    const std::string_view s = entries[i].text;
    const auto cps = detail::code_points(s);
    for (std::size_t k = 0; cps.size() > 1 && k < cps.size(); ++k) {
        const std::size_t end = k + 1 < cps.size() ? cps[k + 1].second : s.size();
        const std::string_view c = s.substr(cps[k].second, end - cps[k].second);
        if (index.count(c) == 0) {
            v.fail("tokenizer.ggml.tokens",
                   "token " + std::to_string(i) + " " + detail::quote_input(s) +
                       " holds the character " + detail::quote_input(c) +
                       " that is no token of its own (llama.cpp would merge through it; "
                       "attn does not)");
        }
    }
}

/// The "llama" model: SentencePiece's BPE as merges ranked by the merged token's score
/// (higher first; equal scores by id), every split of a token into two tokens a merge.
json llama_document(const Vocab& v,
                    const std::vector<Entry>& entries,
                    std::optional<std::int64_t> unk) {
    if (v.h.find_value("tokenizer.ggml.scores") == nullptr) {
        v.fail("tokenizer.ggml.scores", "missing (a llama vocabulary merges by score)");
    }
    std::unordered_map<std::string_view, std::size_t> index;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        index.emplace(entries[i].text, i);
    }
    struct Merge {
        std::size_t token;
        std::size_t split;
    };
    std::vector<Merge> merges;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string_view s = entries[i].text;
        check_characters(v, entries, index, i);
        for (std::size_t k = 1; k < s.size(); ++k) {
            if ((static_cast<unsigned char>(s[k]) & 0xC0U) != 0x80U &&
                index.count(s.substr(0, k)) && index.count(s.substr(k))) {
                merges.push_back({i, k});
            }
        }
    }
    std::stable_sort(merges.begin(), merges.end(), [&](const Merge& a, const Merge& b) {
        return entries[a.token].score > entries[b.token].score;
    });
    json pairs = json::array();
    for (const Merge& m : merges) {
        const std::string& s = entries[m.token].text;
        pairs.push_back({s.substr(0, m.split), s.substr(m.split)});
    }
    const std::string meta = "\xE2\x96\x81"; // ▁
    json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}};
    json doc;
    if (v.flag("tokenizer.ggml.add_space_prefix").value_or(true)) {
        doc["normalizer"] = {{"type", "Sequence"},
                             {"normalizers", {{{"type", "Prepend"}, {"prepend", meta}}, replace}}};
    } else {
        doc["normalizer"] = replace;
    }
    doc["model"] = {{"type", "BPE"},
                    {"vocab", vocab_object(entries)},
                    {"merges", std::move(pairs)},
                    {"byte_fallback", true},
                    {"fuse_unk", true}};
    if (unk) {
        doc["model"]["unk_token"] = entries[static_cast<std::size_t>(*unk)].text;
    }
    return doc;
}

} // namespace

std::unique_ptr<Tokenizer> parse_gguf_vocab(const GgufHeader& h, std::string_view name_in) {
    const Vocab v{h, std::string(name_in)};
    const auto model = v.text("tokenizer.ggml.model");
    if (!model) {
        throw InputError(v.name + ": no vocabulary (metadata 'tokenizer.ggml.model' is missing)");
    }
    if (*model != "gpt2" && *model != "llama") {
        v.fail("tokenizer.ggml.model",
               "tokenizer " + quote_name(*model) + " is not supported (supported: gpt2, llama)");
    }
    const std::vector<Entry> entries = read_entries(v);
    const std::size_t n = entries.size();
    const bool llama = *model == "llama";
    // llama.cpp's defaults: llama BOS 1, EOS 2, unk 0, BOS added; gpt2 as its pre says.
    auto bos = v.id("tokenizer.ggml.bos_token_id", n);
    auto eos = v.id("tokenizer.ggml.eos_token_id", n);
    auto unk = v.id("tokenizer.ggml.unknown_token_id", n);
    bool add_bos = llama;
    json doc = llama ? json::object() : gpt2_document(v, entries, add_bos);
    if (llama) {
        const auto fallback = [&](std::optional<std::int64_t>& id, std::int64_t d) {
            if (!id && static_cast<std::size_t>(d) < n) {
                id = d;
            }
        };
        fallback(bos, 1);
        fallback(eos, 2);
        fallback(unk, 0);
        doc = llama_document(v, entries, unk);
    }
    add_bos = v.flag("tokenizer.ggml.add_bos_token").value_or(add_bos);
    const bool add_eos = v.flag("tokenizer.ggml.add_eos_token").value_or(false);
    for (const auto& [on, id, key] : {std::tuple(add_bos, bos, "tokenizer.ggml.bos_token_id"),
                                      std::tuple(add_eos, eos, "tokenizer.ggml.eos_token_id")}) {
        if (on && !id) {
            v.fail(key, "missing, but the vocabulary adds that token");
        }
    }
    doc["added_tokens"] = added_tokens(entries);
    doc["post_processor"] =
        template_of(entries, add_bos ? bos : std::nullopt, add_eos ? eos : std::nullopt);
    return detail::make_json_tokenizer(doc, v.name + ": tokenizer.ggml");
}

} // namespace attn::text

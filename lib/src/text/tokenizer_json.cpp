// A tokenizer.json document as Hugging Face's tokenizers runs it: added tokens matched on
// the raw text (normalized ones on the normalized text) before anything else, then the
// normalizer, the pre-tokenizer and the model on the text between them, then the
// post-processor's special tokens (TemplateProcessing, BertProcessing, RobertaProcessing,
// ByteLevel, Sequence). Truncation, padding and the decoder are not applied.
#include "attn/error.hpp"
#include "attn/io/json_text.hpp"
#include "detail.hpp"

#include <unordered_map>

namespace attn::text {

namespace {

using detail::field_or;
using detail::quote_input;
using detail::Token;

struct AddedToken {
    std::string content;
    std::int64_t id = 0;
    bool single_word = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
};

constexpr std::size_t kText = static_cast<std::size_t>(-1);

/// A span of text: an added token's (`token` indexes the added tokens) or the text
/// between them (token == kText).
struct Span {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::size_t token = kText;
};

using PostProcessor = std::function<std::vector<Token>(std::vector<Token>)>;

bool is_word_char(const std::string& s, std::size_t at, bool before) {
    if (before ? at == 0 : at >= s.size()) {
        return false;
    }
    std::size_t b = at;
    if (before) {
        do {
            --b;
        } while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80);
    }
    const auto cps = detail::code_points(std::string_view(s).substr(b, before ? at - b : 4));
    return !cps.empty() && (detail::is_alphanumeric(cps.front().first) || cps.front().first == '_');
}

class JsonTokenizer final : public Tokenizer {
  public:
    JsonTokenizer(const nlohmann::json& doc, const std::string& name);
    Encoding encode(std::string_view text, bool add_special_tokens) const override;

  private:
    std::vector<Span> split_added(const std::string& s, bool normalized) const;
    void run_model(const std::string& text, bool first, std::vector<Token>& out) const;
    void read_added_tokens(const nlohmann::json& list, const std::string& what);
    PostProcessor make_post_processor(const nlohmann::json& j, const std::string& what) const;

    std::vector<AddedToken> added_;
    /// Indices into added_, by the first byte of their content.
    std::array<std::vector<std::size_t>, 256> added_by_byte_;
    detail::Normalizer normalizer_;
    detail::PreTokenizer pre_tokenizer_;
    std::unique_ptr<detail::Model> model_;
    PostProcessor post_;
    bool byte_level_ = false;
};

JsonTokenizer::JsonTokenizer(const nlohmann::json& doc, const std::string& name) {
    if (!doc.is_object()) {
        throw InputError(name + ": expected a tokenizer.json object, got " +
                         std::string(doc.type_name()));
    }
    const auto model = field_or<nlohmann::json>(doc, "model", nullptr, name);
    if (!model.is_object()) {
        throw InputError(name + ": no \"model\" object");
    }
    std::string type = field_or<std::string>(model, "type", "", name + ": model");
    if (type.empty()) { // older files leave the type out: infer it as serde does
        type = model.contains("merges")                     ? "BPE"
               : model.contains("max_input_chars_per_word") ? "WordPiece"
                                                            : "";
    }
    if (type == "BPE") {
        model_ = detail::make_bpe(model, name);
    } else if (type == "WordPiece") {
        model_ = detail::make_wordpiece(model, name);
    } else {
        throw InputError(name + ": model type " + quote_input(type) +
                         " is not supported (supported: BPE, WordPiece; for a SentencePiece "
                         "Unigram model give its tokenizer.model)");
    }
    normalizer_ = detail::make_normalizer(
        field_or<nlohmann::json>(doc, "normalizer", nullptr, name), name + ": normalizer");
    pre_tokenizer_ =
        detail::make_pre_tokenizer(field_or<nlohmann::json>(doc, "pre_tokenizer", nullptr, name),
                                   name + ": pre_tokenizer",
                                   byte_level_);
    const auto decoder = field_or<nlohmann::json>(doc, "decoder", nullptr, name);
    if (decoder.is_object() && decoder.value("type", "") == "ByteLevel") {
        byte_level_ = true;
    }
    read_added_tokens(field_or<nlohmann::json>(doc, "added_tokens", nlohmann::json::array(), name),
                      name + ": added_tokens");
    post_ = make_post_processor(field_or<nlohmann::json>(doc, "post_processor", nullptr, name),
                                name + ": post_processor");
}

void JsonTokenizer::read_added_tokens(const nlohmann::json& list, const std::string& what) {
    if (!list.is_array()) {
        throw InputError(what + ": expected a list");
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string at = what + "[" + std::to_string(i) + "]";
        AddedToken t;
        t.content = field_or<std::string>(list[i], "content", "", at);
        if (t.content.empty()) {
            throw InputError(at + ": no \"content\"");
        }
        const auto id = field_or<nlohmann::json>(list[i], "id", nullptr, at);
        if (!id.is_number_integer() || id.get<std::int64_t>() < 0) {
            throw InputError(at + ": \"id\" must be a non-negative integer");
        }
        t.id = id.get<std::int64_t>();
        t.single_word = field_or<bool>(list[i], "single_word", false, at);
        t.lstrip = field_or<bool>(list[i], "lstrip", false, at);
        t.rstrip = field_or<bool>(list[i], "rstrip", false, at);
        const bool special = field_or<bool>(list[i], "special", false, at);
        t.normalized = field_or<bool>(list[i], "normalized", !special, at) && normalizer_;
        added_by_byte_.at(static_cast<unsigned char>(t.content.front())).push_back(added_.size());
        added_.push_back(std::move(t));
    }
}

std::vector<Span> JsonTokenizer::split_added(const std::string& s, bool normalized) const {
    std::vector<Span> out;
    std::size_t text_begin = 0; // where the current stretch of plain text starts
    for (std::size_t i = 0; i < s.size();) {
        // The longest added token starting here (leftmost-longest, as Aho-Corasick is run).
        std::size_t best = kText;
        for (const std::size_t k : added_by_byte_.at(static_cast<unsigned char>(s[i]))) {
            const AddedToken& t = added_[k];
            if (t.normalized == normalized && s.compare(i, t.content.size(), t.content) == 0 &&
                (best == kText || t.content.size() > added_[best].content.size())) {
                best = k;
            }
        }
        const AddedToken* t = best == kText ? nullptr : &added_[best];
        if (t == nullptr || (t->single_word && (is_word_char(s, i, true) ||
                                                is_word_char(s, i + t->content.size(), false)))) {
            ++i;
            continue;
        }
        std::size_t b = i;
        std::size_t e = i + t->content.size();
        while (t->lstrip && b > text_begin &&
               (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\n' || s[b - 1] == '\r')) {
            --b;
        }
        while (t->rstrip && e < s.size() &&
               (s[e] == ' ' || s[e] == '\t' || s[e] == '\n' || s[e] == '\r')) {
            ++e;
        }
        if (b > text_begin) {
            out.push_back({text_begin, b, kText});
        }
        out.push_back({b, e, best});
        text_begin = e;
        i = e;
    }
    if (text_begin < s.size()) {
        out.push_back({text_begin, s.size(), kText});
    }
    return out;
}

void JsonTokenizer::run_model(const std::string& text, bool first, std::vector<Token>& out) const {
    std::vector<detail::Piece> pieces{{text, first}};
    if (pre_tokenizer_) {
        pieces = pre_tokenizer_(std::move(pieces));
    }
    for (const detail::Piece& p : pieces) {
        if (!p.text.empty()) {
            model_->tokenize(p.text, out);
        }
    }
}

Encoding JsonTokenizer::encode(std::string_view text_view, bool add_special_tokens) const {
    detail::check_utf8(text_view, "text");
    const std::string text(text_view);
    std::vector<Token> tokens;
    for (const Span& raw : split_added(text, false)) {
        if (raw.token != kText) {
            tokens.push_back({added_[raw.token].id, added_[raw.token].content});
            continue;
        }
        const std::string piece = text.substr(raw.begin, raw.end - raw.begin);
        const std::string norm = normalizer_ ? normalizer_(piece) : piece;
        for (const Span& s : split_added(norm, true)) {
            if (s.token != kText) {
                tokens.push_back({added_[s.token].id, added_[s.token].content});
            } else {
                run_model(
                    norm.substr(s.begin, s.end - s.begin), raw.begin == 0 && s.begin == 0, tokens);
            }
        }
    }
    if (add_special_tokens && post_) {
        tokens = post_(std::move(tokens));
    }
    Encoding e;
    for (Token& t : tokens) {
        e.ids.push_back(t.id);
        e.labels.push_back(readable_token(t.text, byte_level_));
        e.tokens.push_back(std::move(t.text));
    }
    return e;
}

PostProcessor JsonTokenizer::make_post_processor(const nlohmann::json& j,
                                                 const std::string& what) const {
    if (j.is_null()) {
        return {};
    }
    const auto type = field_or<std::string>(j, "type", "", what);
    const auto pair = [&](const char* key) {
        const auto p = field_or<nlohmann::json>(j, key, nullptr, what);
        if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number_integer() ||
            p[1].get<std::int64_t>() < 0) {
            throw InputError(what + ": \"" + key + "\" must be [\"token\", id]");
        }
        return Token{p[1].get<std::int64_t>(), p[0].get<std::string>()};
    };
    if (type == "BertProcessing" || type == "RobertaProcessing") {
        const Token cls = pair("cls");
        const Token sep = pair("sep");
        return [cls, sep](std::vector<Token> t) {
            t.insert(t.begin(), cls);
            t.push_back(sep);
            return t;
        };
    }
    if (type == "ByteLevel") {
        return [](std::vector<Token> t) { return t; };
    }
    if (type == "Sequence") {
        const auto list = field_or<nlohmann::json>(j, "processors", nlohmann::json::array(), what);
        std::vector<PostProcessor> steps;
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (PostProcessor p =
                    make_post_processor(list[i], what + "[" + std::to_string(i) + "]")) {
                steps.push_back(std::move(p));
            }
        }
        return [steps](std::vector<Token> t) {
            for (const PostProcessor& p : steps) {
                t = p(std::move(t));
            }
            return t;
        };
    }
    if (type != "TemplateProcessing") {
        throw InputError(what + ": unsupported type " + quote_input(type) +
                         " (supported: TemplateProcessing, BertProcessing, RobertaProcessing, "
                         "ByteLevel, Sequence)");
    }
    // TemplateProcessing: "single" is a list of {"SpecialToken": {"id": NAME}} (NAME's
    // ids and tokens from "special_tokens") and {"Sequence": {"id": "A"}} (the text).
    const auto single = field_or<nlohmann::json>(j, "single", nlohmann::json::array(), what);
    const auto specials =
        field_or<nlohmann::json>(j, "special_tokens", nlohmann::json::object(), what);
    std::vector<std::vector<Token>> parts; // empty: the sequence
    for (std::size_t i = 0; i < single.size(); ++i) {
        const std::string at = what + ": single[" + std::to_string(i) + "]";
        if (single[i].is_object() && single[i].contains("Sequence")) {
            parts.emplace_back();
            continue;
        }
        const auto item = field_or<nlohmann::json>(single[i], "SpecialToken", nullptr, at);
        const auto name = field_or<std::string>(item, "id", "", at);
        const auto special =
            field_or<nlohmann::json>(specials, name.c_str(), nullptr, what + ": special_tokens");
        if (!special.is_object()) {
            throw InputError(at + ": " + quote_input(name) + " is not in special_tokens");
        }
        const auto ids = field_or<std::vector<std::int64_t>>(special, "ids", {}, at);
        const auto toks = field_or<std::vector<std::string>>(special, "tokens", {}, at);
        if (ids.empty() || ids.size() != toks.size()) {
            throw InputError(at + ": special token " + quote_input(name) +
                             " needs as many \"ids\" as \"tokens\"");
        }
        std::vector<Token> part;
        for (std::size_t k = 0; k < ids.size(); ++k) {
            if (ids[k] < 0) {
                throw InputError(at + ": a negative id");
            }
            part.push_back({ids[k], toks[k]});
        }
        parts.push_back(std::move(part));
    }
    return [parts](std::vector<Token> t) {
        std::vector<Token> out;
        for (const std::vector<Token>& part : parts) {
            out.insert(out.end(),
                       part.empty() ? t.begin() : part.begin(),
                       part.empty() ? t.end() : part.end());
        }
        return out;
    };
}

} // namespace

std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view text, std::string_view name) {
    const nlohmann::json doc = io::parse_json_text(text, name);
    return std::make_unique<JsonTokenizer>(doc, std::string(name));
}

std::unique_ptr<Tokenizer> detail::make_json_tokenizer(const nlohmann::json& doc,
                                                       const std::string& name) {
    return std::make_unique<JsonTokenizer>(doc, name);
}

} // namespace attn::text

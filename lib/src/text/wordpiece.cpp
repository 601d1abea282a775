// tokenizer.json's WordPiece model (BERT): greedy longest match first, "##" before every
// piece but the first, and the unk token for a word longer than max_input_chars_per_word
// or one that cannot be covered, as Hugging Face's models/wordpiece and transformers'
// WordpieceTokenizer run it.
#include "attn/error.hpp"
#include "detail.hpp"

#include <unordered_map>

namespace attn::text::detail {

namespace {

class WordPiece final : public Model {
  public:
    WordPiece(const nlohmann::json& j, const std::string& name) {
        const std::string what = name + ": model";
        for (auto& [token, id] :
             read_vocab(field_or<nlohmann::json>(j, "vocab", nullptr, what), what + ": vocab")) {
            vocab_[std::move(token)] = id;
        }
        prefix_ = field_or<std::string>(j, "continuing_subword_prefix", "##", what);
        max_chars_ = field_or<std::size_t>(j, "max_input_chars_per_word", 100, what);
        unk_text_ = field_or<std::string>(j, "unk_token", "[UNK]", what);
        unk_ = id_of(unk_text_);
        if (unk_ < 0) {
            throw InputError(what + ": the unk_token " + quote_input(unk_text_) +
                             " is not in the vocabulary");
        }
    }

    std::int64_t id_of(std::string_view token) const override {
        const auto it = vocab_.find(std::string(token));
        return it == vocab_.end() ? -1 : it->second;
    }

    void tokenize(std::string_view word, std::vector<Token>& out) const override {
        const auto cps = code_points(word);
        if (cps.size() > max_chars_) {
            out.push_back({unk_, unk_text_});
            return;
        }
        std::vector<Token> pieces;
        std::size_t start = 0; // a code point index
        while (start < cps.size()) {
            std::size_t end = cps.size();
            std::int64_t found = -1;
            std::string text;
            for (; end > start; --end) {
                const std::size_t b = cps[start].second;
                const std::size_t e = end < cps.size() ? cps[end].second : word.size();
                text = (start > 0 ? prefix_ : std::string()) + std::string(word.substr(b, e - b));
                found = id_of(text);
                if (found >= 0) {
                    break;
                }
            }
            if (found < 0) {
                out.push_back({unk_, unk_text_});
                return;
            }
            pieces.push_back({found, std::move(text)});
            start = end;
        }
        out.insert(out.end(), pieces.begin(), pieces.end());
    }

  private:
    std::unordered_map<std::string, std::int64_t> vocab_;
    std::string prefix_;
    std::string unk_text_;
    std::int64_t unk_ = -1;
    std::size_t max_chars_ = 100;
};

} // namespace

std::unique_ptr<Model> make_wordpiece(const nlohmann::json& j, const std::string& name) {
    return std::make_unique<WordPiece>(j, name);
}

} // namespace attn::text::detail

// A model's own tokenizer: Hugging Face's tokenizer.json (its declared pipeline: added
// tokens, normalizer, pre-tokenizer, BPE or WordPiece model, post-processor) or
// SentencePiece's tokenizer.model, text in, vocabulary ids and strings out. Decoding (ids
// back to text), truncation and padding are not done here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {
struct GgufHeader;
}

namespace attn::text {

/// One text's tokens: ids and the vocabulary strings as Hugging Face's
/// convert_ids_to_tokens gives them ("Ġworld", "▁the", "##ing", "<0xE6>").
/// `labels` are the same tokens shown readably (readable_token), for heatmaps.
struct Encoding {
    std::vector<std::int64_t> ids;
    std::vector<std::string> tokens;
    std::vector<std::string> labels;
};

/// A loaded tokenizer. encode() is const and keeps no state between calls, so one
/// tokenizer may encode from several threads at once.
class Tokenizer {
  public:
    virtual ~Tokenizer() = default;
    Tokenizer() = default;
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;
    Tokenizer(Tokenizer&&) = delete;
    Tokenizer& operator=(Tokenizer&&) = delete;

    /// The tokens of `text` (UTF-8; invalid UTF-8 is an InputError naming the byte offset).
    /// add_special_tokens: the post-processor's tokens ([CLS] … [SEP], llama's <s>), as
    /// Hugging Face's encode(text, add_special_tokens=...). An empty text gives only those.
    virtual Encoding encode(std::string_view text, bool add_special_tokens = true) const = 0;

    /// encode()'s ids alone (`attn tokenize --ids`); a tokenizer may then skip making each
    /// token's string and label.
    virtual std::vector<std::int64_t> encode_ids(std::string_view text,
                                                 bool add_special_tokens = true) const {
        return encode(text, add_special_tokens).ids;
    }
};

/// Reads a tokenizer: `path` is a model folder (its tokenizer.json, else its
/// tokenizer.model), one of those files, or a .gguf file (its own vocabulary). Throws InputError
/// naming the file: missing, not JSON, an unknown model/normalizer/pre-tokenizer type, merges
/// naming tokens the vocabulary lacks, invalid UTF-8 in the vocabulary.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path);

/// The tokenizer file a model folder holds (tokenizer.json first, then tokenizer.model),
/// or an empty path when it holds neither.
std::filesystem::path tokenizer_file_in(const std::filesystem::path& folder);

/// A tokenizer.json document's text. `name` prefixes every message. Throws InputError.
std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view text, std::string_view name);

/// A SentencePiece model's bytes (tokenizer.model). BOS is added as llama's tokenizer adds
/// it (when the model defines one), EOS not: `add_bos`/`add_eos` override (as
/// tokenizer_config.json's add_bos_token/add_eos_token). Throws InputError.
std::unique_ptr<Tokenizer> parse_sentencepiece_model(std::string_view bytes,
                                                     std::string_view name,
                                                     bool add_bos = true,
                                                     bool add_eos = false);

/// A GGUF's own vocabulary (tokenizer.ggml.*: the "gpt2" byte-level BPE with its merges and
/// pre-tokenizer, or the "llama" SentencePiece-style vocabulary with scores and token types)
/// tokenizing as llama.cpp does. Throws InputError("NAME: metadata 'KEY': ...") for a missing
/// or ill-typed key, lengths that disagree, ids out of range, merges naming missing tokens,
/// an unknown tokenizer model or pre-tokenizer.
std::unique_ptr<Tokenizer> parse_gguf_vocab(const model::GgufHeader& header, std::string_view name);

/// A vocabulary string shown readably as a label. `byte_level`: the token is byte-level
/// BPE's alphabet (GPT-2's bytes_to_unicode), decoded to its bytes: shown as text when they
/// are UTF-8, else as hex ("<E6 97>"). Then a leading space or "▁" (SentencePiece's
/// metaspace) becomes "␣", newline "↵", tab "⇥", other control characters hex; a byte
/// token "<0xE6>" stays as it is.
/// Example: readable_token("Ġworld", true) == "␣world"; readable_token("▁the", false) == "␣the".
std::string readable_token(std::string_view token, bool byte_level);

} // namespace attn::text

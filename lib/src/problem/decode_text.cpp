// "text" (a string, or a list of strings: one batch row each) and "special_tokens": the
// text tokenized by the model's own tokenizer (io/tokenizer; the folder "params" names, or
// the folder of the checkpoint file it names) and handed on as the document's token_ids,
// right-padded with its key_padding_mask, and its labels. From here on the problem is a
// token_ids problem: this file adds nothing to how token_ids are computed with.
#include "attn/io/number_text.hpp"
#include "attn/model/gguf.hpp"
#include "attn/model/hf_config.hpp"
#include "attn/model/store.hpp"
#include "attn/text/tokenizer.hpp"
#include "decode_detail.hpp"

#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace attn::problem::detail {

namespace {

/// One tokenizer per file for the whole process: a batch of text lines loads it once.
std::shared_ptr<const text::Tokenizer> cached_tokenizer(const fs::path& folder) {
    static std::mutex mutex;
    static std::map<fs::path, std::shared_ptr<const text::Tokenizer>> cache;
    const std::lock_guard<std::mutex> lock(mutex);
    auto& slot = cache[folder];
    if (!slot) {
        slot = text::load_tokenizer(folder);
    }
    return slot;
}

/// The folder whose tokenizer tokenizes the text: "params" as a folder, or the folder of
/// the file it names ({"file": ...} or a path); a .gguf file itself (its own vocabulary).
fs::path tokenizer_folder(DecodeContext& cx) {
    if (!cx.has("params")) {
        throw InputError("text: needs the model whose tokenizer to use (params: a model folder "
                         "with tokenizer.json or tokenizer.model)");
    }
    const json& params = cx.doc["params"];
    const json* file = &params;
    if (params.is_object() && params.contains("file")) {
        file = &params["file"];
    }
    if (!file->is_string()) {
        throw InputError("text: params must name a model folder or a file in one, got " +
                         type_name(*file));
    }
    fs::path path = model::resolve_model_path(file->get<std::string>(), cx.base);
    if (model::is_gguf_path(path.string())) { // a GGUF carries its own vocabulary
        return path;
    }
    std::error_code ec;
    const fs::path folder = fs::is_directory(path, ec) ? path : path.parent_path();
    if (text::tokenizer_file_in(folder.empty() ? fs::path(".") : folder).empty()) {
        throw InputError("text: no tokenizer.json or tokenizer.model in " +
                         io::message_text((folder.empty() ? fs::path(".") : folder).string()) +
                         " (the folder of params)");
    }
    return folder.empty() ? fs::path(".") : folder;
}

/// The id that pads a list's shorter rows, as Hugging Face pads them (the tokenizer's pad
/// token; a model without one padded with EOS, as its users set pad_token = eos_token):
/// config.json's pad_token_id, else the tokenizer's pad token ([PAD], <pad>, <|pad|>),
/// else config.json's eos_token_id, else 0. `from` says which.
std::int64_t pad_id(DecodeContext& cx,
                    const fs::path& folder,
                    const text::Tokenizer& tokenizer,
                    std::string* from) {
    std::optional<fs::path> file;
    const json& params = cx.doc["params"];
    if (params.is_object() && params.contains("config") && params["config"].is_string()) {
        const fs::path c = params["config"].get<std::string>();
        file = c.is_absolute() ? c : cx.base / c;
    } else if (std::error_code ec; fs::is_regular_file(folder / "config.json", ec)) {
        file = folder / "config.json";
    }
    const std::optional<model::HfConfig> config =
        file ? std::optional(model::read_hf_config(*file)) : std::nullopt;
    if (config && config->pad_token_id) {
        *from = "config.json " + config->pad_token_id->key;
        return config->pad_token_id->value;
    }
    for (const char* pad : {"[PAD]", "<pad>", "<|pad|>"}) {
        const text::Encoding e = tokenizer.encode(pad, false);
        if (e.ids.size() == 1 && e.tokens.size() == 1 && e.tokens.front() == pad) {
            *from = std::string("the tokenizer's ") + pad;
            return e.ids.front();
        }
    }
    if (config && config->eos_token_id) {
        *from = "config.json " + config->eos_token_id->key;
        return config->eos_token_id->value;
    }
    *from = "no pad or EOS token";
    return 0;
}

/// A GGUF's pad id, as llama.cpp's vocabulary reads it: tokenizer.ggml.padding_token_id,
/// else tokenizer.ggml.eos_token_id, else 0 (pad_id's order for a folder).
std::int64_t gguf_pad_id(const fs::path& file, std::string* from) {
    const model::GgufFile gguf(file);
    for (const char* key : {"tokenizer.ggml.padding_token_id", "tokenizer.ggml.eos_token_id"}) {
        const model::GgufValue* v = gguf.header().find_value(key);
        const std::optional<std::uint64_t> id = v != nullptr ? v->as_uint() : std::nullopt;
        if (id && *id <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            *from = std::string("GGUF ") + key;
            return static_cast<std::int64_t>(*id);
        }
    }
    *from = "no pad or EOS token";
    return 0;
}

std::vector<std::string> texts_of(const json& j) {
    if (j.is_string()) {
        return {j.get<std::string>()};
    }
    if (!j.is_array() || j.empty()) {
        throw InputError("text: expected a string or a non-empty list of strings, got " +
                         type_name(j));
    }
    std::vector<std::string> out;
    for (const json& t : j) {
        if (!t.is_string()) {
            throw InputError::string_list_item("text", out.size(), type_name(t));
        }
        out.push_back(t.get<std::string>());
    }
    return out;
}

} // namespace

void decode_text(DecodeContext& cx, Problem& p) {
    if (!cx.has("text")) {
        if (cx.has("special_tokens")) {
            (void)boolean(cx.doc["special_tokens"], "special_tokens");
        }
        return;
    }
    for (const char* other : {"token_ids", "query", "input", "key", "context"}) {
        if (cx.has(other)) {
            throw InputError(std::string("text: give either text or ") + other +
                             " as the input, not both");
        }
    }
    if (cx.has("key_padding_mask")) {
        throw InputError("text: the key_padding_mask comes from the texts' lengths; leave it out");
    }
    const bool special =
        !cx.has("special_tokens") || boolean(cx.doc["special_tokens"], "special_tokens");
    const std::vector<std::string> texts = texts_of(cx.doc["text"]);
    const fs::path folder = tokenizer_folder(cx);
    const std::shared_ptr<const text::Tokenizer> tokenizer = cached_tokenizer(folder);
    std::vector<text::Encoding> encodings;
    std::size_t length = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        try {
            encodings.push_back(tokenizer->encode(texts[i], special));
        } catch (const InputError& e) {
            // "text: invalid UTF-8 at byte 3" names the text; in a list, which one.
            std::string message = e.what();
            if (texts.size() > 1 && message.rfind("text:", 0) == 0) {
                message.insert(4, "[" + std::to_string(i) + "]");
            }
            throw InputError(message);
        }
        length = std::max(length, encodings.back().ids.size());
    }
    if (length == 0) {
        throw InputError("text: no tokens (an empty text without special tokens)");
    }
    // Right-padded rows (the model's pad id under a key padding mask of 0) and their
    // vocabulary strings.
    const bool batched = cx.doc["text"].is_array();
    std::string pad_from;
    std::int64_t pad = 0;
    if (batched) {
        pad = model::is_gguf_path(folder.string()) ? gguf_pad_id(folder, &pad_from)
                                                   : pad_id(cx, folder, *tokenizer, &pad_from);
    }
    json ids = json::array();
    json keep = json::array();
    std::vector<std::vector<std::string>> tokens;
    for (const text::Encoding& e : encodings) {
        std::vector<std::int64_t> row = e.ids;
        row.resize(length, pad);
        std::vector<int> k(e.ids.size(), 1);
        k.resize(length, 0);
        ids.push_back(row);
        keep.push_back(k);
        tokens.push_back(e.tokens);
    }
    cx.doc["token_ids"] = batched ? ids : ids[0];
    if (batched) {
        cx.doc["key_padding_mask"] = keep;
    }
    // Labels: the first row's tokens shown readably (a batch's padding as "").
    if (!cx.has("tokens") && !cx.has("query_tokens") && !cx.has("key_tokens")) {
        std::vector<std::string> labels = encodings.front().labels;
        labels.resize(length);
        cx.doc["tokens"] = labels;
    }
    p.text_tokens = std::move(tokens);
    p.text_batched = batched;
    p.settings.push_back(
        {"token_ids",
         std::to_string(length) + " tokens" +
             (batched ? " (" + std::to_string(texts.size()) + " texts, padded with id " +
                            std::to_string(pad) + ": " + pad_from + ")"
                      : ""),
         "text"});
}

Problem text_to_token_ids(json& doc, const fs::path& base) {
    Problem p;
    if (!doc.is_object() || !doc.contains("text") || doc["text"].is_null()) {
        return p;
    }
    DecodeContext cx;
    cx.doc = doc;
    cx.base = base;
    decode_text(cx, p);
    cx.doc.erase("text");
    cx.doc.erase("special_tokens");
    doc = std::move(cx.doc);
    return p;
}

} // namespace attn::problem::detail

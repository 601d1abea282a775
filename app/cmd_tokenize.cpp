// `attn tokenize MODEL --text S | --text-file F`: a model's own tokenizer (io/tokenizer)
// on one or more texts, printed as {"token_ids", "tokens"} (a list for several texts) or,
// with --ids, the ids alone. Only flags and printing here.
#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/text/tokenizer.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::app {

namespace {

struct TokenizeArgs {
    std::string model;
    std::vector<std::string> texts;
    std::vector<std::string> text_files;
    bool ids = false;
    bool json = false;
    bool no_special_tokens = false;
};

void tokenize_options(CLI::App& cmd, TokenizeArgs& a) {
    cmd.add_option("MODEL",
                   a.model,
                   "a model folder (its tokenizer.json or tokenizer.model), the file, or a .gguf "
                   "(its own vocabulary)")
        ->required();
    cmd.add_option("--text", a.texts, "a text to tokenize (repeat for several)")
        ->allow_extra_args(false);
    cmd.add_option("--text-file",
                   a.text_files,
                   "a file whose bytes are the text, - for stdin (repeat for several)")
        ->allow_extra_args(false);
    cmd.add_flag("--ids", a.ids, "print the ids alone, on one line (space-separated)");
    cmd.add_flag("--json", a.json, "print {\"token_ids\": [...], \"tokens\": [...]} (the default)");
    cmd.add_flag("--no-special-tokens",
                 a.no_special_tokens,
                 "leave out the post-processor's special tokens ([CLS] ... [SEP], llama's <s>)");
}

void run_tokenize(const TokenizeArgs& a) {
    if (a.ids && a.json) {
        throw InputError("--ids and --json: give one");
    }
    std::vector<std::string> texts = a.texts;
    for (const std::string& file : a.text_files) {
        const std::vector<std::uint8_t> bytes =
            file == "-" ? read_stdin("--text-file -") : io::read_file(file);
        texts.emplace_back(bytes.begin(), bytes.end());
    }
    if (texts.empty()) {
        throw InputError("tokenize: give --text TEXT or --text-file FILE");
    }
    const std::unique_ptr<text::Tokenizer> tokenizer = text::load_tokenizer(a.model);
    nlohmann::json docs = nlohmann::json::array();
    for (const std::string& text : texts) {
        if (a.ids) {
            const std::vector<std::int64_t> ids = tokenizer->encode_ids(text, !a.no_special_tokens);
            std::string line; // one write: a stream insertion per id cost 6% of a 1 MB text
            for (std::size_t i = 0; i < ids.size(); ++i) {
                line += (i == 0 ? "" : " ") + std::to_string(ids[i]);
            }
            std::cout << line << '\n';
            continue;
        }
        const text::Encoding e = tokenizer->encode(text, !a.no_special_tokens);
        docs.push_back({{"token_ids", e.ids}, {"tokens", e.tokens}});
    }
    if (!a.ids) {
        std::cout << (docs.size() == 1 ? docs[0] : docs).dump() << '\n';
    }
    flush_stdout();
}

} // namespace

void add_tokenize(CLI::App& app) {
    add_command<TokenizeArgs>(app,
                              {"tokenize",
                               "Tokenize text with a model's own tokenizer (tokenizer.json or "
                               "tokenizer.model): ids and vocabulary strings"},
                              tokenize_options,
                              run_tokenize);
}

} // namespace attn::app

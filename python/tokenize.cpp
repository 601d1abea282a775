// attn.tokenize: a model's own tokenizer (attn/text/tokenizer.hpp), as `attn tokenize MODEL
// --text ...` prints it: {"token_ids": ..., "tokens": [...]} per text, the ids as numpy.
#include "attn/text/tokenizer.hpp"
#include "module.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn::python {

namespace {

py::dict encoding_dict(text::Encoding&& e) {
    auto* held = new std::vector<std::int64_t>(std::move(e.ids));
    const py::capsule owner(held,
                            [](void* p) { delete static_cast<std::vector<std::int64_t>*>(p); });
    py::dict out;
    const std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(held->size())};
    out["token_ids"] = py::array_t<std::int64_t>(shape, held->data(), owner);
    out["tokens"] = py::cast(e.tokens);
    return out;
}

/// One dict for a string, a list of dicts for a list of strings (the CLI's several texts).
py::object tokenize(const py::object& path, const py::object& text, bool special_tokens) {
    const std::string model = py::str(path);
    const bool one = py::isinstance<py::str>(text);
    const std::vector<std::string> texts = one ? std::vector<std::string>{text.cast<std::string>()}
                                               : text.cast<std::vector<std::string>>();
    std::vector<text::Encoding> encodings = released([&] {
        std::vector<text::Encoding> out;
        const std::unique_ptr<text::Tokenizer> tokenizer = text::load_tokenizer(model);
        for (const std::string& t : texts) {
            detail::interruption_point();
            out.push_back(tokenizer->encode(t, special_tokens));
        }
        return out;
    });
    if (one) {
        return encoding_dict(std::move(encodings.front()));
    }
    py::list out;
    for (text::Encoding& e : encodings) {
        out.append(encoding_dict(std::move(e)));
    }
    return out;
}

} // namespace

void register_tokenize(py::module_& m) {
    m.def("tokenize",
          &tokenize,
          py::arg("path"),
          py::arg("text"),
          py::arg("special_tokens") = true,
          R"doc(Tokenizes text with a model's own tokenizer, as `attn tokenize MODEL --text ...`.

  path            a model folder (its tokenizer.json, else tokenizer.model) or the file
  text            a string, or a list of strings
  special_tokens  add the post-processor's tokens ([CLS] ... [SEP], llama's <s>)

Returns {"token_ids": int64 numpy array, "tokens": [vocabulary strings as Hugging
Face's convert_ids_to_tokens gives them]}, or a list of those for a list of texts.

Example:
  attn.tokenize("bert-base-uncased/", "Hello world")["tokens"]
  # ['[CLS]', 'hello', 'world', '[SEP]'])doc");
}

} // namespace attn::python

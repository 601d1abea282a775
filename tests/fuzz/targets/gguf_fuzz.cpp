// Fuzz target: the GGUF reader (model::parse_gguf_header: magic, version, counts, metadata of
// every type with nested arrays, tensor infos, alignment and offsets), then every tensor
// dequantized (model::decode_gguf_tensor) from the bytes the header says it has, and the
// metadata's vocabulary (text::parse_gguf_vocab) built and run on a short text.
// Properties: nothing but InputError escapes, its message is one line; every tensor the
// header accepts lies inside the input and fills its shape when decoded.
#include "attn/model/gguf.hpp"
#include "attn/text/tokenizer.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

using namespace attn;

ATTN_FUZZ_TARGET(gguf) {
    fuzz::set_limits();
    const std::span<const std::uint8_t> bytes(data, size);
    model::GgufHeader h;
    if (!fuzz::only_input_errors("parse_gguf_header",
                                 [&] { h = model::parse_gguf_header(bytes, size, "fuzz.gguf"); })) {
        return 0;
    }
    fuzz::expect(h.data_start <= size && (h.tensors.empty() || h.data_start % h.alignment == 0),
                 "data section outside the input or misaligned");
    for (const model::GgufTensor& t : h.tensors) {
        fuzz::expect(t.offset <= h.data_size && t.bytes <= h.data_size - t.offset,
                     "tensor '" + t.name + "' reaches past the input");
        const auto raw = bytes.subspan(static_cast<std::size_t>(h.data_start + t.offset),
                                       static_cast<std::size_t>(t.bytes));
        io::Array a;
        if (fuzz::only_input_errors("decode_gguf_tensor",
                                    [&] { a = model::decode_gguf_tensor(t, raw, "fuzz.gguf"); })) {
            fuzz::expect(a.values.size() == fuzz::element_count(a.shape) && a.shape == t.shape,
                         "tensor '" + t.name + "' does not fill its shape");
        }
    }
    std::unique_ptr<text::Tokenizer> tokenizer;
    if (fuzz::only_input_errors("parse_gguf_vocab",
                                [&] { tokenizer = text::parse_gguf_vocab(h, "fuzz.gguf"); })) {
        (void)fuzz::only_input_errors("encode", [&] {
            (void)tokenizer->encode("Hello world, I'm 12345 caf\xC3\xA9s <s>\n", true);
        });
    }
    return 0;
}

// Fuzz target: Ollama manifests (model::ollama_model_digest), the JSON that names the blob
// attn opens for `--params ollama:NAME`. Properties: nothing but InputError escapes, its
// message is one line; a digest returned is exactly sha256[:-]<64 hex> (so that the blob's
// path can never leave blobs/), and the same text gives the same digest again.
#include "attn/model/store.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace attn;

namespace {

bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

} // namespace

ATTN_FUZZ_TARGET(ollama_manifest) {
    const std::string_view text = fuzz::input_text(data, size);
    std::string digest;
    if (!fuzz::only_input_errors("ollama_model_digest",
                                 [&] { digest = model::ollama_model_digest(text, "manifest"); })) {
        return 0;
    }
    fuzz::expect(digest.size() == 71 && digest.compare(0, 6, "sha256") == 0 &&
                     (digest[6] == ':' || digest[6] == '-'),
                 "a digest not of the form sha256:<hex>: " + digest);
    for (std::size_t i = 7; i < digest.size(); ++i) {
        fuzz::expect(is_hex(digest[i]), "a digest with a non-hex character: " + digest);
    }
    fuzz::expect(model::ollama_model_digest(text, "again") == digest,
                 "the same manifest gives another digest");
    return 0;
}

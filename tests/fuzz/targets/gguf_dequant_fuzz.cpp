// Fuzz target: ggml's dequantizers (model::dequantize_ggml) on arbitrary blocks. The first
// byte picks the type (modulo the table, so every number is tried), the rest are whole
// blocks of it. Properties: only dequantizable types are decoded, each block's bytes give
// exactly its elements, and a second run over the same bytes gives the same bits.
#include "attn/model/quants.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

using namespace attn;

ATTN_FUZZ_TARGET(gguf_dequant) {
    if (size == 0) {
        return 0;
    }
    const std::uint32_t type = data[0] % 40U;
    const model::GgmlTypeTraits* t = model::ggml_type_traits(type);
    if (t == nullptr || !t->dequantizable) {
        return 0;
    }
    const std::size_t n_blocks = (size - 1) / t->block_bytes;
    const std::span<const std::uint8_t> src(data + 1, n_blocks * t->block_bytes);
    std::vector<float> a(n_blocks * t->block);
    std::vector<float> b(a.size());
    model::dequantize_ggml(type, src, a);
    model::dequantize_ggml(type, src, b);
    fuzz::expect(a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0,
                 "dequantization is not deterministic");
    return 0;
}

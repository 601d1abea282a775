// GGUF files built byte by byte for the hostile-header tests: every field as the format
// lays it out (docs/gguf.md), with hooks to write counts, types and offsets that lie.
// Valid files for the value tests come from gguf-py instead (fixtures/gguf/).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attn::testing {

inline void put_u32(std::vector<std::uint8_t>& b, std::uint32_t v) {
    for (int k = 0; k < 4; ++k) {
        b.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
    }
}

inline void put_u64(std::vector<std::uint8_t>& b, std::uint64_t v) {
    for (int k = 0; k < 8; ++k) {
        b.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
    }
}

/// Overwrites 8 bytes at `at`.
inline void put_u64(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v) {
    for (std::size_t k = 0; k < 8; ++k) {
        b[at + k] = static_cast<std::uint8_t>(v >> (8 * k));
    }
}

inline void put_string(std::vector<std::uint8_t>& b, const std::string& s) {
    put_u64(b, s.size());
    b.insert(b.end(), s.begin(), s.end());
}

/// A GGUF file: header, metadata, tensor infos, padding to 32, then data_bytes zeros.
struct GgufBytes {
    std::uint32_t version = 3;
    std::optional<std::uint64_t> n_tensors_override;
    std::optional<std::uint64_t> n_kv_override;
    std::vector<std::vector<std::uint8_t>> kvs;
    struct Tensor {
        std::string name;
        std::vector<std::uint64_t> dims;
        std::uint32_t type = 0;
        std::uint64_t offset = 0;
    };
    std::vector<Tensor> tensors;
    std::size_t data_bytes = 0;

    /// A key, a value type, and the value's bytes as `write` appends them.
    void kv_raw(const std::string& key,
                std::uint32_t type,
                const std::function<void(std::vector<std::uint8_t>&)>& write) {
        std::vector<std::uint8_t> b;
        put_string(b, key);
        put_u32(b, type);
        write(b);
        kvs.push_back(std::move(b));
    }
    void kv_string(const std::string& key, const std::string& value) {
        kv_raw(key, 8, [&](std::vector<std::uint8_t>& b) { put_string(b, value); });
    }
    void tensor(const std::string& name,
                std::vector<std::uint64_t> dims,
                std::uint32_t type,
                std::uint64_t offset) {
        tensors.push_back({name, std::move(dims), type, offset});
    }

    std::vector<std::uint8_t> bytes() const {
        std::vector<std::uint8_t> b = {'G', 'G', 'U', 'F'};
        put_u32(b, version);
        put_u64(b, n_tensors_override.value_or(tensors.size()));
        put_u64(b, n_kv_override.value_or(kvs.size()));
        for (const auto& kv : kvs) {
            b.insert(b.end(), kv.begin(), kv.end());
        }
        for (const Tensor& t : tensors) {
            put_string(b, t.name);
            put_u32(b, static_cast<std::uint32_t>(t.dims.size()));
            for (const std::uint64_t d : t.dims) {
                put_u64(b, d);
            }
            put_u32(b, t.type);
            put_u64(b, t.offset);
        }
        while (b.size() % 32 != 0) {
            b.push_back(0);
        }
        b.resize(b.size() + data_bytes, 0);
        return b;
    }
};

} // namespace attn::testing

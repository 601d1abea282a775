// safetensors files built byte by byte for the tests of the reader (safetensors_test) and the
// layouts (safetensors_layouts_test) and checkpoints for other tests (f32_safetensors): the header
// length, a header of tensor entries, payloads of every dtype, and the check of a one-line
// InputError.
#pragma once

#include "attn/error.hpp"
#include "attn/model/safetensors.hpp"
#include "unit/test_files.hpp"

#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace attn::testing {

using Bytes = std::vector<std::uint8_t>;

inline void append_le(Bytes& out, std::uint64_t v, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) {
        out.push_back(static_cast<std::uint8_t>((v >> (8 * k)) & 0xffu));
    }
}

/// A file: the header length, `header` verbatim, then `data`.
inline Bytes file_of(std::string_view header, const Bytes& data = {}) {
    Bytes out;
    append_le(out, header.size(), 8);
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

/// Little-endian bytes of each value: floats by their bit patterns, integers (F16 and BF16
/// bit patterns) as they are.
template <class T> Bytes le_bytes(const std::vector<T>& values) {
    Bytes out;
    for (const T x : values) {
        if constexpr (std::is_same_v<T, float>) {
            append_le(out, std::bit_cast<std::uint32_t>(x), 4);
        } else if constexpr (std::is_same_v<T, double>) {
            append_le(out, std::bit_cast<std::uint64_t>(x), 8);
        } else {
            append_le(out, x, sizeof(T));
        }
    }
    return out;
}
inline Bytes f32_bytes(const std::vector<float>& v) {
    return le_bytes(v);
}
inline Bytes u16_bytes(const std::vector<std::uint16_t>& v) {
    return le_bytes(v);
}
inline Bytes f64_bytes(const std::vector<double>& v) {
    return le_bytes(v);
}

/// One tensor entry of a header, as JSON text.
inline std::string entry(std::string_view name,
                         std::string_view dtype,
                         std::string_view shape,
                         std::uint64_t begin,
                         std::uint64_t end) {
    return "\"" + std::string(name) + "\":{\"dtype\":\"" + std::string(dtype) +
           "\",\"shape\":" + std::string(shape) + ",\"data_offsets\":[" + std::to_string(begin) +
           "," + std::to_string(end) + "]}";
}

/// A safetensors file of F32 tensors, each {name, shape, values}, in order.
struct F32Tensor {
    std::string name;
    std::vector<std::size_t> shape;
    std::vector<float> values;
};
inline Bytes f32_safetensors(const std::vector<F32Tensor>& tensors) {
    std::string header = "{";
    Bytes data;
    for (const F32Tensor& t : tensors) {
        std::string shape = "[";
        for (const std::size_t d : t.shape) {
            shape += (shape.size() > 1 ? "," : "") + std::to_string(d);
        }
        const std::uint64_t begin = data.size();
        const Bytes bytes = f32_bytes(t.values);
        data.insert(data.end(), bytes.begin(), bytes.end());
        header +=
            (header.size() > 1 ? "," : "") + entry(t.name, "F32", shape + "]", begin, data.size());
    }
    return file_of(header + "}", data);
}

/// f() must throw an InputError: one line, starting with "m.safetensors: " and containing
/// `needle`.
inline void expect_error(const std::function<void()>& f,
                         std::string_view needle,
                         std::string_view start = "m.safetensors: ") {
    (void)expect_error_message<InputError>(f, start, needle);
}

inline void expect_file_error(const Bytes& file, std::string_view needle) {
    expect_error([&] { (void)model::parse_safetensors(file, "m.safetensors"); }, needle);
}

} // namespace attn::testing

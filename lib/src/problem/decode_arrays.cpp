// Array fields of the problem document: loading them (inline, from a file, or handed over
// already read), recording their sources, lifting them into tensors in each precision, and
// the shape checks of masks and biases.
#include "attn/error.hpp"
#include "attn/huge_pages.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_array.hpp"
#include "attn/io/limits.hpp"
#include "decode_detail.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

namespace attn::problem::detail {

using io::parse_json_array;
using io::read_array_file;
using io::ValueSink;

namespace {

/// Frees an array's values in T once they have been copied into a tensor, so that a
/// problem never holds an input twice (the shape and the other precision's values stay).
template <class T> void release_values(Array& a) {
    std::vector<T>().swap(values_in<T>(a));
    if constexpr (std::is_same_v<T, float>) {
        a.borrowed.reset();
    }
}

} // namespace

/// Records where an array came from and its first value --check-finite refuses.
void record_source(std::vector<ProblemSource>& sources,
                   const std::string& name,
                   const fs::path& path,
                   const std::vector<std::size_t>& shape,
                   std::span<const float> values,
                   ArrayKind kind) {
    ProblemSource s{name, path, shape, std::nullopt, 0.0f};
    if (kind == ArrayKind::numeric) {
        // Masks load as numbers only under mask_convention "additive", where -inf blocks.
        const bool is_bias = name == "bias" || name == "mask" || name == "key_padding_mask";
        const auto bad = std::find_if(values.begin(), values.end(), [&](float x) {
            return is_bias ? (std::isnan(x) || x == std::numeric_limits<float>::infinity())
                           : !std::isfinite(x);
        });
        if (bad != values.end()) {
            s.first_nonfinite = static_cast<std::size_t>(bad - values.begin());
            s.nonfinite_value = *bad;
        }
    }
    sources.push_back(std::move(s));
}

void record_source(std::vector<ProblemSource>& sources,
                   const std::string& name,
                   const fs::path& path,
                   const Array& a,
                   ArrayKind kind) {
    record_source(sources, name, path, a.shape, a.floats(), kind);
}

/// Loads an array field: a JSON literal, or a .npy/.json path relative to base_dir.
/// With Precision::f64, numeric arrays also keep their exact float64 values (masks never
/// need them: booleans, 0/1 and 0/-inf are exact in float32).
Array load_array(const json& j,
                 const std::string& name,
                 ArrayKind kind,
                 const fs::path& base,
                 std::vector<ProblemSource>& sources,
                 Precision precision,
                 std::optional<Tensor>* rank4) {
    if (kind != ArrayKind::numeric) {
        precision = Precision::f32;
    }
    if (j.is_string()) {
        const fs::path p = j.get<std::string>();
        const fs::path full = p.is_absolute() ? p : base / p;
        // A rank-4 [B, H, L, D] .npy input is decoded straight into its tensor: no second
        // copy of what may be the largest input.
        ValueSink sink;
        if (rank4 != nullptr) {
            sink = [rank4](const std::vector<std::size_t>& shape) -> float* {
                if (shape.size() != 4) {
                    return nullptr;
                }
                *rank4 = uninitialized_tensor<float>({shape[0], shape[1], shape[2], shape[3]});
                return (*rank4)->data();
            };
        }
        Array a;
        try {
            a = read_array_file(full, kind, precision, sink, name);
        } catch (const InputError& e) {
            throw InputError(name + ": " + e.marked());
        }
        if (rank4 != nullptr && *rank4) {
            record_source(sources,
                          name,
                          full,
                          a.shape,
                          std::span<const float>((*rank4)->data(), (*rank4)->size()),
                          kind);
        } else {
            record_source(sources, name, full, a, kind);
        }
        return a;
    }
    if (j.is_array()) {
        Array a = parse_json_array(j, name, kind, precision);
        record_source(sources, name, {}, a, kind);
        return a;
    }
    throw InputError(name + ": expected an array or the path of a .npy/.json file, got " +
                     type_name(j));
}

Array handed_over(Array a, Precision precision) {
    const std::span<const float> floats = a.floats();
    if (precision == Precision::f64 && a.values64.size() != floats.size()) {
        a.values64.assign(floats.begin(), floats.end());
    }
    return a;
}

template <class T> BasicTensor3<T> to_tensor3(Array& a, const std::string& name, const char* dims) {
    typename BasicTensor3<T>::shape_type shape{};
    if (a.shape.size() == 2) {
        shape = {1, a.shape[0], a.shape[1]};
    } else if (a.shape.size() == 3) {
        shape = {a.shape[0], a.shape[1], a.shape[2]};
    } else {
        throw InputError::field(name,
                                "a rank-2 " + std::string(dims) + " or rank-3 [B, " +
                                    std::string(dims + 1) + " array",
                                "shape " + shape_string(a.shape));
    }
    auto t = array_tensor<BasicTensor3<T>>(a, shape);
    release_values<T>(a);
    return t;
}

template <class T> BasicInputTensor<T> to_tensor4(Array& a, std::optional<Tensor>& sunk) {
    const Shape shape{a.shape[0], a.shape[1], a.shape[2], a.shape[3]};
    if constexpr (std::is_same_v<T, float>) {
        if (sunk) {
            return std::move(*sunk);
        }
        if (a.borrowed) { // read in place: no copy
            InputTensor t = InputTensor::borrow(a.borrowed, shape);
            a.borrowed.reset();
            return t;
        }
    }
    BasicInputTensor<T> t = array_tensor<BasicTensor<T>>(a, shape);
    release_values<T>(a);
    return t;
}

template Tensor3 to_tensor3<float>(Array&, const std::string&, const char*);
template BasicTensor3<double> to_tensor3<double>(Array&, const std::string&, const char*);
template InputTensor to_tensor4<float>(Array&, std::optional<Tensor>&);
template BasicInputTensor<double> to_tensor4<double>(Array&, std::optional<Tensor>&);

/// Repeats every value of `a` `n` times in place (a size-1 last dim grown to n), after
/// checking the grown float32 (and float64) buffers against the memory limit.
void repeat_last_dim(Array& a, std::size_t n, const std::string& name, const Shape& grown) {
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t per_value = sizeof(float) + (a.values64.empty() ? 0 : sizeof(double));
    const std::uint64_t count = a.values.size();
    const std::uint64_t bytes =
        count != 0 && n > max / count / per_value ? max : count * n * per_value;
    if (bytes > io::memory_limit()) {
        throw InputError(name + ": broadcasting its key dim gives shape " +
                         shape_string({grown.begin(), grown.end()}) + ", " +
                         io::format_size(bytes) + ", more than the memory limit of " +
                         io::format_size(io::memory_limit()) + " (--max-memory)");
    }
    const auto grow = [n](auto& values) {
        std::remove_reference_t<decltype(values)> out;
        out.reserve(values.size() * n);
        for (const auto x : values) {
            out.insert(out.end(), n, x);
        }
        values.swap(out);
    };
    grow(a.values);
    grow(a.values64);
}

/// Shape check of a mask or bias given in the user's rank, broadcast against
/// [B, H, Lq, Lk] as torch's F.scaled_dot_product_attention does (numpy's rule: dims
/// aligned on the right, each equal or 1; rank 0 to 4), except rank 3, which keeps its
/// meaning [B, Lq, Lk] (per batch, every head). Returns the rank-4 shape
/// [B|1, H|1, Lq|1, Lk]: size-1 batch, head and query dims stay 1 (the kernels read one row
/// for all of them); a size-1 key dim is grown to Lk in `a` (the kernels index keys).
Shape pair_shape(Array& a,
                 const std::string& name,
                 std::size_t b,
                 std::size_t h,
                 std::size_t lq,
                 std::size_t lk) {
    const auto& s = a.shape;
    const std::array<std::size_t, 4> want{b, h, lq, lk};
    // Which of [B, H, Lq, Lk] each of the user's dims stands for.
    std::vector<std::size_t> dims;
    if (s.size() == 3) {
        dims = {0, 2, 3};
    } else if (s.size() <= 4) {
        for (std::size_t k = 4 - s.size(); k < 4; ++k) {
            dims.push_back(k);
        }
    }
    bool ok = !dims.empty() || s.empty();
    Shape out{1, 1, 1, 1};
    for (std::size_t k = 0; ok && k < dims.size(); ++k) {
        ok = s[k] == want[dims[k]] || s[k] == 1;
        out[dims[k]] = s[k];
    }
    if (ok) {
        if (out[3] != lk) {
            out[3] = lk;
            repeat_last_dim(a, lk, name, out);
        }
        return out;
    }
    std::string want_text;
    switch (s.size()) {
    case 3:
        want_text = "[B, Lq, Lk] = " + shape_string({b, lq, lk}) + " (B may be 1)";
        break;
    case 4:
        want_text = "[B, H, Lq, Lk] = " + shape_string({b, h, lq, lk}) + " (B and H may be 1)";
        break;
    case 2:
        want_text = "[Lq, Lk] = " + shape_string({lq, lk});
        break;
    case 1:
        want_text = "[Lk] = " + shape_string({lk});
        break;
    default:
        want_text = "[Lq, Lk] = " + shape_string({lq, lk}) + ", [B, Lq, Lk] or [B, H, Lq, Lk]";
    }
    std::string hint = s.size() >= 1 && s.size() <= 4 ? " (any dim may be 1: it broadcasts)" : "";
    if (name == "mask" && s.size() == 2 && s[0] == b && s[1] == lk) {
        hint += "; a [B, Lk] padding mask (Hugging Face's attention_mask) goes in "
                "key_padding_mask (--key-padding)";
    }
    throw InputError(name + ": expected shape " + want_text + ", got " + shape_string(s) + hint);
}

} // namespace attn::problem::detail

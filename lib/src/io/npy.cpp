// NPY payloads: decoding every dtype we read (f2/f4/f8, i1-i8, u1-u8, b1, in either byte
// order, C or Fortran order) into float32 or float64, from memory or from a file in
// chunks; and encoding "<f4"/"<f8" files, whole or streamed through an AtomicWriter. The
// header (npy_header.cpp) is checked against the bytes present before anything is
// allocated.
#include "attn/io/npy.hpp"

#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/io/atomic_file.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/limits.hpp"
#include "npy_header.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <sys/types.h>
#include <type_traits>
#include <unistd.h>

namespace attn::io {
namespace detail {

namespace {

/// Reads one N-byte element starting at p as an unsigned integer, in the file's byte order.
template <std::size_t N> std::uint64_t load_raw(const std::uint8_t* p, bool big_endian) {
    std::uint64_t raw = 0;
    if (big_endian) {
        for (std::size_t k = 0; k < N; ++k) {
            raw = (raw << 8) | p[k];
        }
    } else {
        for (std::size_t k = N; k-- > 0;) {
            raw = (raw << 8) | p[k];
        }
    }
    return raw;
}

/// Decodes the source elements [first, first + n) of a payload (`src` points at element
/// `first`) into `dst`, the whole array in C order, converting each element with
/// `decode(raw bits)`. Fortran-ordered payloads are transposed on the way: an odometer over
/// the Fortran index (first axis fastest) keeps the matching C-order offset, so a payload
/// can be decoded in chunks as it is read.
template <std::size_t N, class Out, class Decode>
void decode_payload(const std::uint8_t* src,
                    std::size_t first,
                    std::size_t n,
                    const NpyHeader& header,
                    bool big_endian,
                    Out* dst,
                    Decode decode) {
    if (n == 0) {
        return; // and every dimension is non-zero below
    }
    const std::vector<std::size_t>& shape = header.shape;
    const std::size_t rank = shape.size();
    if (!header.fortran_order || rank < 2) {
        for (std::size_t i = 0; i < n; ++i) {
            dst[first + i] = decode(load_raw<N>(src + i * N, big_endian));
        }
        return;
    }
    std::vector<std::size_t> c_stride(rank, 1);
    for (std::size_t k = rank - 1; k-- > 0;) {
        c_stride[k] = c_stride[k + 1] * shape[k + 1]; // <= element count: no overflow
    }
    std::vector<std::size_t> index(rank, 0);
    std::size_t rest = first;
    std::size_t offset = 0;
    for (std::size_t k = 0; k < rank; ++k) {
        index[k] = rest % shape[k];
        rest /= shape[k];
        offset += index[k] * c_stride[k];
    }
    for (std::size_t i = 0; i < n; ++i) {
        dst[offset] = decode(load_raw<N>(src + i * N, big_endian));
        for (std::size_t k = 0; k < rank; ++k) { // next Fortran index: first axis fastest
            ++index[k];
            offset += c_stride[k];
            if (index[k] < shape[k]) {
                break;
            }
            offset -= c_stride[k] * shape[k];
            index[k] = 0;
        }
    }
}

/// Decodes source elements [first, first + count) (see decode_payload) of any dtype into
/// Out = float (rounded to nearest) or double (exact: every NPY dtype fits in a double
/// except 64-bit integers beyond 2^53, which round).
template <class Out>
void decode_npy(const std::uint8_t* src,
                std::size_t first,
                std::size_t count,
                const NpyHeader& header,
                const DType& type,
                Out* dst) {
    const bool be = type.big_endian;
    switch (type.kind) {
    case ElementKind::floating:
        if (type.size == 2) {
            decode_payload<2>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(half_to_float(static_cast<std::uint16_t>(r)));
            });
        } else if (type.size == 4) {
            decode_payload<4>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(std::bit_cast<float>(static_cast<std::uint32_t>(r)));
            });
        } else {
            // float: rounds to nearest; beyond float range gives ±inf, as numpy's astype(float32).
            decode_payload<8>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(std::bit_cast<double>(r));
            });
        }
        return;
    case ElementKind::signed_int:
        switch (type.size) {
        case 1:
            decode_payload<1>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(static_cast<std::int8_t>(r));
            });
            return;
        case 2:
            decode_payload<2>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(static_cast<std::int16_t>(r));
            });
            return;
        case 4:
            decode_payload<4>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(static_cast<std::int32_t>(r));
            });
            return;
        default:
            decode_payload<8>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(static_cast<std::int64_t>(r));
            });
            return;
        }
    case ElementKind::unsigned_int:
        switch (type.size) {
        case 1:
            decode_payload<1>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(r);
            });
            return;
        case 2:
            decode_payload<2>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(r);
            });
            return;
        case 4:
            decode_payload<4>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(r);
            });
            return;
        default:
            decode_payload<8>(src, first, count, header, be, dst, [](std::uint64_t r) {
                return static_cast<Out>(r);
            });
            return;
        }
    case ElementKind::boolean:
        // numpy reads any non-zero byte as True.
        decode_payload<1>(src, first, count, header, be, dst, [](std::uint64_t r) {
            return r != 0 ? Out(1) : Out(0);
        });
        return;
    }
}

/// Refuses arrays whose float32 copy does not fit memory_limit(), before allocating it.
void check_array_fits(const NpyHeader& header, std::string_view name) {
    std::size_t bytes = 0;
    const std::size_t count = element_count(header.shape);
    const std::uint64_t limit = memory_limit();
    const bool fits = checked_mul(count, sizeof(float), bytes);
    if (!fits || bytes > limit) {
        throw InputError(std::string(name) + ": the array of shape " + python_shape(header.shape) +
                         " needs " + format_size(fits ? bytes : unlimited_memory) +
                         " as float32, more than the memory limit of " + format_size(limit) +
                         " (--max-memory)");
    }
}

} // namespace

Array read_npy_file(int fd,
                    std::uint64_t file_size,
                    const std::string& shown,
                    Precision precision,
                    const ValueSink* sink) {
    std::vector<std::uint8_t> head(
        static_cast<std::size_t>(std::min<std::uint64_t>(file_size, 12)));
    read_exactly(fd, head.data(), head.size(), shown);
    const std::size_t end = npy_header_end(head, file_size, shown);
    if (end > head.size()) {
        const std::size_t have = head.size();
        head.resize(end);
        read_exactly(fd, head.data() + have, end - have, shown);
    } else if (::lseek(fd, static_cast<off_t>(end), SEEK_SET) < 0) {
        throw InputError::cannot_read(shown, errno);
    }
    const NpyHeader header = parse_npy_header_sized(head, file_size, shown);
    const DType type = parse_descr(header.descr, shown);
    const std::size_t count = element_count(header.shape);
    const std::size_t payload = count * header.item_size; // checked by the header parse
    const std::uint64_t present = file_size - header.header_bytes;
    if (present != payload) {
        throw InputError::trailing_bytes(shown, payload, present);
    }
    check_array_fits(header, shown);
    Array out;
    out.shape = header.shape;
    out.dtype = header.dtype;
    out.is_bool = type.kind == ElementKind::boolean;
    float* values = nullptr;
    if (sink != nullptr && *sink && precision == Precision::f32) {
        values = (*sink)(header.shape);
    }
    if (values == nullptr) {
        out.values.resize(count);
        values = out.values.data();
    }
    if (precision == Precision::f64) {
        out.values64.resize(count);
    }
    if (precision == Precision::f32 && header.descr == "<f4" && !header.fortran_order &&
        std::endian::native == std::endian::little) {
        // The payload is already the values: one read into their final place.
        read_exactly(fd, reinterpret_cast<std::uint8_t*>(values), payload, shown);
    } else {
        std::vector<std::uint8_t> chunk(std::min(payload, npy_chunk_bytes));
        const std::size_t per_chunk = npy_chunk_bytes / header.item_size;
        for (std::size_t first = 0; first < count; first += per_chunk) {
            const std::size_t n = std::min(per_chunk, count - first);
            read_exactly(fd, chunk.data(), n * header.item_size, shown);
            decode_npy(chunk.data(), first, n, header, type, values);
            if (precision == Precision::f64) {
                decode_npy(chunk.data(), first, n, header, type, out.values64.data());
            }
        }
    }
    std::uint8_t extra = 0;
    if (read_some(fd, &extra, 1) != 0) {
        throw InputError(shown + ": trailing bytes: the file grew while it was read");
    }
    return out;
}

} // namespace detail

using namespace detail;

namespace {

/// A C- or Fortran-order payload of `header`'s dtype decoded into float32 (and float64 with
/// Precision::f64), after the memory check: what a file and an in-memory array share.
Array decode_array(const std::uint8_t* payload,
                   const NpyHeader& header,
                   const DType& type,
                   std::string_view name,
                   Precision precision) {
    check_array_fits(header, name);
    const std::size_t count = element_count(header.shape);
    Array out;
    out.shape = header.shape;
    out.dtype = header.dtype;
    out.is_bool = type.kind == ElementKind::boolean;
    out.values.resize(count);
    decode_npy(payload, 0, count, header, type, out.values.data());
    if (precision == Precision::f64) {
        out.values64.resize(count);
        decode_npy(payload, 0, count, header, type, out.values64.data());
    }
    return out;
}

} // namespace

Array parse_npy(std::span<const std::uint8_t> bytes, std::string_view name, Precision precision) {
    const NpyHeader header = parse_npy_header(bytes, name);
    const DType type = parse_descr(header.descr, name);
    const std::size_t count = element_count(header.shape);
    const std::size_t payload = count * header.item_size; // checked by parse_npy_header
    const std::size_t present = bytes.size() - header.header_bytes;
    if (present != payload) {
        throw InputError::trailing_bytes(name, payload, present);
    }
    return decode_array(bytes.data() + header.header_bytes, header, type, name, precision);
}

Array decode_npy_values(std::span<const std::uint8_t> payload,
                        std::string_view descr,
                        const std::vector<std::size_t>& shape,
                        std::string_view name,
                        Precision precision) {
    const DType type = parse_descr(descr, name);
    NpyHeader header;
    header.descr = descr;
    header.shape = shape;
    header.item_size = type.size;
    header.dtype = type.name;
    std::size_t count = 1;
    std::size_t bytes = 0;
    bool fits = true;
    for (const std::size_t d : shape) {
        fits = fits && checked_mul(count, d, count);
    }
    fits = fits && checked_mul(count, type.size, bytes);
    if (!fits) {
        throw InputError(std::string(name) + ": an array of shape " + python_shape(shape) +
                         " has more elements than memory can address");
    }
    if (bytes != payload.size()) {
        throw InputError(std::string(name) + ": an array of shape " + python_shape(shape) +
                         " and dtype " + type.name + " needs " + std::to_string(bytes) +
                         " bytes, got " + std::to_string(payload.size()));
    }
    return decode_array(payload.data(), header, type, name, precision);
}

namespace {

/// The preamble and header of an NPY v1.0 file (v2.0 when the v1.0 length field cannot
/// hold it), C order, "<f4" or "<f8", padded as numpy pads it.
std::string npy_header_text(const std::vector<std::size_t>& shape, std::string_view descr) {
    const std::string dict = std::string("{'descr': '") + std::string(descr) +
                             "', 'fortran_order': False, 'shape': " + python_shape(shape) + ", }";
    // numpy pads with spaces and ends with '\n' so that magic + length + header is a
    // multiple of 64; v2.0 (4-byte length) only when the v1.0 length field cannot hold it.
    constexpr std::size_t align = 64;
    std::size_t preamble = 10;
    std::size_t header_length = dict.size() + 1;
    header_length += (align - (preamble + header_length) % align) % align;
    int major = 1;
    if (header_length > 0xffff) {
        major = 2;
        preamble = 12;
        header_length = dict.size() + 1;
        header_length += (align - (preamble + header_length) % align) % align;
    }
    std::string head(npy_magic.begin(), npy_magic.end());
    head += static_cast<char>(major);
    head += '\0';
    for (std::size_t k = 0; k < preamble - 8; ++k) {
        head += static_cast<char>((header_length >> (8 * k)) & 0xffu);
    }
    head += dict;
    head.append(header_length - dict.size() - 1, ' ');
    head += '\n';
    return head;
}

std::string npy_header_text(const std::vector<std::size_t>& shape, NpyFloat type) {
    return npy_header_text(shape,
                           std::string_view(type == NpyFloat::f64   ? "<f8"
                                            : type == NpyFloat::f16 ? "<f2"
                                                                    : "<f4"));
}

std::size_t item_size(NpyFloat type) {
    return type == NpyFloat::f64 ? 8 : type == NpyFloat::f16 ? 2 : 4;
}

/// The n float32 values rounded to binary16 (floats_to_halves: double_to_half's bits at SIMD
/// speed) into `halves`, which holds at least n, and its bytes as "<f2" whatever the host
/// (swapped in place on a big-endian one).
std::span<const std::uint8_t>
halves_bytes(const float* values, std::size_t n, std::uint16_t* halves) {
    floats_to_halves(values, n, halves);
    if constexpr (std::endian::native == std::endian::big) {
        for (std::size_t i = 0; i < n; ++i) {
            halves[i] = static_cast<std::uint16_t>((halves[i] << 8) | (halves[i] >> 8));
        }
    }
    return {reinterpret_cast<const std::uint8_t*>(halves), 2 * n};
}

/// n float32 values as "<f2" from `out` on, through a small buffer.
void encode_halves(const float* values, std::size_t n, std::uint8_t* out) {
    constexpr std::size_t chunk = 1024;
    std::array<std::uint16_t, chunk> halves{};
    for (std::size_t done = 0; done < n; done += chunk) {
        const std::span<const std::uint8_t> bytes =
            halves_bytes(values + done, std::min(chunk, n - done), halves.data());
        std::copy(bytes.begin(), bytes.end(), out + 2 * done);
    }
}

/// Writes n values as little-endian "<f2", "<f4" or "<f8" (whatever the host) from `out` on.
template <class T>
void encode_npy_payload(const T* values, std::size_t n, NpyFloat type, std::uint8_t* out) {
    if constexpr (std::is_same_v<T, float>) {
        if (type == NpyFloat::f16) {
            encode_halves(values, n, out);
            return;
        }
        if (type == NpyFloat::f32 && std::endian::native == std::endian::little) {
            if (n != 0) { // an empty array's values may be null, which memcpy may not get
                std::memcpy(out, values, n * sizeof(float));
            }
            return;
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (type == NpyFloat::f16) {
            const std::uint16_t bits = double_to_half(static_cast<double>(values[i]));
            *out++ = static_cast<std::uint8_t>(bits & 0xffu);
            *out++ = static_cast<std::uint8_t>(bits >> 8);
        } else if (type == NpyFloat::f64) {
            const auto bits = std::bit_cast<std::uint64_t>(static_cast<double>(values[i]));
            for (std::size_t k = 0; k < 8; ++k) {
                *out++ = static_cast<std::uint8_t>((bits >> (8 * k)) & 0xffu);
            }
        } else {
            const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(values[i]));
            for (std::size_t k = 0; k < 4; ++k) {
                *out++ = static_cast<std::uint8_t>((bits >> (8 * k)) & 0xffu);
            }
        }
    }
}

template <class T>
std::vector<std::uint8_t>
encode_npy_impl(const std::vector<std::size_t>& shape, const T* values, NpyFloat type) {
    const std::string head = npy_header_text(shape, type);
    const std::size_t count = element_count(shape);
    const std::size_t item = item_size(type);
    // Sized once and filled in place: no per-byte push_back.
    std::vector<std::uint8_t> out(head.size() + count * item);
    std::transform(
        head.begin(), head.end(), out.begin(), [](char c) { return static_cast<std::uint8_t>(c); });
    encode_npy_payload(values, count, type, out.data() + head.size());
    return out;
}

/// The NPY encoding handed to `sink` in order: the header, then the payload 1 MiB at a time
/// (float32 on a little-endian host: the values' own bytes, no copy).
template <class T>
void stream_npy_impl(const std::vector<std::size_t>& shape,
                     const T* values,
                     NpyFloat type,
                     const ByteSink& sink) {
    const std::string head = npy_header_text(shape, type);
    sink(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(head.data()),
                                       head.size()));
    const std::size_t count = element_count(shape);
    const std::size_t item = item_size(type);
    const std::size_t per_chunk = npy_chunk_bytes / item;
    if constexpr (std::is_same_v<T, float> && std::endian::native == std::endian::little) {
        if (type == NpyFloat::f32) { // the payload is the values' own bytes: no copy
            for (std::size_t first = 0; first < count; first += per_chunk) {
                const std::size_t n = std::min(per_chunk, count - first);
                sink(std::span<const std::uint8_t>(
                    reinterpret_cast<const std::uint8_t*>(values + first), n * item));
            }
            return;
        }
    }
    std::vector<std::uint8_t> chunk(std::min(count, per_chunk) * item);
    for (std::size_t first = 0; first < count; first += per_chunk) {
        const std::size_t n = std::min(per_chunk, count - first);
        encode_npy_payload(values + first, n, type, chunk.data());
        sink(std::span<const std::uint8_t>(chunk.data(), n * item));
    }
}

} // namespace

std::vector<std::uint8_t>
encode_npy(const std::vector<std::size_t>& shape, const float* values, bool f64) {
    return encode_npy_impl(shape, values, npy_float(f64));
}

std::vector<std::uint8_t>
encode_npy(const std::vector<std::size_t>& shape, const double* values, bool f64) {
    return encode_npy_impl(shape, values, npy_float(f64));
}

std::vector<std::uint8_t> encode_npy_int64(const Array& a) {
    const std::string head = npy_header_text(a.shape, std::string_view("<i8"));
    std::vector<std::uint8_t> out(head.begin(), head.end());
    out.reserve(head.size() + 8 * a.values.size());
    const bool exact = has_exact_values(a); // values64: ids and counts past 2^24 exactly
    for (std::size_t i = 0; i < a.values.size(); ++i) {
        const double v = exact ? a.values64[i] : static_cast<double>(a.values[i]);
        const auto bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
        for (std::size_t k = 0; k < 8; ++k) {
            out.push_back(static_cast<std::uint8_t>((bits >> (8 * k)) & 0xffu));
        }
    }
    return out;
}

std::vector<std::uint8_t> encode_npy(const Array& a, NpyFloat type) {
    return has_exact_values(a) ? encode_npy_impl(a.shape, a.values64.data(), type)
                               : encode_npy_impl(a.shape, a.values.data(), type);
}

std::vector<std::uint8_t> encode_npy(const Array& a, bool f64) {
    return encode_npy(a, npy_float(f64));
}

void write_npy_file(const std::filesystem::path& path, const Array& a, NpyFloat type) {
    const std::string shown = path.string();
    if (shown == "-" || written_in_place(shown)) {
        write_file_atomic(path, encode_npy(a, type)); // stdout and devices: the whole encoding
        return;
    }
    AtomicWriter out(path);
    stream_npy(a, type, [&out](std::span<const std::uint8_t> bytes) { out.write(bytes); });
    out.commit();
}

void stream_npy(const Array& a, NpyFloat type, const ByteSink& sink) {
    if (has_exact_values(a)) {
        stream_npy_impl(a.shape, a.values64.data(), type, sink);
    } else {
        stream_npy_impl(a.shape, a.values.data(), type, sink);
    }
}

std::uint64_t npy_size(const std::vector<std::size_t>& shape, NpyFloat type) {
    return npy_header_text(shape, type).size() +
           static_cast<std::uint64_t>(element_count(shape)) * item_size(type);
}

void write_npy_file(const std::filesystem::path& path, const Array& a, bool f64) {
    write_npy_file(path, a, npy_float(f64));
}

bool npy_mappable(const std::filesystem::path& path) {
    const std::string shown = path.string();
    return std::endian::native == std::endian::little && shown != "-" && !written_in_place(shown);
}

NpyFileWriter::NpyFileWriter(const std::filesystem::path& path,
                             const std::vector<std::size_t>& shape,
                             NpyFloat type)
    : out_(path, true), count_(element_count(shape)), f16_(type == NpyFloat::f16) {
    static_assert(sizeof(float) == 4);
    if (type == NpyFloat::f64) {
        throw std::logic_error("NpyFileWriter: float32 values are written as <f4 or <f2");
    }
    const std::string head = npy_header_text(shape, type);
    header_ = head.size();
    out_.reserve(header_ + count_ * item_size(type));
    out_.write({reinterpret_cast<const std::uint8_t*>(head.data()), head.size()});
}

void NpyFileWriter::write(std::size_t first, const float* values, std::size_t count) noexcept {
    if (!f16_) {
        out_.write_at(header_ + first * sizeof(float),
                      {reinterpret_cast<const std::uint8_t*>(values), count * sizeof(float)});
        return;
    }
    // Rounded a chunk at a time into a small buffer of this thread's (no allocation after
    // the first block; write() may not throw).
    constexpr std::size_t chunk = 4096;
    thread_local std::array<std::uint16_t, chunk> halves{};
    for (std::size_t done = 0; done < count; done += chunk) {
        out_.write_at(header_ + (first + done) * 2,
                      halves_bytes(values + done, std::min(chunk, count - done), halves.data()));
    }
}

WeightsDestination<float> NpyFileWriter::destination() {
    WeightsDestination<float> to{.size = count_};
    to.store = [this](std::size_t first, const float* values, std::size_t count) {
        write(first, values, count);
    };
    return to;
}

void NpyFileWriter::commit() {
    out_.commit();
}

} // namespace attn::io

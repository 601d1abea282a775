// np.savez's layout written by hand: a zip of stored (uncompressed) .npy members, each with
// its CRC-32, a central directory and the end record. Deterministic: every member carries
// the zip epoch (1980-01-01 00:00) as its time.
#include "attn/error.hpp"
#include "attn/io/atomic_file.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/npz.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>

namespace attn::io {

namespace {

/// CRC-32 (the zip polynomial) carried over pieces: start from 0xFFFFFFFF, end with
/// crc ^ 0xFFFFFFFF.
std::uint32_t crc32_update(std::uint32_t c, std::span<const std::uint8_t> bytes) {
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t v = i;
            for (int k = 0; k < 8; ++k) {
                v = (v & 1U) != 0 ? 0xEDB88320U ^ (v >> 1U) : v >> 1U;
            }
            t[i] = v;
        }
        return t;
    }();
    for (const std::uint8_t b : bytes) {
        c = table[(c ^ b) & 0xFFU] ^ (c >> 8U);
    }
    return c;
}

void put16(std::vector<std::uint8_t>& out, std::uint32_t v) {
    out.push_back(static_cast<std::uint8_t>(v & 0xFFU));
    out.push_back(static_cast<std::uint8_t>((v >> 8U) & 0xFFU));
}

void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
    put16(out, v & 0xFFFFU);
    put16(out, v >> 16U);
}

constexpr std::uint32_t kDate = (0U << 9U) | (1U << 5U) | 1U; // 1980-01-01

/// The fields local and central headers share: version, flags, method, time, date, CRC,
/// sizes, name length.
void common(std::vector<std::uint8_t>& out,
            std::uint32_t crc,
            std::uint32_t size,
            std::size_t name) {
    put16(out, 20);    // version needed: 2.0
    put16(out, 0);     // flags
    put16(out, 0);     // method: stored
    put16(out, 0);     // time
    put16(out, kDate); // date
    put32(out, crc);
    put32(out, size); // compressed
    put32(out, size); // uncompressed
    put16(out, static_cast<std::uint32_t>(name));
}

} // namespace

namespace {

/// One member to write: its array name, its NPY size, and what streams its NPY bytes.
struct Part {
    std::string name;
    std::uint64_t size = 0;
    std::function<void(const ByteSink&)> npy;
};

/// An archive in memory: patch() rewrites bytes already written.
struct BytesOut {
    std::vector<std::uint8_t> bytes;
    std::uint64_t at() const { return bytes.size(); }
    void write(std::span<const std::uint8_t> b) { bytes.insert(bytes.end(), b.begin(), b.end()); }
    void patch(std::uint64_t at, std::span<const std::uint8_t> b) {
        std::copy(b.begin(), b.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at));
    }
};

/// An archive streamed to a file: patch() writes in place (its failure reported by commit).
struct FileOut {
    AtomicWriter& file;
    std::uint64_t written = 0;
    std::uint64_t at() const { return written; }
    void write(std::span<const std::uint8_t> b) {
        file.write(b);
        written += b.size();
    }
    void patch(std::uint64_t at, std::span<const std::uint8_t> b) {
        file.write_at(static_cast<std::size_t>(at), b);
    }
};

/// The archive's size in bytes; refuses (before anything is written) an archive past what
/// a zip without ZIP64 holds.
std::uint64_t archive_size(const std::vector<Part>& parts) {
    std::uint64_t total = 22;
    for (const Part& p : parts) {
        total = saturating_add(total, saturating_add(2 * (46 + p.name.size() + 4), p.size));
    }
    if (total >= std::numeric_limits<std::uint32_t>::max() || parts.size() > 0xFFFFU) {
        throw InputError(option_name("output") +
                         ": an .npz of these results would reach 4 GiB, more than attn "
                         "writes in one archive: write each array to its own .npy file");
    }
    return total;
}

/// np.savez's layout: each member's local header (its CRC-32 patched in once its bytes
/// have passed), its NPY bytes, then the central directory and the end record.
template <class Out> void emit_npz(const std::vector<Part>& parts, Out& out) {
    std::vector<std::uint8_t> central;
    for (const Part& p : parts) {
        const std::string name = p.name + ".npy";
        const auto size = static_cast<std::uint32_t>(p.size);
        const auto offset = static_cast<std::uint32_t>(out.at());
        std::vector<std::uint8_t> head;
        put32(head, 0x04034B50U);
        common(head, 0, size, name.size()); // the CRC-32 at offset + 14, patched below
        put16(head, 0);                     // extra
        head.insert(head.end(), name.begin(), name.end());
        out.write(head);
        std::uint32_t crc = 0xFFFFFFFFU;
        std::uint64_t passed = 0;
        p.npy([&](std::span<const std::uint8_t> b) {
            crc = crc32_update(crc, b);
            passed += b.size();
            out.write(b);
        });
        crc ^= 0xFFFFFFFFU;
        ATTN_ASSERT(passed == p.size);
        std::vector<std::uint8_t> crc_bytes;
        put32(crc_bytes, crc);
        out.patch(offset + 14, crc_bytes);

        put32(central, 0x02014B50U);
        put16(central, 20); // version made by
        common(central, crc, size, name.size());
        put16(central, 0); // extra
        put16(central, 0); // comment
        put16(central, 0); // disk
        put16(central, 0); // internal attributes
        put32(central, 0); // external attributes
        put32(central, offset);
        central.insert(central.end(), name.begin(), name.end());
    }
    const auto central_at = static_cast<std::uint32_t>(out.at());
    std::vector<std::uint8_t> end = central;
    put32(end, 0x06054B50U);
    put16(end, 0);
    put16(end, 0);
    put16(end, static_cast<std::uint32_t>(parts.size()));
    put16(end, static_cast<std::uint32_t>(parts.size()));
    put32(end, static_cast<std::uint32_t>(central.size()));
    put32(end, central_at);
    put16(end, 0); // comment
    out.write(end);
}

} // namespace

std::vector<std::uint8_t> encode_npz(const std::vector<NpzMember>& members) {
    std::vector<Part> parts;
    parts.reserve(members.size());
    for (const NpzMember& m : members) {
        parts.push_back({m.name, m.npy.size(), [&m](const ByteSink& sink) { sink(m.npy); }});
    }
    BytesOut out;
    out.bytes.reserve(static_cast<std::size_t>(archive_size(parts)));
    emit_npz(parts, out);
    return std::move(out.bytes);
}

void write_npz_file(const std::filesystem::path& path, const std::vector<NpzArray>& arrays) {
    std::vector<Part> parts;
    std::vector<std::vector<std::uint8_t>> integers; // "int64" arrays: small, encoded whole
    integers.reserve(arrays.size());
    for (const NpzArray& m : arrays) {
        if (m.array->dtype == "int64") {
            const std::vector<std::uint8_t>& b = integers.emplace_back(encode_npy_int64(*m.array));
            parts.push_back({m.name, b.size(), [&b](const ByteSink& sink) { sink(b); }});
        } else {
            parts.push_back({m.name, npy_size(m.array->shape, m.type), [&m](const ByteSink& sink) {
                                 stream_npy(*m.array, m.type, sink);
                             }});
        }
    }
    const std::uint64_t size = archive_size(parts); // refused here, before the file is made
    const std::string shown = path.string();
    if (shown == "-" || written_in_place(shown)) { // stdout and devices: the whole encoding
        BytesOut out;
        out.bytes.reserve(static_cast<std::size_t>(size));
        emit_npz(parts, out);
        write_file_atomic(path, out.bytes);
        return;
    }
    AtomicWriter file(path);
    FileOut out{file};
    emit_npz(parts, out);
    file.commit();
}

} // namespace attn::io

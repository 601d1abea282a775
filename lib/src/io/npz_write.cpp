// np.savez's layout written by hand: a zip of stored (uncompressed) .npy members, each with
// its CRC-32, a central directory and the end record. Deterministic: every member carries
// the zip epoch (1980-01-01 00:00) as its time.
#include "attn/error.hpp"
#include "attn/io/npz.hpp"

#include <array>
#include <limits>

namespace attn::io {

namespace {

std::uint32_t crc32(const std::vector<std::uint8_t>& bytes) {
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) {
                c = (c & 1U) != 0 ? 0xEDB88320U ^ (c >> 1U) : c >> 1U;
            }
            t[i] = c;
        }
        return t;
    }();
    std::uint32_t c = 0xFFFFFFFFU;
    for (const std::uint8_t b : bytes) {
        c = table[(c ^ b) & 0xFFU] ^ (c >> 8U);
    }
    return c ^ 0xFFFFFFFFU;
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

std::vector<std::uint8_t> encode_npz(const std::vector<NpzMember>& members) {
    std::uint64_t total = 22;
    for (const NpzMember& m : members) {
        total += 2 * (46 + m.name.size() + 4) + m.npy.size();
    }
    if (total >= std::numeric_limits<std::uint32_t>::max() || members.size() > 0xFFFFU) {
        throw InputError(option_name("output") +
                         ": an .npz of these results would reach 4 GiB, more than attn "
                         "writes in one archive: write each array to its own .npy file");
    }
    std::vector<std::uint8_t> out;
    out.reserve(static_cast<std::size_t>(total));
    std::vector<std::uint8_t> central;
    for (const NpzMember& m : members) {
        const std::string name = m.name + ".npy";
        const std::uint32_t crc = crc32(m.npy);
        const auto size = static_cast<std::uint32_t>(m.npy.size());
        const auto offset = static_cast<std::uint32_t>(out.size());
        put32(out, 0x04034B50U);
        common(out, crc, size, name.size());
        put16(out, 0); // extra
        out.insert(out.end(), name.begin(), name.end());
        out.insert(out.end(), m.npy.begin(), m.npy.end());

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
    const auto central_at = static_cast<std::uint32_t>(out.size());
    out.insert(out.end(), central.begin(), central.end());
    put32(out, 0x06054B50U);
    put16(out, 0);
    put16(out, 0);
    put16(out, static_cast<std::uint32_t>(members.size()));
    put16(out, static_cast<std::uint32_t>(members.size()));
    put32(out, static_cast<std::uint32_t>(central.size()));
    put32(out, central_at);
    put16(out, 0); // comment
    return out;
}

} // namespace attn::io

// Deflate parts (attn/render/deflate.hpp): literal-only dynamic-Huffman blocks written
// here (RFC 1951 3.2.7), zlib's deflate for the rest, and the zlib stream's two ends. No
// matches are searched here, and nothing is inflated.
#include "attn/render/deflate.hpp"

#include "attn/error.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <zlib.h>

namespace attn::render {

namespace {

/// Bits out, least significant first (RFC 1951 3.1.1), into a buffer with 8 bytes of slack
/// past anything written: whole bytes are stored 8 at a time.
class BitWriter {
  public:
    explicit BitWriter(std::uint8_t* at) : start_(at), at_(at) {}
    /// Bits put so far.
    std::size_t bits() const { return static_cast<std::size_t>(at_ - start_) * 8 + used_; }
    /// At most 57 bits in total between two flush() calls (a flush leaves at most 7).
    void put(std::uint32_t bits, unsigned count) {
        acc_ |= static_cast<std::uint64_t>(bits) << used_;
        used_ += count;
    }
    void flush() {
        std::memcpy(at_, &acc_, 8); // little-endian: the next bytes of the stream
        at_ += used_ / 8;
        acc_ = used_ >= 64 ? 0 : acc_ >> (used_ & ~7U);
        used_ &= 7U;
    }
    /// Flushes and pads to a byte boundary; where the next byte goes.
    std::uint8_t* finish() {
        flush();
        if (used_ > 0) {
            *at_++ = static_cast<std::uint8_t>(acc_);
        }
        acc_ = 0;
        used_ = 0;
        return at_;
    }

  private:
    std::uint8_t* start_;
    std::uint8_t* at_;
    std::uint64_t acc_ = 0;
    unsigned used_ = 0;
};

/// A prefix code: per symbol its length (0: unused) and its code, bits reversed as they
/// are written.
template <std::size_t N> struct Code {
    std::array<std::uint8_t, N> len{};
    std::array<std::uint16_t, N> bits{};
};

/// Minimum-redundancy code lengths in place (Moffat & Katajainen, "In-place calculation of
/// minimum-redundancy codes", 1995): `key` holds the weights in non-decreasing order on
/// entry and each one's depth on return; at least two entries.
void minimum_redundancy(std::vector<std::uint32_t>& key) {
    const std::size_t n = key.size();
    // pass 1: internal nodes' weights, each pointing to its parent
    key[0] += key[1];
    std::size_t root = 0, leaf = 2;
    for (std::size_t next = 1; next + 1 < n; ++next) {
        for (int pick = 0; pick < 2; ++pick) { // two least of the leaves and the nodes
            const bool node = leaf >= n || (root < next && key[root] < key[leaf]);
            const std::uint32_t w = node ? key[root] : key[leaf++];
            if (node) {
                key[root++] = static_cast<std::uint32_t>(next);
            }
            key[next] = pick == 0 ? w : key[next] + w;
        }
    }
    // pass 2: the internal nodes' depths, root (n - 2) first
    key[n - 2] = 0;
    for (std::size_t next = n - 2; next-- > 0;) {
        key[next] = key[key[next]] + 1;
    }
    // pass 3: the leaves' depths
    std::size_t avail = 1, used = 0, depth = 0, last = n - 1;
    std::ptrdiff_t r = static_cast<std::ptrdiff_t>(n) - 2;
    while (avail > 0) {
        while (r >= 0 && key[static_cast<std::size_t>(r)] == depth) {
            ++used;
            --r;
        }
        while (avail > used) {
            key[last--] = static_cast<std::uint32_t>(depth);
            --avail;
        }
        avail = 2 * used;
        ++depth;
        used = 0;
    }
}

/// A complete prefix code for `freq` (symbols with count 0 get none; at least two symbols
/// get one) with no code longer than `max_len` bits: minimum-redundancy lengths, the
/// longer ones folded into `max_len` and the counts per length repaired (as zlib and
/// miniz do), the shortest codes to the most frequent symbols; canonical codes (RFC 1951
/// 3.2.2).
template <std::size_t N> Code<N> prefix_code(std::array<std::uint32_t, N> freq, unsigned max_len) {
    std::vector<std::uint16_t> sym;
    for (std::size_t s = 0; s < N; ++s) {
        if (freq[s] > 0) {
            sym.push_back(static_cast<std::uint16_t>(s));
        }
    }
    for (std::uint16_t s = 0; sym.size() < 2; ++s) { // a code needs two symbols to be complete
        if (freq[s] == 0) {
            freq[s] = 1;
            sym.insert(std::upper_bound(sym.begin(), sym.end(), s), s);
        }
    }
    std::stable_sort(sym.begin(), sym.end(), [&](auto a, auto b) { return freq[a] < freq[b]; });
    std::vector<std::uint32_t> key(sym.size());
    for (std::size_t i = 0; i < sym.size(); ++i) {
        key[i] = freq[sym[i]];
    }
    minimum_redundancy(key);
    std::array<std::uint32_t, 16> count{};
    for (const std::uint32_t d : key) {
        ++count[std::min<std::uint32_t>(d, max_len)];
    }
    std::uint32_t kraft = 0; // in units of 2^-max_len
    for (unsigned l = 1; l <= max_len; ++l) {
        kraft += count[l] << (max_len - l);
    }
    while (kraft > (1U << max_len)) { // lengthen a shorter code to make room for a folded one
        --count[max_len];
        for (unsigned l = max_len - 1; l > 0; --l) {
            if (count[l] > 0) {
                --count[l];
                count[l + 1] += 2;
                break;
            }
        }
        --kraft;
    }
    Code<N> c;
    std::size_t j = sym.size();
    for (unsigned l = 1; l <= max_len; ++l) {
        for (std::uint32_t k = 0; k < count[l]; ++k) {
            c.len[sym[--j]] = static_cast<std::uint8_t>(l);
        }
    }
    count[0] = 0;
    std::array<std::uint32_t, 17> next{};
    for (unsigned l = 1, code = 0; l <= max_len; ++l) {
        code = (code + count[l - 1]) << 1;
        next[l] = code;
    }
    for (std::size_t s = 0; s < N; ++s) {
        const unsigned l = c.len[s];
        if (l == 0) {
            continue;
        }
        std::uint32_t v = next[l]++, r = 0;
        for (unsigned b = 0; b < l; ++b, v >>= 1) {
            r = (r << 1) | (v & 1U);
        }
        c.bits[s] = static_cast<std::uint16_t>(r);
    }
    return c;
}

/// One code-length alphabet symbol (RFC 1951 3.2.7: 0-15 a length, 16 repeat the last
/// 3-6 times, 17 zeros 3-10 times, 18 zeros 11-138 times) and its extra bits.
struct LengthSymbol {
    std::uint8_t sym, extra_bits, extra;
};

/// The code lengths `len` run-length coded with the code-length alphabet.
std::vector<LengthSymbol> length_symbols(std::span<const std::uint8_t> len) {
    std::vector<LengthSymbol> out;
    for (std::size_t i = 0; i < len.size();) {
        const std::uint8_t l = len[i];
        std::size_t run = 1;
        while (i + run < len.size() && len[i + run] == l) {
            ++run;
        }
        i += run;
        if (l == 0) {
            for (; run >= 11; run -= std::min<std::size_t>(run, 138)) {
                out.push_back(
                    {18, 7, static_cast<std::uint8_t>(std::min<std::size_t>(run, 138) - 11)});
            }
            if (run >= 3) {
                out.push_back({17, 3, static_cast<std::uint8_t>(run - 3)});
                run = 0;
            }
        } else {
            out.push_back({l, 0, 0});
            --run;
            for (; run >= 3; run -= std::min<std::size_t>(run, 6)) {
                out.push_back(
                    {16, 2, static_cast<std::uint8_t>(std::min<std::size_t>(run, 6) - 3)});
            }
        }
        for (; run > 0; --run) {
            out.push_back({l, 0, 0});
        }
    }
    return out;
}

/// The block header of a dynamic-Huffman block (not final) with literal/length code `lit`
/// (symbols 0-256) and two 1-bit distance codes (none used; two keep the code complete).
void put_header(BitWriter& w, const Code<257>& lit) {
    std::array<std::uint8_t, 259> len{};
    std::copy(lit.len.begin(), lit.len.end(), len.begin());
    len[257] = len[258] = 1;
    const std::vector<LengthSymbol> syms = length_symbols(len);
    std::array<std::uint32_t, 19> freq{};
    for (const LengthSymbol& s : syms) {
        ++freq[s.sym];
    }
    const Code<19> cl = prefix_code(freq, 7);
    static constexpr std::array<std::uint8_t, 19> kOrder = {
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    unsigned hclen = 19;
    while (hclen > 4 && cl.len[kOrder[hclen - 1]] == 0) {
        --hclen;
    }
    w.put(2U << 1, 3); // BFINAL 0, BTYPE 10 (dynamic Huffman codes)
    w.put(0, 5);       // HLIT: 257 literal/length codes
    w.put(1, 5);       // HDIST: 2 distance codes
    w.put(hclen - 4, 4);
    w.flush();
    for (unsigned i = 0; i < hclen; ++i) {
        w.put(cl.len[kOrder[i]], 3);
        if (i % 16 == 15) {
            w.flush();
        }
    }
    w.flush();
    for (const LengthSymbol& s : syms) {
        w.put(cl.bits[s.sym], cl.len[s.sym]);
        w.put(s.extra, s.extra_bits);
        w.flush();
    }
}

/// The counts of each byte value in `bytes` (four tables, so that no count waits for the
/// one before) and their Adler-32 (RFC 1950 8.2: s1 the sum of the bytes plus one, s2
/// the sum of the s1s, both mod 65521; four bytes a step, in 64-bit sums reduced every
/// 2^20 bytes, far below an overflow), in one pass.
std::uint32_t count_bytes(std::span<const std::uint8_t> bytes,
                          std::array<std::uint32_t, 257>& freq) {
    std::array<std::array<std::uint32_t, 256>, 4> part{};
    constexpr std::uint64_t kMod = 65521;
    std::uint64_t s1 = 1, s2 = 0;
    const std::uint8_t* b = bytes.data();
    const std::size_t n = bytes.size();
    std::size_t i = 0;
    while (i < n) {
        const std::size_t stop = std::min(n, i + (std::size_t{1} << 20));
        for (; i + 4 <= stop; i += 4) {
            const std::uint64_t b0 = b[i], b1 = b[i + 1], b2 = b[i + 2], b3 = b[i + 3];
            ++part[0][b0];
            ++part[1][b1];
            ++part[2][b2];
            ++part[3][b3];
            s2 += 4 * s1 + 4 * b0 + 3 * b1 + 2 * b2 + b3;
            s1 += b0 + b1 + b2 + b3;
        }
        for (; i < stop; ++i) {
            ++part[0][b[i]];
            s1 += b[i];
            s2 += s1;
        }
        s1 %= kMod;
        s2 %= kMod;
    }
    for (std::size_t s = 0; s < 256; ++s) {
        freq[s] = part[0][s] + part[1][s] + part[2][s] + part[3][s];
    }
    return static_cast<std::uint32_t>(s2 << 16 | s1);
}

} // namespace

std::uint32_t deflate_literals(std::span<const std::uint8_t> bytes,
                               std::vector<std::uint8_t>& out) {
    ATTN_ASSERT(!bytes.empty());
    // pass 1: byte counts (and the Adler-32)
    std::array<std::uint32_t, 257> freq{};
    const std::uint32_t adler = count_bytes(bytes, freq);
    const std::size_t n = bytes.size();
    const std::uint8_t* b = bytes.data();
    freq[256] = 1; // end of block
    const Code<257> lit = prefix_code(freq, 15);
    // pass 2: the header, the bytes three codes (at most 45 bits) per flush, end of block,
    // and an empty stored block (3 bits, the byte boundary, LEN 0, NLEN 0xffff)
    // (out grows by what the part takes, known from the counts: growing it by a bound,
    // 15/8 of the part, zeroed that much memory a part, 4 % of the .html run's CPU)
    std::array<std::uint8_t, 1024> head{}; // the header alone: at most about 500 bytes
    BitWriter dry(head.data());
    put_header(dry, lit);
    std::size_t bits = dry.bits() + lit.len[256] + 3;
    for (std::size_t s = 0; s < 256; ++s) {
        bits += static_cast<std::size_t>(freq[s]) * lit.len[s];
    }
    const std::size_t at = out.size();
    out.resize(at + (bits + 7) / 8 + 4 + 8); // 8: BitWriter's slack, cut below
    BitWriter w(out.data() + at);
    put_header(w, lit);
    std::array<std::uint32_t, 256> entry{}; // code | length << 16
    for (std::size_t s = 0; s < 256; ++s) {
        entry[s] = lit.bits[s] | static_cast<std::uint32_t>(lit.len[s]) << 16;
    }
    std::size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        for (std::size_t k = 0; k < 3; ++k) {
            const std::uint32_t e = entry[b[i + k]];
            w.put(e & 0xffffU, e >> 16);
        }
        w.flush();
    }
    for (; i < n; ++i) {
        const std::uint32_t e = entry[b[i]];
        w.put(e & 0xffffU, e >> 16);
        w.flush();
    }
    w.put(lit.bits[256], lit.len[256]);
    w.put(0, 3);
    std::uint8_t* end = w.finish();
    const std::array<std::uint8_t, 4> stored = {0x00, 0x00, 0xff, 0xff};
    end = std::copy(stored.begin(), stored.end(), end);
    out.resize(static_cast<std::size_t>(end - out.data()));
    return adler;
}

struct ZlibParts::State {
    z_stream z{};
};

ZlibParts::ZlibParts(int level, int strategy) : state_(new State) {
    if (deflateInit2(&state_->z, level, Z_DEFLATED, -15, 8, strategy) != Z_OK) {
        delete state_;
        throw SystemError("zlib could not start compressing");
    }
}

ZlibParts::~ZlibParts() {
    deflateEnd(&state_->z);
    delete state_;
}

void ZlibParts::append(std::span<const std::uint8_t> bytes, std::vector<std::uint8_t>& out) {
    z_stream& z = state_->z;
    if (deflateReset(&z) != Z_OK) {
        throw SystemError("zlib could not compress");
    }
    const std::size_t at = out.size();
    const std::size_t bound = deflateBound(&z, static_cast<uLong>(bytes.size())) + 16;
    out.resize(at + bound);
    z.next_in = const_cast<Bytef*>(bytes.data()); // zlib's API; it does not write there
    z.avail_in = static_cast<uInt>(bytes.size());
    z.next_out = out.data() + at;
    z.avail_out = static_cast<uInt>(bound);
    const int status = deflate(&z, Z_SYNC_FLUSH);
    if (status != Z_OK || z.avail_in != 0 || z.avail_out == 0) {
        throw SystemError("zlib could not compress");
    }
    out.resize(at + bound - z.avail_out);
}

void zlib_begin(std::vector<std::uint8_t>& out) {
    out.insert(out.end(), {0x78, 0x01}); // CM 8, CINFO 7; FLEVEL 0; FCHECK: 0x7801 % 31 == 0
}

void zlib_end(std::uint32_t adler, std::vector<std::uint8_t>& out) {
    out.insert(out.end(),
               {0x03,
                0x00, // BFINAL 1, BTYPE 01 (fixed codes), end of block (7 zero bits)
                static_cast<std::uint8_t>(adler >> 24),
                static_cast<std::uint8_t>(adler >> 16),
                static_cast<std::uint8_t>(adler >> 8),
                static_cast<std::uint8_t>(adler)});
}

} // namespace attn::render

// The HTML pages' text pieces (html_detail.hpp).
#include "attn/error.hpp"
#include "attn/render/colormap.hpp"
#include "attn/render/figure.hpp"
#include "html_detail.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <zlib.h>

namespace attn::render::detail {

/// "134,217,728"
std::string grouped(std::size_t n) {
    std::string s = std::to_string(n);
    for (std::ptrdiff_t i = static_cast<std::ptrdiff_t>(s.size()) - 3; i > 0; i -= 3) {
        s.insert(static_cast<std::size_t>(i), ",");
    }
    return s;
}

/// A JSON string literal that is also safe inside <script>: '<', '>', '&' escaped.
std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

std::string json_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::string json_strings(const std::vector<std::string>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        out += (i == 0 ? "" : ",") + json_string(v[i]);
    }
    return out + "]";
}

namespace {

/// Pack::fast's input chunk: each gets the strategy its bytes call for.
constexpr std::size_t kFastChunk = std::size_t{1} << 16;

/// Whether run-length matches pay on `chunk`: a third or more of its 8-byte words are one
/// byte repeated (measured on attention maps' colour indices: below, Huffman codes alone
/// are smaller and faster; above, the runs are).
bool runs_pay(std::span<const std::uint8_t> chunk) {
    std::size_t words = 0, constant = 0;
    for (std::size_t i = 0; i + 8 <= chunk.size(); i += 8, ++words) {
        std::uint64_t w = 0;
        std::memcpy(&w, chunk.data() + i, 8);
        constant += w == (w & 0xffU) * 0x0101010101010101ULL ? 1U : 0U;
    }
    return 3 * constant >= words && words > 0;
}

/// Compresses `bytes` into `out` (grown as needed) through `z`: in one call (`small`), or
/// (`fast`) chunk by chunk, each with Z_RLE or Z_HUFFMAN_ONLY by runs_pay (deflateParams
/// between chunks: one zlib stream either way). Returns zlib's last status.
int deflate_all(z_stream& z,
                std::span<const std::uint8_t> bytes,
                bool fast,
                std::vector<std::uint8_t>& out) {
    std::size_t at = 0;
    int strategy = Z_RLE, status = Z_OK;
    do {
        const std::size_t n = fast ? std::min(kFastChunk, bytes.size() - at) : bytes.size();
        const std::span<const std::uint8_t> chunk = bytes.subspan(at, n);
        if (fast && (runs_pay(chunk) ? Z_RLE : Z_HUFFMAN_ONLY) != strategy) {
            strategy = strategy == Z_RLE ? Z_HUFFMAN_ONLY : Z_RLE;
            if (deflateParams(&z, 1, strategy) != Z_OK) {
                return Z_STREAM_ERROR;
            }
        }
        at += n;
        z.next_in = const_cast<Bytef*>(chunk.data()); // zlib's API; it does not write there
        z.avail_in = static_cast<uInt>(n);
        const int flush = at == bytes.size() ? Z_FINISH : Z_NO_FLUSH;
        do {
            if (z.total_out == out.size()) {
                out.resize(out.size() + out.size() / 4 + 4096); // past deflateBound: rare
            }
            z.next_out = out.data() + z.total_out;
            z.avail_out = static_cast<uInt>(out.size() - z.total_out);
            status = deflate(&z, flush);
        } while (status == Z_OK && (z.avail_in > 0 || (flush == Z_FINISH)));
    } while (status == Z_OK && at < bytes.size());
    return status;
}

} // namespace

/// zlib-wrapped deflate (what DecompressionStream("deflate") reads), then base64.
std::string
packed(std::span<const std::uint8_t> bytes, Pack how, std::vector<std::uint8_t>* scratch) {
    z_stream z{};
    const bool fast = how == Pack::fast;
    if (deflateInit2(&z, fast ? 1 : 6, Z_DEFLATED, 15, 8, fast ? Z_RLE : Z_DEFAULT_STRATEGY) !=
        Z_OK) {
        throw SystemError("HTML view: zlib could not start compressing");
    }
    const uLong bound = deflateBound(&z, static_cast<uLong>(bytes.size()));
    std::vector<std::uint8_t> own;
    std::vector<std::uint8_t>& out = scratch != nullptr ? *scratch : own;
    if (out.size() < bound) {
        out.resize(bound); // a scratch buffer grows once, not per block
    }
    const int done = deflate_all(z, bytes, fast, out);
    const std::size_t size = z.total_out;
    deflateEnd(&z);
    if (done != Z_STREAM_END) {
        throw SystemError("HTML view: zlib could not compress the weights");
    }
    return base64_encode(std::span<const std::uint8_t>(out.data(), size));
}

/// Replaces each "{{KEY}}" of the template with its value, scanning the template only.
std::string fill(std::string_view page,
                 const std::vector<std::pair<std::string, std::string>>& kv) {
    std::string out;
    std::size_t pos = 0;
    for (;;) {
        const std::size_t open = page.find("{{", pos);
        if (open == std::string_view::npos) {
            out.append(page.substr(pos));
            return out;
        }
        const std::size_t close = page.find("}}", open);
        ATTN_ASSERT(close != std::string_view::npos);
        out.append(page.substr(pos, open - pos));
        const std::string_view key = page.substr(open + 2, close - open - 2);
        const auto it =
            std::find_if(kv.begin(), kv.end(), [&](const auto& e) { return e.first == key; });
        ATTN_ASSERT(it != kv.end()); // every {{key}} of the template has a value
        if (it != kv.end()) {
            out += it->second;
        }
        pos = close + 2;
    }
}

std::string html_text(std::string_view s) {
    std::string out;
    for (const char c : s) {
        out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    }
    return out;
}

/// The colormap tables as {"name": base64 RGB x 256, ...}.
std::string json_tables() {
    std::string tables = "{";
    for (const auto& name : colormap_names()) {
        const Colormap c = *find_colormap(name);
        std::vector<std::uint8_t> rgb;
        for (std::size_t i = 0; i < 256; ++i) {
            const Rgb e = (*c.table)[i];
            rgb.insert(rgb.end(), {e.r, e.g, e.b});
        }
        tables += (tables.size() > 1 ? "," : "") + json_string(name) + ":" +
                  json_string(base64_encode(rgb));
    }
    return tables + "}";
}

} // namespace attn::render::detail

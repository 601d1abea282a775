// The HTML pages' text pieces (html_detail.hpp).
#include "attn/error.hpp"
#include "attn/render/colormap.hpp"
#include "attn/render/deflate.hpp"
#include "attn/render/figure.hpp"
#include "html_detail.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
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

} // namespace

FastDeflate::FastDeflate(std::vector<std::uint8_t>& out) : out_(out) {
    out_.clear();
    zlib_begin(out_);
}

void FastDeflate::add(std::span<const std::uint8_t> bytes) {
    ATTN_ASSERT(size_ % kFastChunk == 0); // only the last piece may end inside a chunk
    for (std::size_t at = 0; at < bytes.size(); at += kFastChunk) {
        const std::span<const std::uint8_t> chunk =
            bytes.subspan(at, std::min(kFastChunk, bytes.size() - at));
        std::uint32_t adler = 0;
        if (runs_pay(chunk)) {
            if (!runs_) {
                runs_.emplace(1, Z_RLE);
            }
            runs_->append(chunk, out_);
            adler = static_cast<std::uint32_t>(adler32_z(1, chunk.data(), chunk.size()));
        } else {
            adler = deflate_literals(chunk, out_);
        }
        adler_ = static_cast<std::uint32_t>(
            adler32_combine(adler_, adler, static_cast<z_off_t>(chunk.size())));
        size_ += chunk.size();
    }
}

void FastDeflate::finish() {
    zlib_end(adler_, out_);
}

/// zlib-wrapped deflate (what DecompressionStream("deflate") reads), then base64.
std::string
packed(std::span<const std::uint8_t> bytes, Pack how, std::vector<std::uint8_t>* scratch) {
    std::vector<std::uint8_t> own;
    std::vector<std::uint8_t>& out = scratch != nullptr ? *scratch : own;
    if (how == Pack::fast) {
        FastDeflate z(out);
        z.add(bytes);
        z.finish();
        return base64_encode(out);
    }
    z_stream z{};
    if (deflateInit(&z, 6) != Z_OK) {
        throw SystemError("HTML view: zlib could not start compressing");
    }
    const uLong bound = deflateBound(&z, static_cast<uLong>(bytes.size()));
    if (out.size() < bound) {
        out.resize(bound); // a scratch buffer grows once, not per block
    }
    z.next_in = const_cast<Bytef*>(bytes.data()); // zlib's API; it does not write there
    z.avail_in = static_cast<uInt>(bytes.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    const int done = deflate(&z, Z_FINISH); // one call: the bound fits it all
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

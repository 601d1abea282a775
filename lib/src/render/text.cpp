// Text measuring and drawing with stb_truetype over the embedded font, and per glyph over
// a fallback font for what it lacks (CJK, ...), asked for once from the source the caller
// set. A glyph cache (font, glyph, size, quarter-pixel offset) keeps repeated labels and
// annotations cheap; a mutex guards it, so rendering from several threads is safe if slow.
#include "attn/render/text.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stb_truetype.h>
#include <tuple>
#include <utility>
#include <vector>

namespace attn::render {

namespace detail {
// Defined in the source CMake generates from ATTN_FONT_FILE (lib/CMakeLists.txt).
extern const char kFontBytes[];
extern const std::size_t kFontByteCount;
} // namespace detail

namespace {

constexpr int kSubpixelSteps = 4; // horizontal glyph positions per pixel

struct Glyph {
    int x0 = 0, y0 = 0, w = 0, h = 0; // box relative to the pen on the baseline
    std::vector<unsigned char> alpha;
};

/// One TrueType font: its bytes (borrowed for the embedded one) and stb's view of them.
struct Face {
    std::vector<unsigned char> owned;
    stbtt_fontinfo info{};

    /// False when stb cannot read the font (the face is then not used).
    bool init(const unsigned char* data) {
        const int offset = stbtt_GetFontOffsetForIndex(data, 0);
        return offset >= 0 && stbtt_InitFont(&info, data, offset) != 0;
    }
    float scale(double size_px) const {
        return stbtt_ScaleForMappingEmToPixels(&info, static_cast<float>(size_px));
    }
};

/// A glyph of one of the faces: 0 is the embedded font, 1 the fallback.
struct GlyphRef {
    int face = 0;
    int index = 0;
};

struct FontState {
    Face primary;
    std::unique_ptr<Face> fallback; ///< null until needed, and when none can be read
    bool fallback_tried = false;
    FallbackFontSource fallback_source;
    std::set<char32_t> missing; ///< code points no face has
    double units_ascent = 0, units_descent = 0, units_cap = 0;
    std::mutex mutex;
    std::map<std::tuple<int, int, long, int>, Glyph> glyphs;

    FontState() {
        primary.init(reinterpret_cast<const unsigned char*>(detail::kFontBytes));
        int asc = 0, desc = 0, gap = 0;
        stbtt_GetFontVMetrics(&primary.info, &asc, &desc, &gap);
        units_ascent = asc;
        units_descent = -desc;
        int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
        stbtt_GetCodepointBox(&primary.info, 'H', &x0, &y0, &x1, &y1);
        units_cap = y1;
    }

    const Face& face(int which) const { return which == 0 ? primary : *fallback; }

    float scale(double size_px) const { return primary.scale(size_px); }

    /// The face and glyph that draw `cp`: the embedded font's, else the fallback's (loaded
    /// on first need), else the embedded font's missing-glyph box (and `cp` is recorded).
    GlyphRef find(char32_t cp) {
        const int g = stbtt_FindGlyphIndex(&primary.info, static_cast<int>(cp));
        if (g != 0 || cp < 0x20) {
            return {0, g};
        }
        if (!fallback_tried) {
            fallback_tried = true;
            if (fallback_source) {
                if (auto bytes = fallback_source()) {
                    auto f = std::make_unique<Face>();
                    f->owned = std::move(*bytes);
                    if (f->init(f->owned.data())) {
                        fallback = std::move(f);
                    }
                }
            }
        }
        if (fallback) {
            const int fg = stbtt_FindGlyphIndex(&fallback->info, static_cast<int>(cp));
            if (fg != 0) {
                return {1, fg};
            }
        }
        missing.insert(cp);
        return {0, 0};
    }

    const Glyph& glyph(GlyphRef ref, double size_px, int sub) {
        const long size_key = std::lround(size_px * 64.0);
        auto [it, inserted] = glyphs.try_emplace({ref.face, ref.index, size_key, sub});
        if (inserted) {
            const Face& f = face(ref.face);
            const float s = f.scale(size_px);
            const float shift = static_cast<float>(sub) / static_cast<float>(kSubpixelSteps);
            int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
            stbtt_GetGlyphBitmapBoxSubpixel(
                &f.info, ref.index, s, s, shift, 0.0f, &x0, &y0, &x1, &y1);
            Glyph& g = it->second;
            g.x0 = x0;
            g.y0 = y0;
            g.w = std::max(0, x1 - x0);
            g.h = std::max(0, y1 - y0);
            g.alpha.assign(static_cast<std::size_t>(g.w) * static_cast<std::size_t>(g.h), 0);
            if (g.w > 0 && g.h > 0) {
                stbtt_MakeGlyphBitmapSubpixel(
                    &f.info, g.alpha.data(), g.w, g.h, g.w, s, s, shift, 0.0f, ref.index);
            }
        }
        return it->second;
    }
};

FontState& font() {
    static FontState state;
    return state;
}

/// Decodes UTF-8; malformed sequences become U+FFFD.
std::vector<char32_t> decode_utf8(std::string_view s) {
    std::vector<char32_t> out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        int len = 0;
        char32_t cp = 0;
        if (c < 0x80) {
            len = 1;
            cp = c;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1Fu;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0Fu;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07u;
        }
        bool ok = len > 0 && i + static_cast<std::size_t>(len) <= s.size();
        for (int k = 1; ok && k < len; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
            ok = (cc & 0xC0) == 0x80;
            cp = (cp << 6) | (cc & 0x3Fu);
        }
        if (!ok) {
            out.push_back(0xFFFD);
            ++i;
            continue;
        }
        out.push_back(cp);
        i += static_cast<std::size_t>(len);
    }
    return out;
}

/// Glyph indices and pen positions (in pixels from the text start) of a string.
struct Shaped {
    std::vector<GlyphRef> glyphs;
    std::vector<double> pen;
    double width = 0.0;
};

Shaped shape_text(FontState& f, std::string_view utf8, double size_px) {
    Shaped out;
    GlyphRef prev{0, 0};
    double pen = 0.0;
    for (char32_t cp : decode_utf8(utf8)) {
        const GlyphRef g = f.find(cp);
        const Face& face = f.face(g.face);
        const double s = static_cast<double>(face.scale(size_px));
        if (prev.index != 0 && prev.face == g.face) {
            pen += s * stbtt_GetGlyphKernAdvance(&face.info, prev.index, g.index);
        }
        int advance = 0, lsb = 0;
        stbtt_GetGlyphHMetrics(&face.info, g.index, &advance, &lsb);
        out.glyphs.push_back(g);
        out.pen.push_back(pen);
        pen += s * advance;
        prev = g;
    }
    out.width = pen;
    return out;
}

void blend(Image& img, int x, int y, Rgb c, unsigned a) {
    if (a == 0 || x < 0 || y < 0 || x >= img.width || y >= img.height) {
        return;
    }
    const std::size_t o = img.offset(x, y);
    const auto mix = [a](std::uint8_t dst, std::uint8_t src) {
        return static_cast<std::uint8_t>(
            (static_cast<unsigned>(src) * a + static_cast<unsigned>(dst) * (255u - a) + 127u) /
            255u);
    };
    img.pixels[o] = mix(img.pixels[o], c.r);
    img.pixels[o + 1] = mix(img.pixels[o + 1], c.g);
    img.pixels[o + 2] = mix(img.pixels[o + 2], c.b);
}

/// How far the text's start sits before the anchor point, for text `width` px wide.
double anchor_shift(Anchor anchor, double width) {
    return anchor == Anchor::start ? 0.0 : anchor == Anchor::middle ? width / 2.0 : width;
}

} // namespace

std::span<const unsigned char> embedded_font() {
    return {reinterpret_cast<const unsigned char*>(detail::kFontBytes), detail::kFontByteCount};
}

void set_fallback_font_source(FallbackFontSource source) {
    FontState& f = font();
    std::lock_guard lock(f.mutex);
    f.fallback_source = std::move(source);
    f.fallback.reset();
    f.fallback_tried = false;
    f.missing.clear();
    std::erase_if(f.glyphs, [](const auto& kv) { return std::get<0>(kv.first) != 0; });
}

std::vector<char32_t> missing_glyphs() {
    FontState& f = font();
    std::lock_guard lock(f.mutex);
    return {f.missing.begin(), f.missing.end()};
}

FontMetrics font_metrics(double size_px) {
    FontState& f = font();
    const double s = static_cast<double>(f.scale(size_px));
    return {f.units_ascent * s, f.units_descent * s, f.units_cap * s};
}

double text_width(std::string_view utf8, double size_px) {
    FontState& f = font();
    std::lock_guard lock(f.mutex);
    return shape_text(f, utf8, size_px).width;
}

void draw_text(Image& image, const PlacedText& t) {
    FontState& f = font();
    std::lock_guard lock(f.mutex);
    const Shaped shaped = shape_text(f, t.text, t.size);
    const double shift = anchor_shift(t.anchor, shaped.width);
    // Text frame: u runs along the baseline, v downwards from it. Horizontal text starts
    // at u = x - shift and pixel (u, v) lands on image (u, base + v). Vertical text starts
    // at image y + shift and runs upwards: u = -(y + shift) there, and pixel (u, v) lands
    // on image (base + v, -u - 1).
    const double origin = t.vertical ? -(t.y + shift) : t.x - shift;
    const long base = std::lround(t.vertical ? t.x : t.y);
    for (std::size_t k = 0; k < shaped.glyphs.size(); ++k) {
        const double pen = origin + shaped.pen[k];
        // Quarter-pixel placement along the baseline; the baseline itself is snapped.
        const double fl = std::floor(pen);
        int sub = static_cast<int>(std::lround((pen - fl) * kSubpixelSteps));
        long ipen = static_cast<long>(fl);
        if (sub == kSubpixelSteps) {
            sub = 0;
            ++ipen;
        }
        const Glyph& g = f.glyph(shaped.glyphs[k], t.size, sub);
        for (int gy = 0; gy < g.h; ++gy) {
            for (int gx = 0; gx < g.w; ++gx) {
                const unsigned a =
                    g.alpha[static_cast<std::size_t>(gy) * static_cast<std::size_t>(g.w) +
                            static_cast<std::size_t>(gx)];
                if (a == 0) {
                    continue;
                }
                const long u = ipen + g.x0 + gx;
                const long v = g.y0 + gy;
                if (t.vertical) {
                    blend(image, static_cast<int>(base + v), static_cast<int>(-u - 1), t.color, a);
                } else {
                    blend(image, static_cast<int>(u), static_cast<int>(base + v), t.color, a);
                }
            }
        }
    }
}

Box text_extent(const PlacedText& t) {
    const double w = text_width(t.text, t.size);
    const FontMetrics m = font_metrics(t.size);
    const double shift = anchor_shift(t.anchor, w);
    if (t.vertical) {
        return {t.x - m.ascent, t.y + shift - w, m.ascent + m.descent, w};
    }
    return {t.x - shift, t.y - m.ascent, w, m.ascent + m.descent};
}

std::size_t text_length(std::string_view utf8) {
    return decode_utf8(utf8).size();
}

std::string truncate_text(std::string_view utf8, std::size_t max_chars) {
    if (max_chars == 0) {
        return {};
    }
    std::size_t count = 0, i = 0;
    std::size_t cut = utf8.size();
    while (i < utf8.size()) {
        if (count == max_chars - 1) {
            cut = i;
        }
        const auto c = static_cast<unsigned char>(utf8[i]);
        i += c < 0x80             ? 1
             : (c & 0xE0) == 0xC0 ? 2
             : (c & 0xF0) == 0xE0 ? 3
             : (c & 0xF8) == 0xF0 ? 4
                                  : 1;
        ++count;
    }
    if (count <= max_chars) {
        return std::string(utf8);
    }
    return std::string(utf8.substr(0, cut)) + "\xE2\x80\xA6";
}

} // namespace attn::render

// Finding a fallback font for glyphs the embedded DejaVu Sans lacks (CJK, ...): a fixed
// list of paths where Debian packages install such fonts. Only these root-owned package
// files are ever read (stb_truetype must not see untrusted fonts).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace attn::io {

/// The paths tried, in order: WenQuanYi Micro Hei (fonts-wqy-microhei, the one
/// scripts/setup.sh installs: 5 MB, TrueType outlines, CJK ideographs, kana and hangul),
/// then Droid Sans Fallback (fonts-droid-fallback) and Noto Sans CJK (fonts-noto-cjk).
const std::vector<std::string>& fallback_font_paths();

/// The bytes of the first font of fallback_font_paths() that exists and can be read;
/// nothing when none is installed. Never throws for a missing or unreadable font.
std::optional<std::vector<unsigned char>> read_fallback_font();

} // namespace attn::io

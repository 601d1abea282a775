// The fallback font's bytes from a fixed list of Debian paths (see fallback_font.hpp).
#include "attn/io/fallback_font.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"

#include <filesystem>

namespace attn::io {

const std::vector<std::string>& fallback_font_paths() {
    static const std::vector<std::string> paths{
        "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
        "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
        "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    };
    return paths;
}

std::optional<std::vector<unsigned char>> read_fallback_font() {
    for (const std::string& p : fallback_font_paths()) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(p, ec)) {
            continue;
        }
        try {
            std::vector<std::uint8_t> bytes = read_file(p);
            return std::vector<unsigned char>(bytes.begin(), bytes.end());
        } catch (const Error&) {
            continue; // unreadable or over the memory limit: try the next one
        }
    }
    return std::nullopt;
}

} // namespace attn::io

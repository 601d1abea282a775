// Text for messages and outputs: input quoted safely on one line, and floats as the
// shortest decimal text that reads back as the same value.
#include "attn/io/number_text.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"

#include <array>
#include <charconv>
#include <cmath>

namespace attn::io {

std::string detail::escaped_text(std::string_view text, std::size_t max_chars, bool ascii_only) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (i == max_chars) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        const bool escape = c < 0x20 || c == 0x7f || (ascii_only && (c > 0x7f || c == '\\'));
        if (escape) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

std::string message_text(std::string_view text, std::size_t max_chars) {
    return detail::escaped_text(text, max_chars, false);
}

namespace {

/// Shortest decimal text that reads back as the same T; "nan", "inf", "-inf", "-0.0".
template <class T> std::string format_shortest(T x) {
    if (std::isnan(x)) {
        return "nan";
    }
    if (std::isinf(x)) {
        return x > 0 ? "inf" : "-inf";
    }
    if (x == T{0} && std::signbit(x)) {
        return "-0.0"; // JSON readers take "-0" for the integer 0 and lose the sign
    }
    std::array<char, 40> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), x);
    ATTN_ASSERT(result.ec == std::errc());
    return std::string(buffer.data(), result.ptr);
}

} // namespace

std::string format_float(float x) {
    return format_shortest(x);
}

std::string format_double(double x) {
    return format_shortest(x);
}

} // namespace attn::io

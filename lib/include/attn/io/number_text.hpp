// Text for messages and outputs: quoted input on one line, floats as shortest
// round-trip decimals.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attn::io {

/// `text` made safe for a one-line message: control characters (line breaks, NUL, ESC,
/// ...) and DEL are written as \xNN, other bytes are kept; cut to `max_chars` bytes
/// with "..." appended. Use it for anything quoted from the input (keys, paths, strings).
std::string message_text(std::string_view text, std::size_t max_chars = 200);

/// Shortest decimal text that reads back as the same float32 ("0.70710677", "1e-07").
/// Non-finite values give "inf", "-inf", "nan" (without quotes).
std::string format_float(float x);

/// Shortest decimal text that reads back as the same float64 ("0.1", "0.7071067811865476");
/// non-finite values as format_float.
std::string format_double(double x);

} // namespace attn::io

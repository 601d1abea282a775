// JSON Lines: the parser of one line (a fast path, the full parser behind it) and the
// error line of a line that failed.
#include "attn/io/json_lines.hpp"

#include "attn/io/json_text.hpp" // parse_json_text, the full parser

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>
#include <utility>

namespace attn::io {
namespace {

using nlohmann::json;

/// A fast path for parsing a batch line, which is mostly numbers: a strict recursive
/// parser that builds the same nlohmann::json as io::parse_json_text, converting numbers
/// with std::from_chars (correctly rounded, like the strtod nlohmann uses) instead of
/// nlohmann's per-character token buffer (on bench/batch/ that lexer took ~45% of the run,
/// this path takes ~20%). It handles the common subset only: on anything else (string
/// escapes, non-ASCII text, numbers out of range, nesting deeper than max_fast_json_depth levels,
/// or any syntax error) it gives up, and the caller parses the line with io::parse_json_text, which
/// then decides and words the error. So it never accepts what io::parse_json_text rejects, as long
/// as that adds no rule that a plain, shallow, ASCII document can break
/// (tests/unit/json_lines_test.cpp and tests/cli/pipeline_test.py compare the two on tricky
/// lines).
class FastJson {
  public:
    /// The parsed line, or false to fall back on io::parse_json_text.
    static bool parse(std::string_view text, json& out) {
        FastJson p(text);
        p.skip_ws();
        if (!p.value(out, 0)) {
            return false;
        }
        p.skip_ws();
        return p.at_ == p.end_;
    }

  private:
    explicit FastJson(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

    void skip_ws() {
        while (at_ != end_ && (*at_ == ' ' || *at_ == '\t' || *at_ == '\n' || *at_ == '\r')) {
            ++at_;
        }
    }

    bool value(json& out, int depth) {
        if (at_ == end_ || depth > max_fast_json_depth) {
            return false;
        }
        switch (*at_) {
        case '[':
            return array(out, depth);
        case '{':
            return object(out, depth);
        case '"': {
            std::string s;
            if (!string(s)) {
                return false;
            }
            out = std::move(s);
            return true;
        }
        case 't':
            return literal("true", json(true), out);
        case 'f':
            return literal("false", json(false), out);
        case 'n':
            return literal("null", json(nullptr), out);
        default:
            return number(out);
        }
    }

    bool literal(std::string_view word, json&& v, json& out) {
        if (static_cast<std::size_t>(end_ - at_) < word.size() ||
            std::string_view(at_, word.size()) != word) {
            return false;
        }
        at_ += word.size();
        out = std::move(v);
        return true;
    }

    bool array(json& out, int depth) {
        ++at_; // '['
        // Elements go into a plain vector first: the json is built from it once, so the
        // parent pointers of JSON_DIAGNOSTICS are set once, not on every reallocation.
        json::array_t elements;
        skip_ws();
        if (at_ != end_ && *at_ == ']') {
            ++at_;
            out = json(std::move(elements));
            return true;
        }
        for (;;) {
            skip_ws();
            if (!value(elements.emplace_back(), depth + 1)) {
                return false;
            }
            skip_ws();
            if (at_ == end_) {
                return false;
            }
            if (*at_ == ']') {
                ++at_;
                out = json(std::move(elements));
                return true;
            }
            if (*at_ != ',') {
                return false;
            }
            ++at_;
        }
    }

    bool object(json& out, int depth) {
        ++at_; // '{'
        out = json::object();
        skip_ws();
        if (at_ != end_ && *at_ == '}') {
            ++at_;
            return true;
        }
        for (;;) {
            std::string key;
            skip_ws();
            if (at_ == end_ || *at_ != '"' || !string(key)) {
                return false;
            }
            skip_ws();
            if (at_ == end_ || *at_ != ':') {
                return false;
            }
            ++at_;
            skip_ws();
            json element;
            if (!value(element, depth + 1)) {
                return false;
            }
            out[key] = std::move(element); // a repeated key: the last wins, as in nlohmann
            skip_ws();
            if (at_ == end_) {
                return false;
            }
            if (*at_ == '}') {
                ++at_;
                return true;
            }
            if (*at_ != ',') {
                return false;
            }
            ++at_;
        }
    }

    /// Printable ASCII without escapes only.
    bool string(std::string& out) {
        const char* start = ++at_; // after '"'
        while (at_ != end_ && *at_ != '"') {
            const auto c = static_cast<unsigned char>(*at_);
            if (c < 0x20 || c > 0x7e || c == '\\') {
                return false;
            }
            ++at_;
        }
        if (at_ == end_) {
            return false;
        }
        out.assign(start, at_);
        ++at_; // '"'
        return true;
    }

    static bool digit(char c) { return c >= '0' && c <= '9'; }

    /// JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. Integers become
    /// number_integer (negative) or number_unsigned, and floats when they overflow, as in
    /// nlohmann.
    bool number(json& out) {
        const char* start = at_;
        const char* p = at_;
        const bool negative = p != end_ && *p == '-';
        if (negative) {
            ++p;
        }
        if (p == end_ || !digit(*p)) {
            return false;
        }
        // The decimal digits as an integer mantissa, while it stays exact.
        std::uint64_t mantissa = 0;
        int digits = 0;   // digits in the mantissa, leading zeros aside
        int exponent = 0; // power of ten to apply to the mantissa
        auto take = [&](char c) {
            if (mantissa != 0 || c != '0') {
                ++digits;
            }
            if (digits <= 19) {
                mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
            }
        };
        if (*p == '0') {
            ++p;
        } else {
            while (p != end_ && digit(*p)) {
                take(*p++);
            }
        }
        bool integer = true;
        if (p != end_ && *p == '.') {
            integer = false;
            ++p;
            if (p == end_ || !digit(*p)) {
                return false;
            }
            while (p != end_ && digit(*p)) {
                take(*p++);
                --exponent;
            }
        }
        if (p != end_ && (*p == 'e' || *p == 'E')) {
            integer = false;
            ++p;
            const bool exp_negative = p != end_ && *p == '-';
            if (p != end_ && (*p == '+' || *p == '-')) {
                ++p;
            }
            if (p == end_ || !digit(*p)) {
                return false;
            }
            int e = 0;
            while (p != end_ && digit(*p)) {
                e = std::min(e * 10 + (*p++ - '0'), 100000); // clamped: the fast path
            }                                                // below needs |e| <= 22
            exponent += exp_negative ? -e : e;
        }
        at_ = p;
        if (integer) {
            if (negative) {
                json::number_integer_t i = 0;
                const auto r = std::from_chars(start, p, i);
                if (r.ec == std::errc() && r.ptr == p) {
                    out = i;
                    return true;
                }
            } else {
                json::number_unsigned_t u = 0;
                const auto r = std::from_chars(start, p, u);
                if (r.ec == std::errc() && r.ptr == p) {
                    out = u;
                    return true;
                }
            }
        }
        // Clinger's fast path (1990): a mantissa below 2^53 and a power of ten up to 1e22
        // are both exact doubles, so one multiplication or division, correctly rounded,
        // gives the correctly rounded value: what strtod and from_chars give.
        static constexpr double powers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                            1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        if (digits <= 15 && exponent >= -22 && exponent <= 22) {
            const auto m = static_cast<double>(mantissa); // < 1e15 < 2^53: exact
            const double v = exponent < 0 ? m / powers[-exponent] : m * powers[exponent];
            out = negative ? -v : v;
            return true;
        }
        double d = 0.0;
        const auto r = std::from_chars(start, p, d);
        if (r.ec != std::errc() || r.ptr != p) {
            return false; // out of range: io::parse_json_text decides
        }
        out = d;
        return true;
    }

    const char* at_;
    const char* end_;
};

} // namespace

bool parse_json_fast(std::string_view text, json& out) {
    return FastJson::parse(text, out);
}

json parse_json_line(std::string_view line, std::uint64_t line_no) {
    json doc;
    if (FastJson::parse(line, doc)) {
        return doc;
    }
    return parse_json_text(line, "line " + std::to_string(line_no));
}

std::string dump_json_line(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string json_error_line(const json& id, const std::string& message) {
    return "{\"id\":" + dump_json_line(id) + ",\"error\":" + dump_json_line(json(message)) + "}";
}

bool blank_line(std::string_view line) {
    return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

} // namespace attn::io

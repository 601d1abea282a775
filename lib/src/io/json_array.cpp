// JSON array literals: nested lists of rank 1 to 4 read strictly into an Array (with the
// index path of any culprit in the message), and arrays written back as JSON literals
// with shortest round-trip numbers.
#include "attn/io/json_array.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/number_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

namespace attn::io {
namespace {

using namespace detail;

/// "a number", "an object", "an array", "a string", "a boolean" or "null": nlohmann's
/// type name with its article.
std::string json_kind(const nlohmann::json& j) {
    const std::string name = j.type_name();
    return j.is_null() ? name : (name[0] == 'a' || name[0] == 'o' ? "an " : "a ") + name;
}

/// Walks a JSON array literal of a known shape, appending the leaves in C order.
class JsonArrayReader {
  public:
    JsonArrayReader(std::string_view name, ArrayKind kind, Array& out, bool f64)
        : name_(name), kind_(kind), out_(out), f64_(f64) {}

    void walk(const nlohmann::json& node, std::size_t depth) {
        const std::vector<std::size_t>& shape = out_.shape;
        if (depth == shape.size()) {
            leaf(node);
            return;
        }
        if (!node.is_array()) {
            fail("expected an array of " + elements(shape[depth]) + ", got " + json_kind(node));
        }
        if (node.size() != shape[depth]) {
            fail("expected " + elements(shape[depth]) + ", got " + std::to_string(node.size()));
        }
        const std::size_t path_length = path_.size();
        std::size_t i = 0;
        for (const nlohmann::json& child : node) {
            path_ += '[';
            path_ += std::to_string(i);
            path_ += ']';
            walk(child, depth + 1);
            path_.resize(path_length);
            ++i;
        }
    }

    std::size_t booleans() const { return booleans_; }

  private:
    [[noreturn]] void fail(const std::string& detail) const {
        throw InputError(std::string(name_) + ": " + (path_.empty() ? "" : path_ + ": ") + detail);
    }

    /// One element: rounded to float32, and exact in float64 when the reader keeps that.
    template <class N> void push(N exact) {
        // Rounds to nearest; beyond float range gives ±inf, as numpy's astype(float32).
        out_.values.push_back(static_cast<float>(exact));
        if (f64_) {
            out_.values64.push_back(static_cast<double>(exact));
        }
    }

    void leaf(const nlohmann::json& node) {
        switch (node.type()) {
        case nlohmann::json::value_t::number_float:
            push(node.get<double>());
            return;
        case nlohmann::json::value_t::number_integer:
            push(node.get<std::int64_t>());
            return;
        case nlohmann::json::value_t::number_unsigned:
            push(node.get<std::uint64_t>());
            return;
        case nlohmann::json::value_t::string: {
            const auto& text = node.get_ref<const std::string&>();
            if (text == "inf") {
                push(std::numeric_limits<double>::infinity());
            } else if (text == "-inf") {
                push(-std::numeric_limits<double>::infinity());
            } else if (text == "nan") {
                push(std::numeric_limits<double>::quiet_NaN());
            } else {
                fail("expected a number, got the string \"" + printable(text) +
                     "\" (only \"inf\", \"-inf\" and \"nan\" stand for numbers)");
            }
            return;
        }
        case nlohmann::json::value_t::boolean:
            if (kind_ != ArrayKind::mask) {
                fail("expected a number, got a boolean (booleans are allowed only in masks)");
            }
            push(node.get<bool>() ? 1.0 : 0.0);
            ++booleans_;
            return;
        case nlohmann::json::value_t::array:
            fail("expected a number, got an array (the array is ragged)");
        default:
            fail("expected a number, got " + json_kind(node));
        }
    }

    std::string_view name_;
    ArrayKind kind_;
    Array& out_;
    bool f64_; ///< also keep the exact values in out_.values64
    std::string path_;
    std::size_t booleans_ = 0;
};

} // namespace

Array parse_json_array(const nlohmann::json& j,
                       std::string_view name,
                       ArrayKind kind,
                       Precision precision,
                       std::size_t max_rank) {
    const std::size_t json_max_rank = std::min<std::size_t>(max_rank, 5);
    if (!j.is_array()) {
        throw InputError(std::string(name) +
                         ": expected an array (nested lists of rank 1 to 4), got " + json_kind(j));
    }
    Array out;
    out.dtype = "json";
    // The shape follows the first element down; the walk below checks every other one.
    // Never looks deeper than json_max_rank + 1 levels, whatever the nesting.
    const nlohmann::json* node = &j;
    while (node->is_array()) {
        if (out.shape.size() == json_max_rank) {
            throw InputError(std::string(name) + ": the array is nested deeper than rank " +
                             std::to_string(json_max_rank));
        }
        out.shape.push_back(node->size());
        if (node->empty()) {
            break;
        }
        node = &node->front();
    }
    JsonArrayReader reader(name, kind, out, precision == Precision::f64);
    reader.walk(j, 0);
    out.is_bool = reader.booleans() > 0 && reader.booleans() == out.values.size();
    return out;
}

namespace {

std::string format_number(float x) {
    return format_float(x);
}
std::string format_number(double x) {
    return format_double(x);
}

template <class T>
std::string encode_json_array_impl(const std::vector<std::size_t>& shape, const T* values) {
    const std::size_t rank = shape.size();
    auto write_number = [](std::string& out, T x) {
        if (std::isfinite(x)) {
            out += format_number(x);
        } else {
            out += '"';
            out += format_number(x);
            out += '"';
        }
    };
    std::string out;
    if (rank == 0) {
        write_number(out, values[0]);
        return out;
    }
    const std::size_t count = element_count(shape);
    if (count == 0) {
        // Nesting stops at the first zero dimension: [] for [0, 3], [[],[]] for [2, 0].
        std::size_t zero_at = 0;
        while (shape[zero_at] != 0) {
            ++zero_at;
        }
        std::string inner = "[]";
        for (std::size_t depth = zero_at; depth-- > 0;) {
            std::string level = "[";
            for (std::size_t i = 0; i < shape[depth]; ++i) {
                if (i > 0) {
                    level += ',';
                }
                level += inner;
            }
            level += ']';
            inner = std::move(level);
        }
        return inner;
    }
    out.reserve(count * 12 + 2 * rank);
    // An odometer over the C index: open brackets as indices reset, close them as they wrap.
    out.append(rank, '[');
    std::vector<std::size_t> index(rank, 0);
    for (std::size_t i = 0; i < count; ++i) {
        write_number(out, values[i]);
        std::size_t k = rank;
        while (k-- > 0) {
            if (++index[k] < shape[k]) {
                break;
            }
            index[k] = 0;
            out += ']';
        }
        if (i + 1 < count) {
            // k is the axis that advanced; every axis after it starts a new list.
            out += ',';
            out.append(rank - 1 - k, '[');
        }
    }
    return out;
}

} // namespace

std::string encode_json_array(const std::vector<std::size_t>& shape, const float* values) {
    return encode_json_array_impl(shape, values);
}

std::string encode_json_array(const std::vector<std::size_t>& shape, const double* values) {
    return encode_json_array_impl(shape, values);
}

std::string encode_json_array(const Array& a) {
    return has_exact_values(a) ? encode_json_array(a.shape, a.values64.data())
                               : encode_json_array(a.shape, a.values.data());
}

} // namespace attn::io

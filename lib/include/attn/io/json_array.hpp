// JSON array literals: the strict reader (nested lists of rank 1 to 4, rectangular) and
// the writer (shortest round-trip numbers).
#pragma once

#include "attn/io/array.hpp"

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace attn::io {

/// Converts a JSON array literal: nested lists of rank 1 to 4, rectangular; numbers or
/// the strings "inf", "-inf", "nan" (also "Infinity"/"NaN" are NOT accepted); booleans
/// only when kind == mask (then true = 1, false = 0). `name` (a field name or a file)
/// prefixes every message, with the JSON index path of the culprit, e.g.
/// "query: [1][2]: expected a number, got an object". With Precision::f64 the numbers are
/// also kept exactly as parsed, in double (Array::values64). `max_rank` 5 reads a stacked
/// result's [layers, B, H, Lq, Lk] weights. Throws InputError.
Array parse_json_array(const nlohmann::json& j,
                       std::string_view name,
                       ArrayKind kind,
                       Precision precision = Precision::f32,
                       std::size_t max_rank = 4);

/// A JSON array literal (nested lists) of the given shape; non-finite numbers are written
/// as the strings "inf", "-inf", "nan". Rank 0 gives a bare number.
std::string encode_json_array(const std::vector<std::size_t>& shape, const float* values);
/// The same with float64 numbers, each the shortest text that reads back as that double.
std::string encode_json_array(const std::vector<std::size_t>& shape, const double* values);
/// An Array as a JSON literal: its float64 values when it has them (an f64 result), else its
/// float32 values.
std::string encode_json_array(const Array& a);

} // namespace attn::io

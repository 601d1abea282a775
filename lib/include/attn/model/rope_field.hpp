// The problem document's "rope" field: true (defaults), a number (theta, as
// `--rope=THETA`), or an object {"theta", "style", "dim", "offset", "positions",
// "scaling"} decoded strictly into a RopeSpec and its positions. Resolving the default
// positions needs Lq and Lk, so it happens where the tensors are (rope_positions()).
#pragma once

#include "attn/rope.hpp"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>

namespace attn::model {

struct RopeField {
    RopeSpec spec;
    std::optional<std::int64_t> offset; ///< query 0's position; empty: Lk − Lq
    /// Explicit positions: a single list (query and key alike, so Lq = Lk) fills both;
    /// {"query": [..], "key": [..]} fills each. Empty: from offset.
    RopePositions positions;
};

/// Decodes the field. Unknown keys, wrong types, both "offset" and "positions", a style
/// other than "neox"/"interleaved" are InputErrors naming `where` and the key
/// ("rope.style: expected \"neox\" or \"interleaved\", got \"gptj\"").
RopeField parse_rope_field(const nlohmann::json& j, std::string_view where = "rope");

/// The positions to hand apply_rope(q, k, ...) for Lq queries and Lk keys.
RopePositions resolve_rope_positions(const RopeField& f, std::size_t lq, std::size_t lk);

} // namespace attn::model

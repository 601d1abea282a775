// The numbered attention layers of a safetensors checkpoint (what `--hidden-states` loops
// over): the prefixes at which a layout's weights sit, grouped by the layer number in them
// ("transformer.h.3.attn." is layer 3 of "transformer.h.{}.attn."). Names only: no tensor
// is read here; the layer's weights are load_checkpoint_params()'s business.
#pragma once

#include "attn/model/safetensors.hpp"

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::model {

/// Every (layout, prefix) at which `names` hold a layout's main weight (detect_layouts()),
/// the prefix ending at a '.' or empty: what `attn info` lists.
std::set<std::pair<ParamsLayout, std::string>>
attention_prefixes(const std::vector<std::string>& names);

/// One layer of a checkpoint: its number and where its attention weights are.
struct CheckpointLayer {
    std::size_t index = 0;
    std::string prefix;
    ParamsLayout layout = ParamsLayout::attn;
};

/// The layers of a checkpoint, by number: the attention prefixes (of `layout`, if given,
/// and starting with `under`) whose last all-digit component is the layer number, all of
/// one pattern, numbered 0 … N−1 without a gap. A checkpoint whose only attention prefix
/// has no number is one layer (0). `what` names the file in messages. Throws InputError
/// ("params: FILE: ...") when there is no layer, when two patterns or layouts compete
/// (naming them: set "prefix" or "layout"), or when a number is missing.
std::vector<CheckpointLayer> checkpoint_layers(const std::vector<std::string>& names,
                                               std::string_view what,
                                               std::optional<std::string_view> layout = {},
                                               std::string_view under = {});

/// The layer selection of "layers": "0,3,5-7" (ranges inclusive, spaces allowed). `what`
/// names the field or flag in messages. Throws InputError for anything else, a reversed
/// range or a number given twice.
std::vector<std::size_t> parse_layer_list(std::string_view text, std::string_view what);

/// The one parser of index lists like "0,3,5-7" (ranges inclusive, spaces allowed): layers
/// (parse_layer_list) and heads ("select_heads"). `what` names the field in messages,
/// `noun` the items ("layer", "head"). Throws InputError for anything else, an empty list,
/// a reversed range or a number given twice. The numbers are returned in the given order.
std::vector<std::size_t>
parse_index_list(std::string_view text, std::string_view what, std::string_view noun);

} // namespace attn::model

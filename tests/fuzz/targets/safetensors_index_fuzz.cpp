// Fuzz target: model.safetensors.index.json (model::parse_safetensors_index). Properties:
// nothing but InputError escapes, its message is one line; every accepted map names plain
// .safetensors file names (no path separators, never "." or ".."), and it round-trips:
// the map written back as an index parses to the same map.
#include "attn/model/folder.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

using namespace attn;

ATTN_FUZZ_TARGET(safetensors_index) {
    const std::string_view text = fuzz::input_text(data, size);
    std::map<std::string, std::string> map;
    if (!fuzz::only_input_errors("parse_safetensors_index", [&] {
            map = model::parse_safetensors_index(text, "index.json");
        })) {
        return 0;
    }
    fuzz::expect(!map.empty(), "an accepted index names no tensor");
    for (const auto& [tensor, shard] : map) {
        fuzz::expect(shard.find('/') == std::string::npos && shard.find('\\') == std::string::npos,
                     "a shard name holds a path separator");
        fuzz::expect(shard != "." && shard != "..", "a shard name is . or ..");
    }
    nlohmann::json doc;
    doc["weight_map"] = map;
    const std::string dumped = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::map<std::string, std::string> again;
    fuzz::expect(fuzz::only_input_errors(
                     "reparse", [&] { again = model::parse_safetensors_index(dumped, "rt.json"); }),
                 "a written-back index does not parse");
    fuzz::expect(again.size() == map.size(), "the round trip changes the tensor count");
    return 0;
}

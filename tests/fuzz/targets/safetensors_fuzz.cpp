// Fuzz target: the safetensors reader (model::parse_safetensors: the 8-byte length, the JSON
// header, offsets that must tile the data section, dtype conversion), then the layer
// layouts (model::detect_layouts, model::map_layout) over whatever tensors it yields.
// Properties: nothing but InputError escapes, its message is one line; every tensor fills
// its shape; every tensor round-trips through the NPY writer and reader.
#include "attn/model/safetensors.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>

using namespace attn;

ATTN_FUZZ_TARGET(safetensors) {
    fuzz::set_limits();
    std::map<std::string, io::Array> tensors;
    if (!fuzz::only_input_errors("parse_safetensors", [&] {
            tensors = model::parse_safetensors(std::span<const std::uint8_t>(data, size),
                                               "fuzz.safetensors");
        })) {
        return 0;
    }
    std::vector<std::string> names;
    for (const auto& [name, a] : tensors) {
        names.push_back(name);
        fuzz::expect(a.values.size() == fuzz::element_count(a.shape),
                     "tensor '" + name + "' does not fill its shape");
        (void)fuzz::expect_npy_round_trip(a, false, "tensor '" + name + "' NPY round trip");
    }
    for (const model::ParamsLayout layout : model::detect_layouts(names)) {
        fuzz::only_input_errors("map_layout", [&] {
            model::map_layout(layout, tensors, "params: fuzz.safetensors", "");
        });
    }
    return 0;
}

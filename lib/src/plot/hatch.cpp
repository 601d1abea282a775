// Hatching of a heatmap read from a file: see attn/plot/hatch.hpp.
#include "attn/plot/hatch.hpp"

#include "attn/error.hpp"
#include "attn/io/mask_convention.hpp"
#include "attn/visibility.hpp"

#include <optional>

namespace attn::plot {

std::vector<std::vector<std::uint8_t>> hatched_cells(const std::vector<std::size_t>& shape,
                                                     std::span<const float> values,
                                                     const Dims& d,
                                                     const std::vector<PanelRef>& refs,
                                                     const io::Array* mask,
                                                     bool zeros,
                                                     const std::string& what) {
    std::vector<std::vector<std::uint8_t>> out;
    const bool plane = mask != nullptr && mask->shape == std::vector<std::size_t>{d.lq, d.lk};
    if (mask != nullptr && !plane && mask->shape != shape) {
        throw InputError::shape(what, shape, mask->shape);
    }
    if ((mask == nullptr && !zeros) || d.lk == 0) {
        return out;
    }
    // The mask as the core's keep-mask of [1, 1, rows, Lk] (the plane, or every panel's rows
    // one after another), and the one visibility rule asked about it.
    std::optional<Mask> keep;
    AttentionSpec spec;
    const std::size_t rows = mask != nullptr ? mask->values.size() / d.lk : 0;
    if (mask != nullptr) {
        keep = io::decode_mask(*mask, Shape{1, 1, rows, d.lk}, io::MaskConvention::keep, what).keep;
        spec.keep_mask = &*keep;
    }
    const Visibility vis(spec, rows, d.lk);
    const std::size_t n = d.lq * d.lk;
    for (const PanelRef& r : refs) {
        const std::size_t offset = r.offset(d);
        std::vector<std::uint8_t> m(n, 0);
        for (std::size_t c = 0; c < n; ++c) {
            const std::size_t at = plane ? c : offset + c;
            const bool by_mask = mask != nullptr && !vis.sees(0, 0, at / d.lk, at % d.lk);
            const bool by_zero = zeros && values[offset + c] == 0.0f;
            m[c] = static_cast<std::uint8_t>(by_mask || by_zero);
        }
        out.push_back(std::move(m));
    }
    return out;
}

} // namespace attn::plot

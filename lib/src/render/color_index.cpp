// The colour index of float cells without a division each (ColorIndexer,
// heatmap_detail.hpp): thresholds found once from the one rule, Colormap::colormap_index
// of ColorNorm.
#include "attn/render/colormap.hpp"
#include "heatmap_detail.hpp"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace attn::render::detail {

namespace {

/// Floats in order as unsigned integers (negative ones reversed below the positive).
std::uint32_t ordered(float v) {
    const auto u = std::bit_cast<std::uint32_t>(v);
    return (u & 0x80000000U) != 0 ? ~u : u | 0x80000000U;
}

float from_ordered(std::uint32_t o) {
    return std::bit_cast<float>((o & 0x80000000U) != 0 ? o & 0x7fffffffU : ~o);
}

} // namespace

ColorIndexer::ColorIndexer(const ColorNorm& norm) : norm_(norm) {
    linear_ = norm.scale == ColorScale::linear;
    at_least_[0] = -std::numeric_limits<float>::infinity();
    at_least_[256] = std::numeric_limits<float>::quiet_NaN();
    if (!linear_) {
        return;
    }
    lo_ = static_cast<float>(norm.vmin);
    per_bin_ = static_cast<float>(256.0 / (norm.vmax - norm.vmin));
    // The index is non-decreasing in v (a subtraction, a division by a positive width and
    // a truncation, each monotone): bisect each threshold over the finite floats.
    const float inf = std::numeric_limits<float>::infinity();
    for (unsigned b = 1; b < 256; ++b) {
        std::uint32_t lo = ordered(-std::numeric_limits<float>::max());
        std::uint32_t hi = ordered(std::numeric_limits<float>::max());
        if (slow(from_ordered(hi)) < b) {
            at_least_[b] = inf; // only +inf gets there
            continue;
        }
        while (lo < hi) { // the least o with index(o) >= b
            const std::uint32_t mid = lo + (hi - lo) / 2;
            if (slow(from_ordered(mid)) >= b) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        at_least_[b] = from_ordered(lo);
    }
}

void ColorIndexer::map(const float* v, std::size_t n, std::uint8_t* out) const {
    if (!linear_) {
        for (std::size_t i = 0; i < n; ++i) {
            out[i] = slow(v[i]);
        }
        return;
    }
    // Locals: stores through `out` may alias any object in memory, so members would be
    // read again for every cell.
    const float lo = lo_, per_bin = per_bin_;
    const std::array<float, 257> t = at_least_;
    for (std::size_t i = 0; i < n; ++i) {
        const float x = (v[i] - lo) * per_bin;
        // The guess, clamped (NaN: 0), then one step each way against the thresholds.
        auto a = static_cast<unsigned>(x > 0.0F ? (x < 255.0F ? x : 255.0F) : 0.0F);
        a += v[i] >= t[a + 1] ? 1U : 0U;
        a -= v[i] < t[a] ? 1U : 0U;
        if (v[i] >= t[a + 1] || v[i] < t[a]) [[unlikely]] {
            a = slow(v[i]); // a guess off by more (a range narrow beside its distance from 0)
        }
        out[i] = static_cast<std::uint8_t>(a);
    }
}

std::uint8_t ColorIndexer::slow(float v) const {
    return static_cast<std::uint8_t>(Colormap::colormap_index(norm_(static_cast<double>(v))));
}

} // namespace attn::render::detail

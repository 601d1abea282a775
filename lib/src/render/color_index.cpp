// The colour index of float cells without a division each (ColorIndexer,
// attn/render/cell_pass.hpp): thresholds found once from the one rule,
// Colormap::colormap_index of ColorNorm; the vector loops are cell_pass_hwy.cpp's.
#include "attn/render/cell_pass.hpp"
#include "attn/render/colormap.hpp"
#include "cell_pass_simd.hpp"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace attn::render {

namespace {

/// Floats in order as unsigned integers (negative ones reversed below the positive).
std::uint32_t ordered(float v) {
    const auto u = std::bit_cast<std::uint32_t>(v);
    return (u & 0x80000000U) != 0 ? ~u : u | 0x80000000U;
}

float from_ordered(std::uint32_t o) {
    return std::bit_cast<float>((o & 0x80000000U) != 0 ? o & 0x7fffffffU : ~o);
}

/// The least float whose `index` is >= b (the index non-decreasing in v), by bisection
/// over the finite floats; +inf when only +inf gets there.
template <class Index> float least_reaching(unsigned b, const Index& index) {
    std::uint32_t lo = ordered(-std::numeric_limits<float>::max());
    std::uint32_t hi = ordered(std::numeric_limits<float>::max());
    if (index(from_ordered(hi)) < b) {
        return std::numeric_limits<float>::infinity();
    }
    while (lo < hi) { // the least o with index(o) >= b
        const std::uint32_t mid = lo + (hi - lo) / 2;
        if (index(from_ordered(mid)) >= b) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return from_ordered(lo);
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
    // a truncation, each monotone), and so is the guess: bisect each threshold of both.
    const auto exact = [this](float v) { return slow(v); };
    const auto guess = [this](float v) { return detail::color_guess(v, lo_, per_bin_); };
    std::array<float, 257> guessed{};
    for (unsigned b = 1; b < 256; ++b) {
        at_least_[b] = least_reaching(b, exact);
        guessed[b] = least_reaching(b, guess);
    }
    // The guess is never two bins off the index where no guess's threshold for b passes
    // the index's for b + 1 nor falls below its for b - 1 (both steps monotone).
    guess_within_one_ = true;
    for (unsigned b = 2; b < 256; ++b) {
        guess_within_one_ =
            guess_within_one_ && guessed[b] >= at_least_[b - 1] && guessed[b - 1] <= at_least_[b];
    }
}

void ColorIndexer::map(const float* v, std::size_t n, std::uint8_t* out) const {
    if (!linear_) {
        for (std::size_t i = 0; i < n; ++i) {
            out[i] = slow(v[i]);
        }
        return;
    }
    std::size_t i = guess_within_one_
                        ? detail::color_index_near(v, n, at_least_.data(), lo_, per_bin_, out)
                        : 0;
    // Locals: stores through `out` may alias any object in memory, so members would be
    // read again for every cell.
    const float lo = lo_, per_bin = per_bin_;
    const std::array<float, 257> t = at_least_;
    for (; i < n; ++i) {
        // The guess, then one step each way against the thresholds.
        unsigned a = detail::color_guess(v[i], lo, per_bin);
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

} // namespace attn::render

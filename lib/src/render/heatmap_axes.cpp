// The pieces of the heatmap figure that are not its layout: tick steps, colorbar ticks,
// the extent of text items, the crop to content, and the panel grid's default columns.
#include "heatmap_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace attn::render::detail {

std::size_t nice_step(double need, double pitch) {
    const std::size_t mant[] = {1, 2, 5};
    for (std::size_t decade = 1; decade < (std::size_t{1} << 40); decade *= 10) {
        for (std::size_t m : mant) {
            if (static_cast<double>(m * decade) * pitch >= need) {
                return m * decade;
            }
        }
    }
    return std::size_t{1} << 40;
}

namespace {

std::string superscript(long k) {
    static const char* const kDigits[] = {"\u2070",
                                          "\u00B9",
                                          "\u00B2",
                                          "\u00B3",
                                          "\u2074",
                                          "\u2075",
                                          "\u2076",
                                          "\u2077",
                                          "\u2078",
                                          "\u2079"};
    std::string digits = std::to_string(std::labs(k));
    std::string out = k < 0 ? "\u207B" : "";
    for (char c : digits) {
        out += kDigits[c - '0'];
    }
    return out;
}

} // namespace

/// Colorbar ticks: "nice" steps (1, 2, 2.5, 5 × 10^k) for linear, decades for log.
std::vector<std::pair<double, std::string>> colorbar_ticks(const ColorNorm& norm, int max_ticks) {
    std::vector<std::pair<double, std::string>> ticks;
    const double lo = norm.vmin, hi = norm.vmax;
    if (norm.scale == ColorScale::linear) {
        const double range = hi - lo;
        const double mant[] = {1.0, 2.0, 2.5, 5.0};
        for (int k = static_cast<int>(std::floor(std::log10(range / max_ticks))) - 1;; ++k) {
            for (double m : mant) {
                const double step = m * std::pow(10.0, k);
                const double first = std::ceil(lo / step - 1e-9);
                const double last = std::floor(hi / step + 1e-9);
                if (last - first + 1 <= max_ticks) {
                    int decimals =
                        std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
                    if (m == 2.5 && step < 10.0) {
                        ++decimals;
                    }
                    // first and last are whole numbers: count in integers.
                    for (long i = std::lround(first); i <= std::lround(last); ++i) {
                        const double tick = static_cast<double>(i) * step;
                        ticks.emplace_back(tick, format_fixed(tick, decimals));
                    }
                    return ticks;
                }
            }
        }
    }
    const long d0 = std::lround(std::ceil(std::log10(lo) - 1e-9));
    const long d1 = std::lround(std::floor(std::log10(hi) + 1e-9));
    if (d1 - d0 + 1 >= 2) {
        const long stride = (d1 - d0 + max_ticks) / max_ticks;
        for (long d = d0; d <= d1; d += stride) {
            ticks.emplace_back(std::pow(10.0, static_cast<double>(d)), "10" + superscript(d));
        }
        return ticks;
    }
    for (long d = d0 - 1; d <= d1; ++d) {
        for (double m : {1.0, 2.0, 5.0}) {
            const double v = m * std::pow(10.0, static_cast<double>(d));
            if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) {
                ticks.emplace_back(v, format_fixed(v, static_cast<int>(std::max(0L, -d))));
            }
        }
    }
    if (ticks.size() < 2) {
        ticks.clear();
        for (double v : {lo, hi}) {
            const int dec = std::max(0, 2 - static_cast<int>(std::floor(std::log10(v))));
            ticks.emplace_back(v, format_fixed(v, dec));
        }
    }
    return ticks;
}

/// Crops the canvas to its content plus `pad`, moving everything by whole pixels.
void crop(Figure& fig, const std::vector<Box*>& boxes, double pad) {
    double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
    const auto take = [&](const Box& b) {
        x0 = std::min(x0, b.x);
        y0 = std::min(y0, b.y);
        x1 = std::max(x1, b.x + b.w);
        y1 = std::max(y1, b.y + b.h);
    };
    for (const auto& g : fig.grids) {
        take(g.box);
    }
    for (const auto& r : fig.rects) {
        take(r.box);
    }
    for (const auto& t : fig.texts) {
        take(text_extent(t));
    }
    const double dx = pad - std::floor(x0), dy = pad - std::floor(y0);
    for (auto& g : fig.grids) {
        g.box.x += dx;
        g.box.y += dy;
    }
    for (auto& r : fig.rects) {
        r.box.x += dx;
        r.box.y += dy;
    }
    for (auto& t : fig.texts) {
        t.x += dx;
        t.y += dy;
    }
    for (Box* b : boxes) {
        b->x += dx;
        b->y += dy;
    }
    fig.width = static_cast<int>(std::ceil(x1 + dx + pad));
    fig.height = static_cast<int>(std::ceil(y1 + dy + pad));
}

/// Panel columns: one row up to 4 panels, then about square with few empty slots.
std::size_t grid_columns(std::size_t n) {
    if (n <= 4) {
        return n;
    }
    const auto c = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(n))));
    const std::size_t empty_c = ceil_div(n, c) * c - n;
    const std::size_t empty_c1 = ceil_div(n, c + 1) * (c + 1) - n;
    return empty_c1 < empty_c ? c + 1 : c;
}

} // namespace attn::render::detail

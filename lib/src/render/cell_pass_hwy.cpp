// The vector loops of the cell passes (attn/render/cell_pass.hpp, cell_pass_simd.hpp),
// written once over Google Highway and compiled for every SIMD target it knows on this
// architecture (as core/kernel_ops_hwy.cpp): this file is included once per target by
// hwy/foreach_target.h, and HWY_DYNAMIC_DISPATCH runs the best one the CPU supports.
// Exactness stays with the callers' rules: these loops only compare and count.
#include "attn/hwy_targets.hpp" // before Highway's own headers
#include "attn/render/cell_pass.hpp"
#include "cell_pass_simd.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cell_pass_hwy.cpp"
#include <hwy/foreach_target.h> // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace attn::render::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

/// cell_range, a vector at a time, then the tail cell by cell.
CellRange cell_range_simd(const float* v, std::size_t n, bool log) {
    const hn::ScalableTag<float> d;
    const std::size_t lanes = hn::Lanes(d);
    const float inf = std::numeric_limits<float>::infinity();
    const float big = std::numeric_limits<float>::max();
    const auto vinf = hn::Set(d, inf), vninf = hn::Set(d, -inf), vbig = hn::Set(d, big);
    const auto zero = hn::Zero(d);
    auto lo = vinf, hi = vninf, nan = zero;
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const auto x = hn::LoadU(d, v + i);
        auto counted = hn::Le(hn::Abs(x), vbig); // finite (NaN compares false)
        if (log) {
            counted = hn::And(counted, hn::Gt(x, zero));
        }
        lo = hn::Min(lo, hn::IfThenElse(counted, x, vinf));
        hi = hn::Max(hi, hn::IfThenElse(counted, x, vninf));
        nan = hn::Or(nan, hn::VecFromMask(d, hn::Not(hn::Eq(x, x)))); // Ne is ordered
    }
    CellRange r{hn::GetLane(hn::MinOfLanes(d, lo)),
                hn::GetLane(hn::MaxOfLanes(d, hi)),
                !hn::AllFalse(d, hn::MaskFromVec(nan))};
    for (; i < n; ++i) {
        const float x = v[i];
        r.nan = r.nan || std::isnan(x);
        const bool counted = std::fabs(x) <= big && (!log || x > 0.0F);
        r.lo = counted && x < r.lo ? x : r.lo;
        r.hi = counted && x > r.hi ? x : r.hi;
    }
    return r;
}

/// fold_row_max, a vector at a time, then the tail cell by cell.
void fold_row_max_simd(const float* v, std::size_t n, float* max, std::uint32_t* count) {
    const hn::ScalableTag<float> d;
    const hn::RebindToUnsigned<decltype(d)> du;
    const std::size_t lanes = hn::Lanes(d);
    const auto one = hn::Set(du, 1U);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const auto x = hn::LoadU(d, v + i), m = hn::LoadU(d, max + i);
        hn::StoreU(hn::IfThenElse(hn::Gt(x, m), x, m), d, max + i);
        const auto c = hn::LoadU(du, count + i);
        hn::StoreU(
            hn::Add(c, hn::IfThenElseZero(hn::RebindMask(du, hn::Eq(x, x)), one)), du, count + i);
    }
    for (; i < n; ++i) {
        max[i] = v[i] > max[i] ? v[i] : max[i];
        count[i] += std::isnan(v[i]) ? 0U : 1U;
    }
}

/// detail::color_index_near: the guess (detail::color_guess, lane by lane), then one step
/// up where v reaches the next bin's threshold and one down where it is below its own.
std::size_t color_index_near_simd(const float* v,
                                  std::size_t n,
                                  const float* at_least,
                                  float lo,
                                  float per_bin,
                                  std::uint8_t* out) {
    const hn::ScalableTag<float> d;
    const hn::RebindToSigned<decltype(d)> di;
    const hn::Rebind<std::uint8_t, decltype(d)> d8;
    const std::size_t lanes = hn::Lanes(d);
    const auto vlo = hn::Set(d, lo), vper = hn::Set(d, per_bin), top = hn::Set(d, 255.0F);
    const auto zero = hn::Zero(d);
    const auto one = hn::Set(di, 1);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const auto x = hn::LoadU(d, v + i);
        const auto g = hn::Mul(hn::Sub(x, vlo), vper);
        auto a = hn::ConvertTo(di, hn::IfThenElseZero(hn::Gt(g, zero), hn::Min(g, top)));
        const auto next = hn::GatherIndex(d, at_least + 1, a),
                   own = hn::GatherIndex(d, at_least, a);
        a = hn::Add(a, hn::IfThenElseZero(hn::RebindMask(di, hn::Ge(x, next)), one));
        a = hn::Sub(a, hn::IfThenElseZero(hn::RebindMask(di, hn::Lt(x, own)), one));
        hn::StoreU(hn::DemoteTo(d8, a), d8, out + i);
    }
    return i;
}

} // namespace attn::render::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace attn::render {

HWY_EXPORT(cell_range_simd);
HWY_EXPORT(color_index_near_simd);
HWY_EXPORT(fold_row_max_simd);

CellRange cell_range(const float* v, std::size_t n, bool log) {
    return HWY_DYNAMIC_DISPATCH(cell_range_simd)(v, n, log);
}

void fold_row_max(const float* v, std::size_t n, float* max, std::uint32_t* count) {
    HWY_DYNAMIC_DISPATCH(fold_row_max_simd)(v, n, max, count);
}

void use_cell_simd(Simd simd) {
    hwy::SetSupportedTargetsForTest(static_cast<std::int64_t>(simd));
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

namespace detail {

std::size_t color_index_near(const float* v,
                             std::size_t n,
                             const float* at_least,
                             float lo,
                             float per_bin,
                             std::uint8_t* out) {
    return HWY_DYNAMIC_DISPATCH(color_index_near_simd)(v, n, at_least, lo, per_bin, out);
}

} // namespace detail

} // namespace attn::render

#endif // HWY_ONCE

// The outward rounding of a double box to a float box, shared by the Bullet and FCL adapters:
// each bound cast to float and moved one float further out where the cast rounded it inward,
// so that two overlapping double boxes always give overlapping float boxes (no pair is lost to
// rounding); values past the float range clamp to +-FLT_MAX.
#pragma once

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "broadphase/types.hpp"

namespace broadphase::adapters {

/// round_outward for a v with |v| < FLT_MAX (so neither NaN nor infinite), without the checks:
/// the float at or below v (at or above it when `up`). A step towards -infinity moves a float's
/// bits down by one where its sign is clear and up by one where it is set (-0 included, whose
/// step is -denorm_min); towards +infinity the other way. A select, not a branch: the cast
/// rounds inward about half the time, unpredictably. Callers that check the range once for a
/// whole box call it directly.
inline float round_outward_in_range(double v, bool up) {
    const float f = static_cast<float>(v);
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
    const bool negative = (bits >> 31) != 0;
    const std::uint32_t stepped = negative != up ? bits + 1 : bits - 1;
    const bool rounded_inward = up ? double(f) < v : double(f) > v;
    return rounded_inward ? std::bit_cast<float>(stepped) : f;
}

/// The float at or below v (at or above it when `up`), clamped to +-FLT_MAX (infinities too);
/// NaN stays NaN.
inline float round_outward(double v, bool up) {
    if (std::isnan(v)) return static_cast<float>(v);
    if (v >= double(FLT_MAX)) return FLT_MAX;
    if (v <= -double(FLT_MAX)) return -FLT_MAX;
    return round_outward_in_range(v, up);
}

/// The float box [round_outward(lo, down), round_outward(hi, up)] on each axis.
inline Box round_outward(const double lo[3], const double hi[3]) {
    Box b;
    for (int axis = 0; axis < 3; ++axis) {
        b.min[axis] = round_outward(lo[axis], false);
        b.max[axis] = round_outward(hi[axis], true);
    }
    return b;
}

}  // namespace broadphase::adapters

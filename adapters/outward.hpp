// The outward rounding of a double box to a float box, shared by the Bullet and FCL adapters:
// each bound cast to float and moved one float further out where the cast rounded it inward,
// so that two overlapping double boxes always give overlapping float boxes (no pair is lost to
// rounding); values past the float range clamp to +-FLT_MAX.
#pragma once

#include <cfloat>
#include <cmath>

#include "broadphase/types.hpp"

namespace broadphase::adapters {

/// The float at or below v (at or above it when `up`), clamped to +-FLT_MAX (infinities too);
/// NaN stays NaN.
inline float round_outward(double v, bool up) {
    if (std::isnan(v)) return static_cast<float>(v);
    if (v >= double(FLT_MAX)) return FLT_MAX;
    if (v <= -double(FLT_MAX)) return -FLT_MAX;
    float f = static_cast<float>(v);
    if (up && double(f) < v) f = std::nextafter(f, FLT_MAX);
    if (!up && double(f) > v) f = std::nextafter(f, -FLT_MAX);
    return f;
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

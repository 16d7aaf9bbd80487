// The few vector operations the renderer example's cameras, cascades and debug view need.
#pragma once

#include <cmath>

#include "broadphase/types.hpp"

namespace broadphase::renderer {

inline Vec3 sub(Vec3 a, Vec3 b) {
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}
inline Vec3 add_scaled(Vec3 a, Vec3 b, float s) {
    return {a.x + b.x * s, a.y + b.y * s, a.z + b.z * s};
}
inline Vec3 cross(Vec3 a, Vec3 b) {
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
inline float dot(Vec3 a, Vec3 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
/// v scaled to length 1 (v itself when it is zero).
inline Vec3 normalize(Vec3 v) {
    const float len = std::sqrt(dot(v, v));
    return len > 0 ? Vec3{v.x / len, v.y / len, v.z / len} : v;
}

}  // namespace broadphase::renderer

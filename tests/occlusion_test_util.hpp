// The occlusion tests' brute force (CPU and GPU suites): the box-versus-depth-image test of
// include/broadphase/occlusion.hpp in double precision over every level-0 texel, with no
// pyramid, against which occluded() and the GPU cull are checked to be conservative.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "broadphase/occlusion.hpp"
#include "broadphase/types.hpp"

namespace broadphase::testing {

// The depth (z / w) of point p under m, in double.
inline double depth_of(const std::array<float, 16>& m, const Vec3& p) {
    double c[4];
    for (int r = 0; r < 4; ++r) {
        c[r] = double(m[r]) * p.x + double(m[4 + r]) * p.y + double(m[8 + r]) * p.z + m[12 + r];
    }
    return c[2] / c[3];
}

// Brute force in double: true when every level-0 texel that the box's corners' screen
// rectangle touches is strictly nearer than the box's nearest corner.
inline bool brute_occluded(const DepthPyramid& p, const std::array<float, 16>& m, const Box& b) {
    double xlo = 2, xhi = -2, ylo = 2, yhi = -2, dmin = 2;
    for (int i = 0; i < 8; ++i) {
        const Vec3 q{(i & 1) ? b.max.x : b.min.x, (i & 2) ? b.max.y : b.min.y,
                     (i & 4) ? b.max.z : b.min.z};
        double c[4];
        for (int r = 0; r < 4; ++r) {
            c[r] = double(m[r]) * q.x + double(m[4 + r]) * q.y + double(m[8 + r]) * q.z + m[12 + r];
        }
        if (!(c[3] > 0)) return false;
        xlo = std::min(xlo, c[0] / c[3]), xhi = std::max(xhi, c[0] / c[3]);
        ylo = std::min(ylo, c[1] / c[3]), yhi = std::max(yhi, c[1] / c[3]);
        dmin = std::min(dmin, c[2] / c[3]);
    }
    const auto texel = [](double n, std::uint32_t size) {
        const double u = (std::clamp(n, -1.0, 1.0) + 1) / 2 * size;
        return std::min(std::uint32_t(std::floor(u)), size - 1);
    };
    double dmax = 0;
    for (std::uint32_t y = texel(ylo, p.height()); y <= texel(yhi, p.height()); ++y) {
        for (std::uint32_t x = texel(xlo, p.width()); x <= texel(xhi, p.width()); ++x) {
            dmax = std::max(dmax, double(p.texel(0, x, y)));
        }
    }
    return dmin > dmax;
}

}  // namespace broadphase::testing

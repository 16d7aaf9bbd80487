// Comparison of a cull's output with cull_brute_force under float tolerance: a box whose
// plane-test margin is within 1e-6 (relative, computed in double) of a plane may be in either
// set, and two ids may swap places in the exact order when their distances agree within 1e-6
// (relative). Shared by the CPU and GPU cull tests, with the camera and the cubes that the
// frustum and occlusion tests place in front of it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/scene.hpp"

namespace broadphase::testing {

inline constexpr double kCullTolerance = 1e-6;

/// The frustum of a camera the test chose valid (a failed expectation otherwise).
inline Frustum frustum_of(const Camera& c) {
    auto f = Frustum::from_camera(c);
    EXPECT_TRUE(f) << (f ? "" : f.error().message);
    return f ? f.value() : Frustum{};
}

/// Looking down -z from (0, 0, 10): 90 degrees vertical, square, near 1, far 100.
inline Camera down_z() {
    return {{0, 0, 10}, {0, 0, 0}, {0, 1, 0}, 90, 1, 1, 100};
}

/// The cube of half side h centred on (x, y, z).
inline Box cube(float x, float y, float z, float h = 0.5f) {
    return {{x - h, y - h, z - h}, {x + h, y + h, z + h}};
}

/// Distance from p to b in double, unrounded.
inline double cull_distance_d(const Vec3& p, const Box& b) {
    double sum = 0;
    for (int a = 0; a < 3; ++a) {
        const double d = std::max({double(b.min[a]) - p[a], double(p[a]) - b.max[a], 0.0});
        sum += d * d;
    }
    return std::sqrt(sum);
}

/// Empty when `got` matches `expected` (cull_brute_force's output) within tolerance, else a
/// description of the first difference. `ordered`: compare the exact order too.
inline std::string compare_cull(const Frustum& f, std::span<const Box> boxes,
                                const std::vector<std::uint32_t>& expected,
                                const std::vector<std::uint32_t>& got, bool ordered) {
    std::vector<char> seen(boxes.size(), 0);
    for (std::uint32_t id : got) {
        if (id >= boxes.size()) return "id " + std::to_string(id) + " out of range";
        if (seen[id]++) return "id " + std::to_string(id) + " reported twice";
    }
    auto strip = [&](const std::vector<std::uint32_t>& ids) {
        std::vector<std::uint32_t> out;
        for (std::uint32_t id : ids)
            if (!frustum_test_ambiguous(f, boxes[id], kCullTolerance)) out.push_back(id);
        return out;
    };
    std::vector<std::uint32_t> e = strip(expected), g = strip(got);
    std::vector<std::uint32_t> es = e, gs = g;
    std::sort(es.begin(), es.end());
    std::sort(gs.begin(), gs.end());
    if (es != gs) {
        std::vector<std::uint32_t> only_e, only_g;
        std::set_difference(es.begin(), es.end(), gs.begin(), gs.end(), std::back_inserter(only_e));
        std::set_difference(gs.begin(), gs.end(), es.begin(), es.end(), std::back_inserter(only_g));
        return "visible sets differ: " + std::to_string(only_e.size()) + " missing (first " +
               (only_e.empty() ? "-" : std::to_string(only_e[0])) + "), " +
               std::to_string(only_g.size()) + " extra (first " +
               (only_g.empty() ? "-" : std::to_string(only_g[0])) + ")";
    }
    if (!ordered) return "";
    for (std::size_t k = 0; k < e.size(); ++k) {
        if (e[k] == g[k]) continue;
        const double de = cull_distance_d(f.eye, boxes[e[k]]);
        const double dg = cull_distance_d(f.eye, boxes[g[k]]);
        if (std::abs(de - dg) > kCullTolerance * std::max(de, dg))
            return "order differs at " + std::to_string(k) + ": expected id " +
                   std::to_string(e[k]) + " (distance " + std::to_string(de) + "), got id " +
                   std::to_string(g[k]) + " (distance " + std::to_string(dg) + ")";
    }
    return "";
}

/// Cameras around and inside a scene's bounds: outside looking at the centre, inside looking
/// sideways, along +x, along -y, along +z with a short far plane, and a narrow one at a corner.
inline std::vector<Camera> cameras_for(std::span<const Box> boxes) {
    const Box bounds = bounds_of(boxes);
    const Vec3 c{(bounds.min.x + bounds.max.x) / 2, (bounds.min.y + bounds.max.y) / 2,
                 (bounds.min.z + bounds.max.z) / 2};
    const Vec3 e{bounds.max.x - bounds.min.x, bounds.max.y - bounds.min.y,
                 bounds.max.z - bounds.min.z};
    const float size = std::max({e.x, e.y, e.z, 1e-3f});
    const float near = 1e-3f * size, far = 4 * size;
    auto at = [&](float x, float y, float z) {
        return Vec3{c.x + x * size, c.y + y * size, c.z + z * size};
    };
    std::vector<Camera> cams;
    cams.push_back({at(0.8f, 0.5f, 1.0f), at(0.1f, 0, 0), {0, 1, 0}, 35, 1.5f, near, far});
    cams.push_back({at(0.05f, 0.02f, -0.03f), at(1, 0.3f, 0.2f), {0, 1, 0}, 70, 1.0f, near, far});
    cams.push_back({at(-1, 0, 0), at(0, 0, 0), {0, 1, 0}, 40, 1.0f, near, far});
    cams.push_back({at(0, 0, 0), at(0, -1, 0), {0, 0, 1}, 90, 1.0f, near, far});
    cams.push_back({at(0, 0, -0.2f), at(0, 0, 1), {0, 1, 0}, 60, 2.0f, near, 0.3f * size});
    cams.push_back({at(0.6f, 0.6f, 0.6f), at(0, 0, 0), {0, 1, 0}, 10, 1.0f, near, far});
    return cams;
}

}  // namespace broadphase::testing

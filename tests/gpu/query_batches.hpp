// Query batches over a scene shared by the GPU query tests: regions and rays that reach every
// part of it, big and small, so that the traversals queue work on the lopsided scenes.
#pragma once

#include <span>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/types.hpp"

namespace broadphase::testing {

// Regions: every 20th box grown by its own size, and the scene's bounds (level: the ground
// slab's every box). Rays: from the corners of every 30th box towards the scene's centre, and
// along the axes through it.
inline std::vector<Box> regions_of(std::span<const Box> boxes) {
    std::vector<Box> regions;
    for (std::size_t i = 0; i < boxes.size(); i += 20) {
        const Box& b = boxes[i];
        const Vec3 e{b.max.x - b.min.x, b.max.y - b.min.y, b.max.z - b.min.z};
        regions.push_back({{b.min.x - e.x, b.min.y - e.y, b.min.z - e.z},
                           {b.max.x + e.x, b.max.y + e.y, b.max.z + e.z}});
    }
    regions.push_back(bounds_of(boxes));
    return regions;
}

inline std::vector<Ray> rays_of(std::span<const Box> boxes) {
    const Box bounds = bounds_of(boxes);
    const Vec3 mid{(bounds.min.x + bounds.max.x) / 2, (bounds.min.y + bounds.max.y) / 2,
                   (bounds.min.z + bounds.max.z) / 2};
    std::vector<Ray> rays;
    for (std::size_t i = 0; i < boxes.size(); i += 30) {
        const Vec3 o = boxes[i].min;
        rays.push_back({o, {mid.x - o.x + 1e-3f, mid.y - o.y, mid.z - o.z}, 1e30f});
    }
    const Vec3 below{mid.x, mid.y, bounds.min.z - 1};
    rays.push_back({below, {0, 0, 1}, 1e30f});
    rays.push_back({{bounds.min.x - 1, mid.y, mid.z}, {1, 0, 0}, 1e30f});
    return rays;
}

}  // namespace broadphase::testing

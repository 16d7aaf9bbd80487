// Deterministic animation of a generated scene (tools/animation.hpp): splitmix64 jitter,
// accumulated frame by frame.
#include "animation.hpp"

#include <algorithm>
#include <cmath>

namespace broadphase::tool {

// u(k, g, a) of animation.hpp.
float frame_jitter(std::uint64_t k, std::uint64_t frame, std::uint64_t axis) {
    std::uint64_t z = k * 0x9e3779b97f4a7c15ull + frame * 0xbf58476d1ce4e5b9ull + axis + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return float(z >> 40) / float(1ull << 24) * 2.0f - 1.0f;
}

// Frame f of the deterministic animation of `base` (see animation.hpp).
std::vector<Box> animated_frame(const std::vector<Box>& base, int frame) {
    std::vector<Box> boxes = base;
    if (boxes.empty()) return boxes;
    Box bounds = boxes[0];
    for (const Box& b : boxes) {
        bounds.min = {std::min(bounds.min.x, b.min.x), std::min(bounds.min.y, b.min.y),
                      std::min(bounds.min.z, b.min.z)};
        bounds.max = {std::max(bounds.max.x, b.max.x), std::max(bounds.max.y, b.max.y),
                      std::max(bounds.max.z, b.max.z)};
    }
    float s = 0.02f / std::cbrt(float(boxes.size()));
    Vec3 step{(bounds.max.x - bounds.min.x) * s, (bounds.max.y - bounds.min.y) * s,
              (bounds.max.z - bounds.min.z) * s};
    for (std::size_t k = 0; k < boxes.size(); ++k) {
        Vec3 d{0, 0, 0};
        for (int g = 1; g <= frame; ++g) {
            d.x += step.x * frame_jitter(k, g, 0);
            d.y += step.y * frame_jitter(k, g, 1);
            d.z += step.z * frame_jitter(k, g, 2);
        }
        boxes[k].min = {boxes[k].min.x + d.x, boxes[k].min.y + d.y, boxes[k].min.z + d.z};
        boxes[k].max = {boxes[k].max.x + d.x, boxes[k].max.y + d.y, boxes[k].max.z + d.z};
    }
    return boxes;
}

}  // namespace broadphase::tool

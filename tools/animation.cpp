// Deterministic animation of a generated scene (tools/animation.hpp): splitmix64 jitter,
// accumulated frame by frame.
#include "animation.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace broadphase::tool {

// u(k, g, a) of animation.hpp.
float frame_jitter(std::uint64_t k, std::uint64_t frame, std::uint64_t axis) {
    std::uint64_t z = k * 0x9e3779b97f4a7c15ull + frame * 0xbf58476d1ce4e5b9ull + axis + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return float(z >> 40) / float(1ull << 24) * 2.0f - 1.0f;
}

Animation::Animation(std::vector<Box> base)
    : base_(std::move(base)), boxes_(base_), offset_(base_.size(), Vec3{0, 0, 0}) {
    if (base_.empty()) return;
    Box bounds = base_[0];
    for (const Box& b : base_) {
        bounds.min = {std::min(bounds.min.x, b.min.x), std::min(bounds.min.y, b.min.y),
                      std::min(bounds.min.z, b.min.z)};
        bounds.max = {std::max(bounds.max.x, b.max.x), std::max(bounds.max.y, b.max.y),
                      std::max(bounds.max.z, b.max.z)};
    }
    float s = 0.02f / std::cbrt(float(base_.size()));
    step_ = {(bounds.max.x - bounds.min.x) * s, (bounds.max.y - bounds.min.y) * s,
             (bounds.max.z - bounds.min.z) * s};
}

void Animation::advance() {
    const auto g = static_cast<std::uint64_t>(++frame_);
    for (std::size_t k = 0; k < base_.size(); ++k) {
        Vec3& d = offset_[k];
        d.x += step_.x * frame_jitter(k, g, 0);
        d.y += step_.y * frame_jitter(k, g, 1);
        d.z += step_.z * frame_jitter(k, g, 2);
        boxes_[k].min = {base_[k].min.x + d.x, base_[k].min.y + d.y, base_[k].min.z + d.z};
        boxes_[k].max = {base_[k].max.x + d.x, base_[k].max.y + d.y, base_[k].max.z + d.z};
    }
}

// Frame f of the deterministic animation of `base` (see animation.hpp).
std::vector<Box> animated_frame(const std::vector<Box>& base, int frame) {
    Animation animation(base);
    while (animation.frame() < frame) animation.advance();
    return animation.boxes();
}

}  // namespace broadphase::tool

// Deterministic animation of a generated scene (tools/animation.hpp): splitmix64 jitter,
// accumulated frame by frame.
#include "animation.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace broadphase::tool {

namespace {

// The median of the boxes' sizes on `axis` (the upper median for an even count).
float median_size(const std::vector<Box>& boxes, int axis) {
    std::vector<float> sizes(boxes.size());
    for (std::size_t k = 0; k < boxes.size(); ++k)
        sizes[k] = boxes[k].max[axis] - boxes[k].min[axis];
    const auto middle = sizes.begin() + static_cast<std::ptrdiff_t>(sizes.size() / 2);
    std::nth_element(sizes.begin(), middle, sizes.end());
    return *middle;
}

}  // namespace

Animation::Animation(std::vector<Box> base)
    : base_(std::move(base)), boxes_(base_), offset_(base_.size(), Vec3{0, 0, 0}) {
    if (base_.empty()) return;
    step_ = {kStepOfMedianSize * median_size(base_, 0), kStepOfMedianSize * median_size(base_, 1),
             kStepOfMedianSize * median_size(base_, 2)};
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

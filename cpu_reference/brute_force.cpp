// Brute force: the O(n^2) all-pairs test and linear scans (the naive method of the survey in
// seed 004). It is the oracle: each loop is the definition of the query it answers.
#include "brute_force.hpp"

#include "broadphase/scene.hpp"

namespace broadphase {

Status BruteForce::build(std::span<const Box> boxes) {
    boxes_.clear();
    if (Status s = validate_boxes(boxes); !s) return s;
    boxes_.assign(boxes.begin(), boxes.end());
    return Status::success();
}

void BruteForce::self_pairs(std::vector<Pair>& out) const {
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    for (std::uint32_t i = 0; i < n; ++i) {
        for (std::uint32_t j = i + 1; j < n; ++j) {
            if (overlaps(boxes_[i], boxes_[j])) out.push_back(Pair{i, j});
        }
    }
    stats_.box_tests += std::uint64_t{n} * (n > 0 ? n - 1 : 0) / 2;
}

void BruteForce::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    for (std::uint32_t i = 0; i < n; ++i) {
        if (overlaps(region, boxes_[i])) out.push_back(i);
    }
    stats_.box_tests += n;
}

void BruteForce::query_point(const Vec3& p, std::vector<std::uint32_t>& out) const {
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    for (std::uint32_t i = 0; i < n; ++i) {
        if (contains(boxes_[i], p)) out.push_back(i);
    }
    stats_.box_tests += n;
}

std::optional<RayHit> BruteForce::ray_cast(const Ray& ray) const {
    std::optional<RayHit> best;
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    for (std::uint32_t i = 0; i < n; ++i) {
        // Ascending ids and a strict < keep the smallest id among equal t.
        const std::optional<float> t = ray_box_entry(ray, boxes_[i]);
        if (t && (!best || *t < best->t)) best = RayHit{i, *t};
    }
    stats_.box_tests += n;
    return best;
}

Status BruteForce::validate() const {
    return validate_boxes(boxes_);
}

}  // namespace broadphase

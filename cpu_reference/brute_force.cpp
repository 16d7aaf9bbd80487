// Brute force: the O(n^2) all-pairs test and linear scans (the naive method of magley's survey
// "Broad phase algorithms and data structures", docs/references.md). It is the oracle: each loop is
// the definition of the query it answers.
#include "brute_force.hpp"

#include <algorithm>

#include "broadphase/scene.hpp"

namespace broadphase {

Status BruteForce::build(std::span<const Box> boxes) {
    boxes_.clear();
    ids_.clear();
    slot_of_.clear();
    identity_ = true;
    if (Status s = validate_boxes(boxes); !s) return s;
    boxes_.assign(boxes.begin(), boxes.end());
    ids_.resize(boxes_.size());
    for (std::size_t s = 0; s < ids_.size(); ++s) ids_[s] = static_cast<std::uint32_t>(s);
    return Status::success();
}

void BruteForce::self_pairs(std::vector<Pair>& out) const {
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    for (std::uint32_t i = 0; i < n; ++i) {
        for (std::uint32_t j = i + 1; j < n; ++j) {
            if (overlaps(boxes_[i], boxes_[j])) report_pair(out, ids_[i], ids_[j]);
        }
    }
    stats_.box_tests += std::uint64_t{n} * (n > 0 ? n - 1 : 0) / 2;
}

void BruteForce::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    for (std::size_t s = 0; s < boxes_.size(); ++s) {
        if (overlaps(region, boxes_[s])) out.push_back(ids_[s]);
    }
    stats_.box_tests += boxes_.size();
}

void BruteForce::query_point(const Vec3& p, std::vector<std::uint32_t>& out) const {
    for (std::size_t s = 0; s < boxes_.size(); ++s) {
        if (contains(boxes_[s], p)) out.push_back(ids_[s]);
    }
    stats_.box_tests += boxes_.size();
}

std::optional<RayHit> BruteForce::ray_cast(const Ray& ray) const {
    std::optional<RayHit> best;
    for (std::size_t s = 0; s < boxes_.size(); ++s) {
        keep_closer(best, ids_[s], ray_box_entry(ray, boxes_[s]));
    }
    stats_.box_tests += boxes_.size();
    return best;
}

Status BruteForce::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    for (std::size_t s = 0; s < boxes_.size(); ++s)
        out.push_back(Neighbor{ids_[s], point_box_distance(p, boxes_[s])});
    auto closer = [](const Neighbor& a, const Neighbor& b) {
        return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
    };
    k = std::min(k, out.size());
    std::partial_sort(out.begin(), out.begin() + std::ptrdiff_t(k), out.end(), closer);
    out.resize(k);
    stats_.box_tests += boxes_.size();
    return Status::success();
}

void BruteForce::make_slot_map() {
    if (!identity_) return;
    slot_of_.clear();
    for (std::size_t s = 0; s < ids_.size(); ++s) slot_of_[ids_[s]] = static_cast<std::uint32_t>(s);
    identity_ = false;
}

Status BruteForce::insert(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    make_slot_map();
    if (slot_of_.count(id)) return invalid("id " + std::to_string(id) + " is already present", id);
    slot_of_[id] = static_cast<std::uint32_t>(boxes_.size());
    boxes_.push_back(box);
    ids_.push_back(id);
    return Status::success();
}

Status BruteForce::remove(std::uint32_t id) {
    make_slot_map();
    auto it = slot_of_.find(id);
    if (it == slot_of_.end()) return invalid("no box with id " + std::to_string(id), id);
    const std::uint32_t slot = it->second;
    slot_of_.erase(it);
    if (slot + 1 != boxes_.size()) {  // swap with the last
        boxes_[slot] = boxes_.back();
        ids_[slot] = ids_.back();
        slot_of_[ids_[slot]] = slot;
    }
    boxes_.pop_back();
    ids_.pop_back();
    return Status::success();
}

Status BruteForce::move(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    make_slot_map();
    auto it = slot_of_.find(id);
    if (it == slot_of_.end()) return invalid("no box with id " + std::to_string(id), id);
    boxes_[it->second] = box;
    return Status::success();
}

std::size_t BruteForce::size() const {
    return boxes_.size();
}

Status BruteForce::validate() const {
    if (ids_.size() != boxes_.size()) return broken("id and box counts differ");
    if (!identity_) {
        if (slot_of_.size() != ids_.size()) return broken("slot map size differs");
        for (std::size_t s = 0; s < ids_.size(); ++s) {
            auto it = slot_of_.find(ids_[s]);
            if (it == slot_of_.end() || it->second != s)
                return broken("slot map wrong for id " + std::to_string(ids_[s]), ids_[s]);
        }
    }
    return validate_boxes(boxes_);
}

}  // namespace broadphase

// Self-pairs of one crowded list of boxes (an octree leaf, a loose octant's own boxes) by sort
// and sweep instead of all against all: sort on the axis where the min corners spread most
// against the boxes' mean extent, then test each box only against those starting before it
// ends (the sweep of Baraff's sweep and prune, on one list). Shared by octree and loose_octree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::detail {

/// Emits every overlapping pair (a.id, b.id) of `entries` (elements with `box` and `id`) for
/// which accept(a, b) holds; counts each box test in `box_tests`. `order` is scratch.
template <class Entries, class Accept, class Emit>
void sweep_list(const Entries& entries, std::vector<std::uint32_t>& order,
                std::uint64_t& box_tests, Accept&& accept, Emit&& emit) {
    const std::size_t n = entries.size();
    int axis = 0;
    double best = -1;
    for (int a = 0; a < 3; ++a) {
        float lo = std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::lowest();
        double extents = 0;
        for (const auto& e : entries) {
            lo = std::min(lo, e.box.min[a]);
            hi = std::max(hi, e.box.min[a]);
            extents += double(e.box.max[a]) - e.box.min[a];
        }
        const double score = (double(hi) - lo) / (extents / double(n) + 1e-30);
        if (score > best) best = score, axis = a;
    }
    order.resize(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return entries[a].box.min[axis] < entries[b].box.min[axis];
    });
    for (std::size_t i = 0; i < n; ++i) {
        const auto& a = entries[order[i]];
        for (std::size_t j = i + 1; j < n; ++j) {
            const auto& b = entries[order[j]];
            if (b.box.min[axis] > a.box.max[axis]) break;
            ++box_tests;
            if (overlaps(a.box, b.box) && accept(a, b)) emit(a.id, b.id);
        }
    }
}

}  // namespace broadphase::detail

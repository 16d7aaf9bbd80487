// Best-first k-nearest search shared by the tree structures (Hjaltason & Samet, "Distance
// browsing in spatial databases", TODS 1999): one priority queue holds nodes and boxes keyed by
// (distance, nodes before boxes, index). A node's key must never exceed the distance of a box
// below it; then a box pops only after every node at no greater distance was opened, so boxes
// pop in the final order: point_box_distance, then id.
// The same order for the closest ray hit of the trees with many children per node (closest_hit).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <unordered_set>
#include <utility>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase::best_first {

/// The order of a k-nearest answer: by distance, ties to the smaller id.
inline bool nearer(const Neighbor& a, const Neighbor& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
}

class Queue {
public:
    /// A node to open later; `distance` is a lower bound of its boxes' distances.
    void push_node(float distance, std::uint32_t node) { heap_.push({distance, false, node}); }
    /// A box with its exact point_box_distance.
    void push_box(float distance, std::uint32_t id) { heap_.push({distance, true, id}); }

    /// Pops until k boxes came out (nearest first) or the queue is empty, calling
    /// `open(node, *this)` for every node popped. With `repeats`, a box id that pops again
    /// (structures that store a box in several cells) is skipped. Replaces `out`.
    template <class Open>
    void search(std::size_t k, std::vector<Neighbor>& out, Open&& open, bool repeats = false) {
        out.clear();
        std::unordered_set<std::uint32_t> emitted;
        while (!heap_.empty() && out.size() < k) {
            const Item item = heap_.top();
            heap_.pop();
            if (!item.is_box) {
                open(item.index, *this);
            } else if (!repeats || emitted.insert(item.index).second) {
                out.push_back(Neighbor{item.index, item.distance});
            }
        }
    }

private:
    struct Item {
        float distance;
        bool is_box;
        std::uint32_t index;  // node index, or box id
        bool operator>(const Item& o) const {
            if (distance != o.distance) return distance > o.distance;
            if (is_box != o.is_box) return is_box;
            return index > o.index;
        }
    };
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap_;
};

/// The closest hit below `root`, whose entry parameter is root_t, opening nodes nearest entry
/// first. ray_box_entry is monotone under containment, so a node's entry bounds every hit
/// below it: the search ends once the nearest unopened node is entered after the best hit (not
/// at it: a smaller id may tie), and the nodes opened are those entered at or before the
/// final hit, whatever the order of ties. `open(node, best, push)` tests a leaf's boxes into
/// `best` (keep_closer), or calls push(t, child) for each child the ray enters at t, and counts
/// its own visits; push drops a child entered after the best hit so far.
template <class Index, class Open>
std::optional<RayHit> closest_hit(Index root, float root_t, Open&& open) {
    std::optional<RayHit> best;
    using Item = std::pair<float, Index>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> frontier;
    frontier.emplace(root_t, root);
    const auto push = [&](float t, Index child) {
        if (!best || t <= best->t) frontier.emplace(t, child);
    };
    while (!frontier.empty()) {
        const auto [t, node] = frontier.top();
        frontier.pop();
        if (best && t > best->t) break;
        open(node, best, push);
    }
    return best;
}

}  // namespace broadphase::best_first

// Depth-first descents of a binary bounding-volume tree, shared by dynamic_aabb_tree and
// static_aabb_tree (their nodes differ; the searches do not): the region search, pruned by
// node bounds, and the closest-hit ray descent, nearer child first, pruned by the entry
// parameter. The slab test (ray_box_entry) is monotone under box containment, so a node's entry
// t bounds the entry of every box below it and a node entered after the best hit so far cannot
// hold a better one (one entered at the same t still can: a smaller id wins the tie).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase::detail {

/// Depth-first search below `root` for a region: a node whose bounds meets(i) rejects is skipped,
/// leaf(i) tests a leaf's boxes (and counts its box tests), children(i) gives an internal node's
/// two children (the second is searched first). Counts the internal nodes and leaves visited in
/// `stats`.
template <class Index, class Meets, class IsLeaf, class Leaf, class Children>
void region_descent(Index root, QueryStats& stats, Meets&& meets, IsLeaf&& is_leaf, Leaf&& leaf,
                    Children&& children) {
    std::vector<Index> stack;
    stack.reserve(64);
    stack.push_back(root);
    while (!stack.empty()) {
        const Index index = stack.back();
        stack.pop_back();
        if (!meets(index)) continue;
        if (is_leaf(index)) {
            ++stats.leaves_visited;
            leaf(index);
        } else {
            ++stats.nodes_visited;
            const auto [c1, c2] = children(index);
            stack.push_back(c1);
            stack.push_back(c2);
        }
    }
}

/// The closest hit below `root`, entered at root_t: is_leaf(i) tells a leaf, leaf(i, best)
/// tests its boxes into `best` (keep_closer) and counts its box tests, children(i) gives an
/// internal node's two children and entry(c) a child's entry t (nothing: the ray misses it).
/// Counts the internal nodes and leaves visited in `stats`.
template <class Index, class IsLeaf, class Leaf, class Children, class Entry>
std::optional<RayHit> closest_hit_descent(Index root, float root_t, QueryStats& stats,
                                          IsLeaf&& is_leaf, Leaf&& leaf, Children&& children,
                                          Entry&& entry) {
    std::optional<RayHit> best;
    std::vector<std::pair<Index, float>> stack;
    stack.reserve(64);
    stack.emplace_back(root, root_t);
    while (!stack.empty()) {
        const auto [index, t] = stack.back();
        stack.pop_back();
        if (best && t > best->t) continue;
        if (is_leaf(index)) {
            ++stats.leaves_visited;
            leaf(index, best);
            continue;
        }
        ++stats.nodes_visited;
        const auto [c1, c2] = children(index);
        const std::optional<float> t1 = entry(c1);
        const std::optional<float> t2 = entry(c2);
        // Push the farther child first so that the nearer one is searched first.
        if (t1 && t2 && *t1 < *t2) {
            stack.emplace_back(c2, *t2);
            stack.emplace_back(c1, *t1);
        } else {
            if (t1) stack.emplace_back(c1, *t1);
            if (t2) stack.emplace_back(c2, *t2);
        }
    }
    return best;
}

}  // namespace broadphase::detail

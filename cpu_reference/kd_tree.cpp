// k-d tree (J. L. Bentley, CACM 1975) as described in magley's survey "Broad phase algorithms and
// data structures" (docs/references.md): recursive splits at the median, on alternating axes or on
// the widest one, down to a leaf capacity c.
//
// Boxes are extended, so they are split by their centroids: a node's range of boxes is
// partitioned with nth_element at the centroid median on the chosen axis, the left half having
// centroids <= split and the right half >= split. Each node keeps the bounds of all its boxes,
// and every query prunes by those bounds, which is what makes a box straddling the median line
// harmless: it is stored once, on its centroid's side, and the node bounds grow to cover it.
// Self-pairs are a dual traversal of the tree against itself (each pair is met exactly once:
// inside one leaf, or across the two children of the lowest node holding both boxes).
#include "kd_tree.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "best_first.hpp"
#include "broadphase/scene.hpp"

namespace broadphase {
namespace {

// Median splits halve the count, so no tree over < 2^32 boxes is deeper than 32, and a
// depth-first stack (one pending sibling per level) never holds more than 33 entries.
constexpr std::size_t kStackSize = 128;

// Halves first, so that boxes near the float limits do not overflow to infinity.
}  // namespace

Status KdTree::build(std::span<const Box> boxes) {
    nodes_.clear();
    ids_.clear();
    boxes_.clear();
    if (config_.leaf_capacity == 0) return invalid("leaf_capacity must be at least 1");
    if (Status s = validate_boxes(boxes); !s) return s;
    if (boxes.size() >= std::numeric_limits<std::uint32_t>::max()) {
        return Error{ErrorCode::limit_exceeded, "kd_tree: too many boxes for 32-bit ids"};
    }
    const auto n = static_cast<std::uint32_t>(boxes.size());
    if (n == 0) return Status::success();

    std::vector<Entry> entries(n);
    for (std::uint32_t i = 0; i < n; ++i) entries[i] = {centroid(boxes[i]), i};
    nodes_.reserve(2 * (n / config_.leaf_capacity) + 8);
    build_node(boxes, entries, 0, n, 0);

    ids_.resize(n);
    boxes_.resize(n);
    for (std::uint32_t k = 0; k < n; ++k) {
        ids_[k] = entries[k].id;
        boxes_[k] = boxes[entries[k].id];
    }
    return Status::success();
}

std::uint32_t KdTree::build_node(std::span<const Box> input, std::vector<Entry>& entries,
                                 std::uint32_t begin, std::uint32_t end, std::uint32_t depth) {
    const auto index = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back(Node{});
    nodes_[index].begin = begin;
    nodes_[index].end = end;
    nodes_[index].depth = depth;

    Box cbounds{entries[begin].centroid, entries[begin].centroid};
    for (std::uint32_t k = begin + 1; k < end; ++k) {
        const Vec3& c = entries[k].centroid;
        cbounds = merge(cbounds, Box{c, c});
    }
    const Vec3 extent{cbounds.max.x - cbounds.min.x, cbounds.max.y - cbounds.min.y,
                      cbounds.max.z - cbounds.min.z};
    const bool all_equal = extent.x == 0 && extent.y == 0 && extent.z == 0;

    if (end - begin <= config_.leaf_capacity || depth >= config_.max_depth || all_equal) {
        Box bounds = input[entries[begin].id];
        for (std::uint32_t k = begin + 1; k < end; ++k) {
            bounds = merge(bounds, input[entries[k].id]);
        }
        nodes_[index].bounds = bounds;
        return index;
    }

    int axis = static_cast<int>(depth % 3);
    if (config_.axis_rule == AxisRule::widest) {
        axis = 0;
        if (extent.y > extent[axis]) axis = 1;
        if (extent.z > extent[axis]) axis = 2;
    }
    const std::uint32_t mid = begin + (end - begin) / 2;
    // One comparator per axis: Vec3::operator[] inside the comparator slows the build down.
    const auto first = entries.begin() + begin, nth = entries.begin() + mid,
               last = entries.begin() + end;
    if (axis == 0) {
        std::nth_element(first, nth, last, [](const Entry& a, const Entry& b) {
            return a.centroid.x < b.centroid.x;
        });
    } else if (axis == 1) {
        std::nth_element(first, nth, last, [](const Entry& a, const Entry& b) {
            return a.centroid.y < b.centroid.y;
        });
    } else {
        std::nth_element(first, nth, last, [](const Entry& a, const Entry& b) {
            return a.centroid.z < b.centroid.z;
        });
    }
    const float split = entries[mid].centroid[axis];

    const std::uint32_t left = build_node(input, entries, begin, mid, depth + 1);
    const std::uint32_t right = build_node(input, entries, mid, end, depth + 1);
    Node& node = nodes_[index];
    node.split = split;
    node.axis = static_cast<std::uint8_t>(axis);
    node.right = right;
    node.bounds = merge(nodes_[left].bounds, nodes_[right].bounds);
    return index;
}

std::uint32_t KdTree::height() const {
    std::uint32_t h = 0;
    for (const Node& node : nodes_) h = std::max(h, node.depth);
    return h;
}

// ---- self pairs ------------------------------------------------------------------------------

void KdTree::self_pairs(std::vector<Pair>& out) const {
    if (!nodes_.empty()) self_pairs_node(0, out);
}

void KdTree::leaf_self_pairs(const Node& leaf, std::vector<Pair>& out) const {
    ++stats_.leaves_visited;
    for (std::uint32_t a = leaf.begin; a < leaf.end; ++a) {
        const Box& box = boxes_[a];
        for (std::uint32_t b = a + 1; b < leaf.end; ++b) {
            if (overlaps(box, boxes_[b])) {
                report_pair(out, ids_[a], ids_[b]);
            }
        }
    }
    const std::uint64_t count = leaf.end - leaf.begin;
    stats_.box_tests += count * (count - 1) / 2;
}

void KdTree::self_pairs_node(std::uint32_t index, std::vector<Pair>& out) const {
    const Node& node = nodes_[index];
    if (node.is_leaf()) {
        leaf_self_pairs(node, out);
        return;
    }
    ++stats_.nodes_visited;
    self_pairs_node(index + 1, out);
    self_pairs_node(node.right, out);
    cross_pairs(index + 1, node.right, out);
}

// Pairs with one box under `a` and the other under `b` (disjoint subtrees).
void KdTree::cross_pairs(std::uint32_t a, std::uint32_t b, std::vector<Pair>& out) const {
    const Node& na = nodes_[a];
    const Node& nb = nodes_[b];
    if (!overlaps(na.bounds, nb.bounds)) return;
    if (na.is_leaf() && nb.is_leaf()) {
        ++stats_.leaves_visited;
        for (std::uint32_t i = na.begin; i < na.end; ++i) {
            const Box& box = boxes_[i];
            if (!overlaps(box, nb.bounds)) continue;
            stats_.box_tests += nb.end - nb.begin;
            for (std::uint32_t j = nb.begin; j < nb.end; ++j) {
                if (overlaps(box, boxes_[j])) {
                    report_pair(out, ids_[i], ids_[j]);
                }
            }
        }
        return;
    }
    ++stats_.nodes_visited;
    // Descend the bigger side (by box count), or the only internal one.
    if (nb.is_leaf() || (!na.is_leaf() && na.end - na.begin >= nb.end - nb.begin)) {
        cross_pairs(a + 1, b, out);
        cross_pairs(na.right, b, out);
    } else {
        cross_pairs(a, b + 1, out);
        cross_pairs(a, nb.right, out);
    }
}

// ---- region, point and ray queries -----------------------------------------------------------

template <class Meets>
void KdTree::collect(Meets&& meets, std::vector<std::uint32_t>& out) const {
    if (nodes_.empty()) return;
    std::array<std::uint32_t, kStackSize> stack;
    std::size_t top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const std::uint32_t index = stack[--top];
        const Node& node = nodes_[index];
        if (!meets(node.bounds)) continue;
        if (node.is_leaf()) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.end - node.begin;
            for (std::uint32_t k = node.begin; k < node.end; ++k) {
                if (meets(boxes_[k])) out.push_back(ids_[k]);
            }
            continue;
        }
        ++stats_.nodes_visited;
        stack[top++] = node.right;
        stack[top++] = index + 1;
    }
}

void KdTree::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    collect([&](const Box& box) { return overlaps(region, box); }, out);
}

std::optional<RayHit> KdTree::ray_cast(const Ray& ray) const {
    std::optional<RayHit> best;
    if (nodes_.empty()) return best;
    // ray_box_entry is monotone in the box bounds, so a node's entry t is <= that of any box
    // inside it, and a node entered after the best hit cannot hold a better one.
    const std::optional<float> root_t = ray_box_entry(ray, nodes_[0].bounds);
    if (!root_t) return best;
    struct Item {
        std::uint32_t node;
        float t;
    };
    std::array<Item, kStackSize> stack;
    std::size_t top = 0;
    stack[top++] = {0, *root_t};
    while (top > 0) {
        const Item item = stack[--top];
        if (best && item.t > best->t) continue;
        const Node& node = nodes_[item.node];
        if (node.is_leaf()) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.end - node.begin;
            for (std::uint32_t k = node.begin; k < node.end; ++k) {
                keep_closer(best, ids_[k], ray_box_entry(ray, boxes_[k]));
            }
            continue;
        }
        ++stats_.nodes_visited;
        const std::uint32_t left = item.node + 1, right = node.right;
        const std::optional<float> tl = ray_box_entry(ray, nodes_[left].bounds);
        const std::optional<float> tr = ray_box_entry(ray, nodes_[right].bounds);
        // Push the farther child first so that the nearer one is popped next.
        if (tl && tr) {
            if (*tl <= *tr) {
                stack[top++] = {right, *tr};
                stack[top++] = {left, *tl};
            } else {
                stack[top++] = {left, *tl};
                stack[top++] = {right, *tr};
            }
        } else if (tl) {
            stack[top++] = {left, *tl};
        } else if (tr) {
            stack[top++] = {right, *tr};
        }
    }
    return best;
}

// ---- nearest ---------------------------------------------------------------------------------

Status KdTree::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0 || nodes_.empty()) return Status::success();
    // Node keys are point_box_distance of the node bounds (monotone under containment).
    best_first::Queue queue;
    queue.push_node(point_box_distance(p, nodes_[0].bounds), 0);
    queue.search(k, out, [&](std::uint32_t index, best_first::Queue& q) {
        const Node& node = nodes_[index];
        if (node.is_leaf()) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.end - node.begin;
            for (std::uint32_t s = node.begin; s < node.end; ++s)
                q.push_box(point_box_distance(p, boxes_[s]), ids_[s]);
            return;
        }
        ++stats_.nodes_visited;
        const std::uint32_t left = index + 1;
        q.push_node(point_box_distance(p, nodes_[left].bounds), left);
        q.push_node(point_box_distance(p, nodes_[node.right].bounds), node.right);
    });
    return Status::success();
}

// ---- validate --------------------------------------------------------------------------------

std::size_t KdTree::size() const {
    return boxes_.size();
}

Status KdTree::validate() const {
    const std::size_t n = boxes_.size();
    if (Status s = validate_slots(boxes_, ids_); !s) return s;
    if (n == 0) {
        return nodes_.empty() ? Status::success() : broken("nodes in an empty tree");
    }
    if (nodes_.empty()) return broken("no nodes over " + std::to_string(n) + " boxes");

    struct Expect {
        std::uint32_t node, begin, end, depth;
    };
    const std::vector<Expect> root{{0, 0, static_cast<std::uint32_t>(n), 0}};
    return walk_tree(
        root, nodes_.size(),
        [&](const Expect& e, const std::string& where, std::vector<Expect>& stack) -> Status {
            const Node& node = nodes_[e.node];
            if (node.begin != e.begin || node.end != e.end || e.begin >= e.end) {
                return broken(where + "range does not match its place in the tree");
            }
            if (node.depth != e.depth) return broken(where + "wrong depth");
            if (node.is_leaf()) {
                for (std::uint32_t k = node.begin; k < node.end; ++k) {
                    if (!contains_box(node.bounds, boxes_[k])) {
                        return broken(
                            where + "bounds do not contain box " + std::to_string(ids_[k]),
                            ids_[k]);
                    }
                }
                if (node.end - node.begin > config_.leaf_capacity &&
                    node.depth < config_.max_depth) {
                    const Vec3 c0 = centroid(boxes_[node.begin]);
                    for (std::uint32_t k = node.begin + 1; k < node.end; ++k) {
                        if (!(centroid(boxes_[k]) == c0)) {
                            return broken(
                                where + "leaf holds " + std::to_string(node.end - node.begin) +
                                " boxes, more than the capacity, with distinct centroids");
                        }
                    }
                }
                return Status::success();
            }
            const std::uint32_t left = e.node + 1, right = node.right;
            if (right <= left || right >= nodes_.size()) return broken(where + "bad right child");
            if (node.axis > 2) return broken(where + "bad split axis");
            const Node& l = nodes_[left];
            const Node& r = nodes_[right];
            if (l.begin != node.begin || l.end != r.begin || r.end != node.end ||
                l.begin >= l.end || r.begin >= r.end) {
                return broken(where + "children do not partition its range");
            }
            if (!contains_box(node.bounds, l.bounds) || !contains_box(node.bounds, r.bounds)) {
                return broken(where + "bounds do not contain a child's bounds");
            }
            for (std::uint32_t k = l.begin; k < l.end; ++k) {
                if (!(centroid(boxes_[k])[node.axis] <= node.split)) {
                    return broken(where + "box " + std::to_string(ids_[k]) +
                                      " on the left has its centroid above the split",
                                  ids_[k]);
                }
            }
            for (std::uint32_t k = r.begin; k < r.end; ++k) {
                if (!(centroid(boxes_[k])[node.axis] >= node.split)) {
                    return broken(where + "box " + std::to_string(ids_[k]) +
                                      " on the right has its centroid below the split",
                                  ids_[k]);
                }
            }
            stack.push_back({right, r.begin, r.end, e.depth + 1});
            stack.push_back({left, l.begin, l.end, e.depth + 1});
            return Status::success();
        });
}

}  // namespace broadphase

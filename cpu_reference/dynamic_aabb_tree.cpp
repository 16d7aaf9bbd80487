// Dynamic AABB tree, after Ming-Lun "Allen" Chou's article "Game Physics: Broadphase -
// Dynamic AABB Tree" (the article below) and Box2D's b2DynamicTree (E. Catto; GDC 2019, "Dynamic
// Bounding Volume Hierarchies", on insertion cost and tree rotations).
//
// - Fat boxes: each leaf stores the caller's tight box and a fat box grown by a margin; move()
//   re-inserts a leaf only when its tight box leaves its fat box (the article's "AABB Update").
//   The default margin is relative: on each axis, Config::margin (10%) of the smaller of the
//   box's own extent there and the typical extent, the lower median of the boxes' mean
//   extents. A mean would let one world-sized box (level's ground slab) grow every fat box over
//   the whole play area, and self-pairs would then test every pair (76 s at 100,000 boxes);
//   one margin on all axes would grow boxes a thousand times wider than thick (xline) across
//   their thin axis by a hundred times their thickness, so that each fat box met a hundred
//   others. With the cap no fat box is more than 1.2 times its box on any axis, and pruning on
//   fat boxes costs about what pruning on the tight ones would. The price: a box that moves
//   across a thin (or zero) extent leaves its fat box sooner and is re-inserted, O(log n).
// - Insertion descends by least cost. The article descends by least volume growth; volume is 0 for
//   every flat or point box (a 2D scene), so this uses Box2D's surface-area branch cost instead:
//   stop at a node when making the leaf its sibling is cheaper than descending into either
//   child, counting the area growth inherited by every ancestor. Area is 0 too for points and
//   segments on one line; where areas tie, the sum of the side lengths decides, so such boxes
//   are still placed by position rather than all down one branch. Both in double, so that
//   far coordinates (1e7) and world-sized boxes neither cancel nor overflow.
// - Rotations: the article's comments note that a sorted insertion order degenerates into a list
//   and suggest AVL-like rotations; balance() is Box2D's b2DynamicTree::Balance, applied on the
//   path to the root after every insert and remove.
// - Self-pairs: the article's ComputePairsHelper tests boxes only at leaves, so (as a comment
//   points out) it visits every pair of leaves. Here a dual-tree traversal prunes every pair of
//   nodes whose fat boxes are disjoint, and a node's two children are crossed only when their
//   fat boxes overlap. Each leaf pair has one lowest common ancestor, so each pair is reached
//   once and no "children crossed" flags are needed. The final test is on the tight boxes.
// - build() makes a balanced tree by top-down median splits of box centroids along the longest
//   axis (as Box2D v3's b2DynamicTree_Rebuild does, there with binned SAH), or inserts one by one.
#include "dynamic_aabb_tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "best_first.hpp"
#include "broadphase/scene.hpp"
#include "tree_descent.hpp"

namespace broadphase {
namespace {

// The insertion cost measure: half the surface area, then (where areas tie, as they do at 0
// for points and segments along one line) the sum of the side lengths. Both in double.
struct Cost {
    double area = 0;
    double length = 0;
    friend Cost operator+(const Cost& a, const Cost& b) {
        return {a.area + b.area, a.length + b.length};
    }
    friend Cost operator-(const Cost& a, const Cost& b) {
        return {a.area - b.area, a.length - b.length};
    }
    friend Cost operator*(double k, const Cost& a) { return {k * a.area, k * a.length}; }
    friend bool operator<(const Cost& a, const Cost& b) {
        return a.area < b.area || (a.area == b.area && a.length < b.length);
    }
};

Cost measure(const Box& b) {
    const double dx = double(b.max.x) - b.min.x;
    const double dy = double(b.max.y) - b.min.y;
    const double dz = double(b.max.z) - b.min.z;
    return {dx * dy + dy * dz + dz * dx, dx + dy + dz};
}

// Mean of the three side lengths, in double.
double mean_extent(const Box& b) {
    return (double(b.max.x) - b.min.x + double(b.max.y) - b.min.y + double(b.max.z) - b.min.z) /
           3.0;
}

// The lower median (element (n - 1) / 2 in order) of a non-empty list; reorders it.
double lower_median(std::vector<double>& values) {
    const auto mid = values.begin() + static_cast<std::ptrdiff_t>((values.size() - 1) / 2);
    std::nth_element(values.begin(), mid, values.end());
    return *mid;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Node pool

std::int32_t DynamicAabbTree::allocate_node() {
    if (free_list_ != kNull) {
        const std::int32_t index = free_list_;
        free_list_ = nodes_[index].parent;
        nodes_[index] = Node{};
        return index;
    }
    nodes_.emplace_back();
    return static_cast<std::int32_t>(nodes_.size() - 1);
}

void DynamicAabbTree::free_node(std::int32_t index) {
    Node& node = nodes_[index];
    node.parent = free_list_;
    node.child1 = node.child2 = kNull;
    node.height = -1;
    free_list_ = index;
}

// Grows `box` by margin_ on every side, or, with relative margins, on each axis by at most
// config_.margin times the box's own extent on that axis: a box 1000 times longer than it is
// thick (the xline scene) is not grown across its thin axis by 100 times its thickness, which
// would make every fat box overlap hundreds of its neighbours. Rounding can only move a fat
// side outwards, so the fat box always contains the tight one.
Box DynamicAabbTree::fatten(const Box& box) const {
    if (!(margin_ > 0)) return box;
    constexpr float kLowest = std::numeric_limits<float>::lowest();
    constexpr float kHighest = std::numeric_limits<float>::max();
    Box fat;
    for (int a = 0; a < 3; ++a) {
        float margin = margin_;
        if (config_.margin_is_relative) {
            const double extent = double(box.max[a]) - box.min[a];
            margin = static_cast<float>(std::min(double(margin_), config_.margin * extent));
        }
        fat.min[a] = std::max(kLowest, box.min[a] - margin);
        fat.max[a] = std::min(kHighest, box.max[a] + margin);
    }
    return fat;
}

// The lower median of the boxes' mean extents: unlike the mean, one world-wide box (a ground
// slab, a trigger over the level) cannot move it.
void DynamicAabbTree::set_relative_margin(std::span<const Box> boxes) {
    double margin = config_.margin;
    if (config_.margin_is_relative) {
        std::vector<double> extents(boxes.size());
        for (std::size_t i = 0; i < boxes.size(); ++i) extents[i] = mean_extent(boxes[i]);
        margin = boxes.empty() ? 0.0 : config_.margin * lower_median(extents);
    }
    margin_ = margin > 0 && std::isfinite(margin) ? static_cast<float>(margin) : 0.0f;
    margin_chosen_ = !config_.margin_is_relative || !boxes.empty();
}

// A tree filled by insert() alone re-estimates the typical extent from the first
// kMarginSample boxes, each time their count reaches a power of two.
void DynamicAabbTree::sample_margin(const Box& box) {
    if (margin_sample_.size() >= kMarginSample) return;
    margin_sample_.push_back(box);
    const std::size_t count = margin_sample_.size();
    if ((count & (count - 1)) == 0) set_relative_margin(margin_sample_);
}

std::int32_t DynamicAabbTree::make_leaf(std::uint32_t id, const Box& box) {
    const std::int32_t index = allocate_node();
    Node& node = nodes_[index];
    node.tight = box;
    node.fat = fatten(box);
    node.id = id;
    node.height = 0;
    leaf_of_[id] = index;
    return index;
}

void DynamicAabbTree::clear() {
    nodes_.clear();
    root_ = kNull;
    free_list_ = kNull;
    leaf_of_.clear();
    margin_chosen_ = false;
    sampling_margin_ = false;
    margin_sample_.clear();
}

// ---------------------------------------------------------------------------------------------
// Build

Status DynamicAabbTree::build(std::span<const Box> boxes) {
    clear();
    if (Status s = validate_boxes(boxes); !s) return s;
    set_relative_margin(boxes);
    if (boxes.size() > std::size_t(std::numeric_limits<std::int32_t>::max() / 2)) {
        return Error{ErrorCode::limit_exceeded, "dynamic_aabb_tree: too many boxes"};
    }
    const auto n = static_cast<std::uint32_t>(boxes.size());
    if (!config_.bulk_build) {
        for (std::uint32_t i = 0; i < n; ++i) insert_leaf(make_leaf(i, boxes[i]));
        return Status::success();
    }
    if (n == 0) return Status::success();
    nodes_.reserve(2 * std::size_t{n} - 1);
    leaf_of_.reserve(n);
    std::vector<BuildItem> items(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        for (int a = 0; a < 3; ++a) {
            items[i].centre[a] = 0.5f * boxes[i].min[a] + 0.5f * boxes[i].max[a];
        }
        items[i].id = i;
    }
    root_ = build_top_down(boxes, items, kNull);
    return Status::success();
}

// Splits `items` at the median centroid along the longest axis of their centroid bounds;
// nodes are allocated in pre-order, so a subtree is contiguous in memory.
std::int32_t DynamicAabbTree::build_top_down(std::span<const Box> boxes, std::span<BuildItem> items,
                                             std::int32_t parent) {
    if (items.size() == 1) {
        const std::uint32_t id = items[0].id;
        const std::int32_t leaf = make_leaf(id, boxes[id]);
        nodes_[leaf].parent = parent;
        return leaf;
    }
    const std::int32_t index = allocate_node();
    nodes_[index].parent = parent;
    float lo[3], hi[3];
    for (int a = 0; a < 3; ++a) lo[a] = hi[a] = items[0].centre[a];
    for (const BuildItem& item : items) {
        for (int a = 0; a < 3; ++a) {
            lo[a] = std::min(lo[a], item.centre[a]);
            hi[a] = std::max(hi[a], item.centre[a]);
        }
    }
    int axis = 0;
    for (int a = 1; a < 3; ++a) {
        if (double(hi[a]) - lo[a] > double(hi[axis]) - lo[axis]) axis = a;
    }
    const std::size_t mid = items.size() / 2;
    std::nth_element(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(mid), items.end(),
                     [axis](const BuildItem& x, const BuildItem& y) {
                         return x.centre[axis] < y.centre[axis] ||
                                (x.centre[axis] == y.centre[axis] && x.id < y.id);
                     });
    const std::int32_t c1 = build_top_down(boxes, items.first(mid), index);
    const std::int32_t c2 = build_top_down(boxes, items.subspan(mid), index);
    nodes_[index].child1 = c1;
    nodes_[index].child2 = c2;
    refit(index);
    return index;
}

// ---------------------------------------------------------------------------------------------
// Insert, remove, move

// The child link of `parent` that points at `from` points at `to` instead; with no parent
// (`from` was the root), `to` becomes the root. Parent links are the caller's.
void DynamicAabbTree::relink(std::int32_t parent, std::int32_t from, std::int32_t to) {
    if (parent == kNull) {
        root_ = to;
        return;
    }
    Node& p = nodes_[parent];
    (p.child1 == from ? p.child1 : p.child2) = to;
}

void DynamicAabbTree::insert_leaf(std::int32_t leaf) {
    if (root_ == kNull) {
        root_ = leaf;
        nodes_[leaf].parent = kNull;
        return;
    }
    // Find the best sibling (Box2D's branch cost, surface area instead of volume).
    const Box leaf_box = nodes_[leaf].fat;
    std::int32_t index = root_;
    while (!nodes_[index].leaf()) {
        const Node& node = nodes_[index];
        const Cost area = measure(node.fat);
        const Cost combined_area = measure(merge(node.fat, leaf_box));
        // Cost of making a new parent of this node and the leaf.
        const Cost cost = 2 * combined_area;
        // Cost of pushing the leaf further down: every ancestor grows.
        const Cost inheritance = 2 * (combined_area - area);
        const auto descend_cost = [&](std::int32_t child) {
            const Node& c = nodes_[child];
            const Cost grown = measure(merge(leaf_box, c.fat));
            return (c.leaf() ? grown : grown - measure(c.fat)) + inheritance;
        };
        const Cost cost1 = descend_cost(node.child1);
        const Cost cost2 = descend_cost(node.child2);
        if (cost < cost1 && cost < cost2) break;
        index = cost1 < cost2 ? node.child1 : node.child2;
    }

    const std::int32_t sibling = index;
    const std::int32_t old_parent = nodes_[sibling].parent;
    const std::int32_t new_parent = allocate_node();
    {
        Node& p = nodes_[new_parent];
        p.parent = old_parent;
        p.fat = merge(leaf_box, nodes_[sibling].fat);
        p.height = nodes_[sibling].height + 1;
        p.child1 = sibling;
        p.child2 = leaf;
    }
    relink(old_parent, sibling, new_parent);
    nodes_[sibling].parent = new_parent;
    nodes_[leaf].parent = new_parent;
    refit_upwards(old_parent);
}

void DynamicAabbTree::remove_leaf(std::int32_t leaf) {
    if (leaf == root_) {
        root_ = kNull;
        return;
    }
    const std::int32_t parent = nodes_[leaf].parent;
    const std::int32_t grand_parent = nodes_[parent].parent;
    const std::int32_t sibling =
        nodes_[parent].child1 == leaf ? nodes_[parent].child2 : nodes_[parent].child1;
    // The sibling takes the parent's place.
    relink(grand_parent, parent, sibling);
    nodes_[sibling].parent = grand_parent;
    free_node(parent);
    nodes_[leaf].parent = kNull;
    refit_upwards(grand_parent);
}

// An internal node's fat box and height from its two children.
void DynamicAabbTree::refit(std::int32_t index) {
    Node& node = nodes_[index];
    node.fat = merge(nodes_[node.child1].fat, nodes_[node.child2].fat);
    node.height = 1 + std::max(nodes_[node.child1].height, nodes_[node.child2].height);
}

// Rotates (if enabled) and recomputes fat boxes and heights from `index` to the root.
void DynamicAabbTree::refit_upwards(std::int32_t index) {
    while (index != kNull) {
        if (config_.rotations) index = balance(index);
        refit(index);
        index = nodes_[index].parent;
    }
}

// Box2D's b2DynamicTree::Balance: when one child of A is more than one level taller than the
// other, that child X takes A's place, A becomes X's child, and X's shorter child moves to A
// in X's old place. Returns the index now at A's position.
std::int32_t DynamicAabbTree::balance(std::int32_t a) {
    const Node& node_a = nodes_[a];
    if (node_a.leaf() || node_a.height < 2) return a;
    const std::int32_t b = node_a.child1, c = node_a.child2;
    const std::int32_t skew = nodes_[c].height - nodes_[b].height;
    if (skew >= -1 && skew <= 1) return a;
    const std::int32_t x = skew > 1 ? c : b;  // the taller child rises
    std::int32_t keep = nodes_[x].child1, give = nodes_[x].child2;
    if (nodes_[keep].height < nodes_[give].height) std::swap(keep, give);

    // X takes A's place under A's parent.
    const std::int32_t parent = nodes_[a].parent;
    nodes_[x].parent = parent;
    relink(parent, a, x);
    // A replaces its child X by X's shorter child; X's children become A and the taller one.
    relink(a, x, give);
    nodes_[a].parent = x;
    nodes_[give].parent = a;
    refit(a);
    nodes_[x].child1 = a;
    nodes_[x].child2 = keep;
    refit(x);
    return x;
}

Status DynamicAabbTree::insert(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    if (leaf_of_.count(id) != 0) {
        return invalid("insert of id " + std::to_string(id) + ", already present", id);
    }
    if (leaf_of_.size() >= std::size_t(std::numeric_limits<std::int32_t>::max() / 2)) {
        return Error{ErrorCode::limit_exceeded, "dynamic_aabb_tree: too many boxes", id};
    }
    if (!margin_chosen_) {
        margin_sample_.clear();
        sampling_margin_ = config_.margin_is_relative;
        if (!sampling_margin_) set_relative_margin(std::span<const Box>(&box, 1));
    }
    if (sampling_margin_) sample_margin(box);
    insert_leaf(make_leaf(id, box));
    return Status::success();
}

Status DynamicAabbTree::remove(std::uint32_t id) {
    const auto it = leaf_of_.find(id);
    if (it == leaf_of_.end()) {
        return invalid("remove of id " + std::to_string(id) + ", not present", id);
    }
    const std::int32_t leaf = it->second;
    leaf_of_.erase(it);
    remove_leaf(leaf);
    free_node(leaf);
    return Status::success();
}

Status DynamicAabbTree::move(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    const auto it = leaf_of_.find(id);
    if (it == leaf_of_.end()) {
        return invalid("move of id " + std::to_string(id) + ", not present", id);
    }
    const std::int32_t leaf = it->second;
    nodes_[leaf].tight = box;
    if (contains_box(nodes_[leaf].fat, box)) return Status::success();
    remove_leaf(leaf);
    nodes_[leaf].fat = fatten(box);
    insert_leaf(leaf);
    ++reinserts_;
    return Status::success();
}

// ---------------------------------------------------------------------------------------------
// Queries

void DynamicAabbTree::self_pairs(std::vector<Pair>& out) const {
    if (root_ == kNull) return;
    // (a, kNull): pairs inside subtree a. (a, b): pairs between disjoint subtrees a and b,
    // pushed only when their fat boxes overlap.
    std::vector<std::pair<std::int32_t, std::int32_t>> stack;
    stack.reserve(256);
    stack.emplace_back(root_, kNull);
    while (!stack.empty()) {
        const auto [a, b] = stack.back();
        stack.pop_back();
        const Node& na = nodes_[a];
        if (b == kNull) {
            if (na.leaf()) continue;
            ++stats_.nodes_visited;
            stack.emplace_back(na.child1, kNull);
            stack.emplace_back(na.child2, kNull);
            if (overlaps(nodes_[na.child1].fat, nodes_[na.child2].fat)) {
                stack.emplace_back(na.child1, na.child2);
            }
            continue;
        }
        const Node& nb = nodes_[b];
        if (na.leaf() && nb.leaf()) {
            ++stats_.leaves_visited;
            ++stats_.box_tests;
            if (overlaps(na.tight, nb.tight)) {
                report_pair(out, na.id, nb.id);
            }
            continue;
        }
        ++stats_.nodes_visited;
        // Descend the internal node, the larger one when both are.
        const bool split_a = nb.leaf() || (!na.leaf() && half_area(na.fat) >= half_area(nb.fat));
        const Node& split = split_a ? na : nb;
        const Node& other = split_a ? nb : na;
        const std::int32_t other_index = split_a ? b : a;
        for (const std::int32_t child : {split.child1, split.child2}) {
            if (overlaps(nodes_[child].fat, other.fat)) stack.emplace_back(child, other_index);
        }
    }
}

void DynamicAabbTree::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    if (root_ == kNull) return;
    detail::region_descent(
        root_, stats_, [&](std::int32_t i) { return overlaps(nodes_[i].fat, region); },
        [&](std::int32_t i) { return nodes_[i].leaf(); },
        [&](std::int32_t i) {
            ++stats_.box_tests;
            if (overlaps(nodes_[i].tight, region)) out.push_back(nodes_[i].id);
        },
        [&](std::int32_t i) {
            return std::pair{nodes_[i].child1, nodes_[i].child2};
        });
}

std::optional<RayHit> DynamicAabbTree::ray_cast(const Ray& ray) const {
    if (root_ == kNull) return std::nullopt;
    // Pruned by the fat boxes, which contain the tight ones.
    const std::optional<float> root_t = ray_box_entry(ray, nodes_[root_].fat);
    if (!root_t) return std::nullopt;
    return detail::closest_hit_descent(
        root_, *root_t, stats_, [&](std::int32_t i) { return nodes_[i].leaf(); },
        [&](std::int32_t i, std::optional<RayHit>& best) {
            ++stats_.box_tests;
            keep_closer(best, nodes_[i].id, ray_box_entry(ray, nodes_[i].tight));
        },
        [&](std::int32_t i) {
            return std::pair{nodes_[i].child1, nodes_[i].child2};
        },
        [&](std::int32_t c) { return ray_box_entry(ray, nodes_[c].fat); });
}

Status DynamicAabbTree::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0 || root_ == kNull) return Status::success();
    // A node's key is the distance to its fat box, which holds every tight box below it.
    best_first::Queue queue;
    queue.push_node(point_box_distance(p, nodes_[root_].fat), std::uint32_t(root_));
    queue.search(k, out, [&](std::uint32_t index, best_first::Queue& q) {
        const Node& node = nodes_[index];
        if (node.leaf()) {
            ++stats_.leaves_visited;
            ++stats_.box_tests;
            q.push_box(point_box_distance(p, node.tight), node.id);
            return;
        }
        ++stats_.nodes_visited;
        for (const std::int32_t child : {node.child1, node.child2}) {
            q.push_node(point_box_distance(p, nodes_[child].fat), std::uint32_t(child));
        }
    });
    return Status::success();
}

// ---------------------------------------------------------------------------------------------
// Invariants

int DynamicAabbTree::height() const {
    return root_ == kNull ? 0 : nodes_[root_].height;
}

std::size_t DynamicAabbTree::size() const {
    return leaf_of_.size();
}

Status DynamicAabbTree::validate() const {
    // Free nodes have height -1 and link the free list through `parent`.
    const auto total = static_cast<std::int64_t>(nodes_.size());
    const Result<std::int64_t> free_count = count_free_list(
        free_list_, total, [&](std::int32_t i) { return nodes_[i].parent; },
        [&](std::int32_t i) { return nodes_[i].height == -1; });
    if (!free_count) return free_count.error();
    const auto node_name = [](std::int32_t i) { return "node " + std::to_string(i); };
    const auto in_range = [&](std::int32_t i) { return i >= 0 && i < total; };
    if (root_ == kNull) {
        if (!leaf_of_.empty()) return broken("no root but ids are mapped");
        if (*free_count != total) return broken("empty tree with nodes in use");
        return Status::success();
    }
    if (!in_range(root_)) return broken("root outside the pool");
    if (nodes_[root_].parent != kNull) return broken("root has a parent");

    std::size_t leaves = 0;
    const auto is_free = [&](std::int32_t i) { return nodes_[i].height < 0; };
    const auto check = [&](std::int32_t i, std::vector<std::int32_t>& stack) -> Status {
        const Node& node = nodes_[i];
        if (node.leaf()) {
            if (node.child2 != kNull) return broken(node_name(i) + " has one child");
            if (node.height != 0) return broken(node_name(i) + " leaf height not 0");
            if (Status s = validate_box(node.tight, node.id); !s) return s;
            if (!contains_box(node.fat, node.tight)) {
                return broken("fat box of id " + std::to_string(node.id) +
                              " does not contain its box");
            }
            const auto it = leaf_of_.find(node.id);
            if (it == leaf_of_.end() || it->second != i) {
                return broken("id " + std::to_string(node.id) + " not mapped to " + node_name(i));
            }
            ++leaves;
            return Status::success();
        }
        for (const std::int32_t child : {node.child1, node.child2}) {
            if (!in_range(child)) return broken(node_name(i) + " child out of range");
            if (nodes_[child].parent != i) {
                return broken(node_name(child) + " parent link is not " + node_name(i));
            }
            if (!contains_box(node.fat, nodes_[child].fat)) {
                return broken(node_name(i) + " fat box does not contain child " + node_name(child));
            }
            stack.push_back(child);
        }
        if (node.height != 1 + std::max(nodes_[node.child1].height, nodes_[node.child2].height)) {
            return broken(node_name(i) + " height inconsistent with its children");
        }
        return Status::success();
    };
    if (Status s = walk_pool(root_, total, *free_count, is_free, check); !s) return s;
    if (leaves == leaf_of_.size()) return Status::success();
    return broken(std::to_string(leaves) + " leaves but " + std::to_string(leaf_of_.size()) +
                  " ids mapped");
}

}  // namespace broadphase

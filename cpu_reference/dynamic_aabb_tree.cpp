// Dynamic AABB tree, after Ming-Lun "Allen" Chou's article "Game Physics: Broadphase -
// Dynamic AABB Tree" (the article below) and Box2D's b2DynamicTree (E. Catto; GDC 2019, "Dynamic
// Bounding Volume Hierarchies", on insertion cost and tree rotations; the sibling search, the
// rotations and the moves are those of Box2D v3's src/dynamic_tree.c: b2FindBestSibling,
// b2RotateNodes, b2DynamicTree_MoveProxy).
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
// - Insertion searches for the sibling of least cost. The article descends by least volume
//   growth; volume is 0 for every flat or point box (a 2D scene), so this uses Box2D's surface
//   area instead: the cost of a sibling is the area of the new parent plus the growth of every
//   ancestor. Box2D v3's b2FindBestSibling finds it by branch and bound down one path: at each
//   node it keeps the best cost so far and descends into the child whose lower bound (the
//   inherited growth, plus the child's growth, plus the new parent's least area: the leaf's
//   own) is lower, stopping where neither bound beats the best. It goes deeper than Box2D v2's
//   descent, which stopped at the first node where descending cost more than a sibling there,
//   and places a leaf no worse. Area is 0 too for points and segments on one line; where areas
//   tie, the sum of the side lengths decides, then the nearer child centre, then the lower
//   child, so that such boxes are still placed by position and copies of one box stay
//   balanced. In double, so that far coordinates (1e7) and world-sized boxes neither cancel
//   nor overflow.
// - Moves (b2DynamicTree_MoveProxy): a leaf whose box left its fat box is removed and inserted
//   again, rotating after the insertion but not after the removal (Box2D v3's moves rotate
//   after neither and lean on its rebuild; here rotations after removals cost a fifth of a move
//   and saved at most 3% of the nodes a query visits). Two shortcuts: a new fat box inside the
//   parent's box just replaces the old one (the parent is as good a place as any, and it can
//   only shrink); otherwise the search starts at the lowest ancestor whose box holds the new
//   fat box, since every node above that one grows alike (not at all) wherever below it the
//   leaf goes. Bodies in an engine move a little at a time and that ancestor is mostly a few
//   levels up: in a Bullet world of 30,000 falling boxes the tree's share of the run dropped
//   from 8.3% to 4.5% with these (with the search from the root: 6.4%), and its queries got no
//   dearer. Boxes that jump by their own size at random leave looser nodes: 100,000 of them,
//   10% moved per step, cost 1.7 times a fresh tree's self-pairs after 200 steps (1.1 times
//   with the search from the root).
// - Refits stop at the first ancestor that neither changed nor rotated.
// - Rotations: the article's comments note that a sorted insertion order degenerates into a list
//   and suggest AVL-like rotations. Box2D v2's b2DynamicTree::Balance did that: it rotated
//   wherever one child was two levels taller than the other, whatever the boxes. In a tree
//   built by median splits inserts make such skews high up, and those rotations swap subtrees
//   across far groups of boxes: on `degenerate` (a sixth of its 50,000 boxes 1e6 away) the
//   first frame of motion after build(), which re-inserts its points, cost 43 times the
//   self-pairs nodes of a fresh tree, and the frames after it up to 6 times.
//   rotate() is Box2D v3's b2RotateNodes instead (Catto, GDC 2019): at each ancestor A of an
//   inserted leaf, on the path up until nothing changes, each rotation swaps
//   one child of A with a grandchild under A's other child. A's box is unchanged (it covers the
//   same leaves) and so is every node but the child that takes the swapped-in subtree, so the
//   rotation's gain is that child's area before less after; the largest positive gain is
//   applied. Identical boxes make every gain 0, and then a rotation that lowers A's height is
//   taken, as the AVL rotation would, so that copies inserted one by one stay balanced.
// - Self-pairs: the article's ComputePairsHelper tests boxes only at leaves, so (as a comment
//   points out) it visits every pair of leaves. Here a dual-tree traversal prunes every pair of
//   nodes whose fat boxes are disjoint, and a node's two children are crossed only when their
//   fat boxes overlap. Each leaf pair has one lowest common ancestor, so each pair is reached
//   once and no "children crossed" flags are needed. The final test is on the tight boxes.
// - build() makes a balanced tree by top-down median splits of box centroids along the longest
//   axis (as Box2D v3's b2DynamicTree_Rebuild does, there with binned SAH), or inserts one by one.
//   Box2D v3 also enlarges a moved leaf in place (b2DynamicTree_EnlargeProxy) and rebuilds the
//   enlarged part of the tree by binned SAH once per step, beside the narrow phase. Tried here
//   with 10% of 10,000 boxes moved per step, the part rebuilt held four kept subtrees per moved
//   leaf and cost twice the re-insertions it replaced, so moves re-insert.
// - Queries: a node is 32 bytes (fat box and child links, aligned so that it never straddles a
//   cache line); its parent link and height, which only the writes read, are apart, and so are
//   the tight box and id of a leaf, read only at the leaves a query reaches. A leaf's id is
//   also in its node's second child link, so that query_box of a tree without margin (fat box
//   = tight box: the pair tracker's) reads no leaf data: 16 of the 165 lines a requery read in
//   FCL's 100,000-object world. query_box keeps its stack on the call stack.
#include "dynamic_aabb_tree.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

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
    friend bool operator==(const Cost&, const Cost&) = default;
};

constexpr double kInfinity = std::numeric_limits<double>::infinity();

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

// The build's order of items along `axis`: by centre (-0 and +0 equal), then by id, as one
// unsigned key (the float's bits made to sort as unsigned integers, the id below them).
template <class Item>
std::uint64_t order_key(const Item& item, int axis) {
    const float centre = item.centre[axis] == 0.0f ? 0.0f : item.centre[axis];
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(centre);
    const std::uint32_t key = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
    return std::uint64_t{key} << 32 | item.id;
}

// std::nth_element(items, nth) in order_key's order: quickselect with a median-of-three pivot
// and a partition with no branch on the keys (its branches would be guessed wrong half the
// time, which made the build's selects most of its cost). The keys are distinct, so the items
// before nth are the same set whatever the select, and so is the tree. After 64 rounds
// (inputs against the pivot rule) the rest goes to std::nth_element.
template <class Item>
void select_nth(std::span<Item> items, std::size_t nth, int axis) {
    const auto key = [axis](const Item& item) { return order_key(item, axis); };
    std::size_t lo = 0, hi = items.size();  // nth lies in [lo, hi)
    for (int round = 0; hi - lo > 16; ++round) {
        if (round == 64) {
            std::nth_element(items.begin() + std::ptrdiff_t(lo),
                             items.begin() + std::ptrdiff_t(nth),
                             items.begin() + std::ptrdiff_t(hi),
                             [&](const Item& x, const Item& y) { return key(x) < key(y); });
            return;
        }
        // The median of the first, middle and last keys goes to hi - 1 as the pivot.
        const std::size_t m = lo + (hi - lo) / 2;
        if (key(items[m]) < key(items[lo])) std::swap(items[m], items[lo]);
        if (key(items[hi - 1]) < key(items[lo])) std::swap(items[hi - 1], items[lo]);
        if (key(items[m]) < key(items[hi - 1])) std::swap(items[m], items[hi - 1]);
        const std::uint64_t pivot = key(items[hi - 1]);
        std::size_t store = lo;  // [lo, store) below the pivot, [store, i) above it
        for (std::size_t i = lo; i + 1 < hi; ++i) {
            const Item x = items[i];
            const bool below = key(x) < pivot;
            items[i] = items[store];
            items[store] = x;
            store += below;
        }
        std::swap(items[store], items[hi - 1]);
        if (nth == store) return;
        if (nth < store) {
            hi = store;
        } else {
            lo = store + 1;
        }
    }
    for (std::size_t i = lo + 1; i < hi; ++i) {  // insertion sort of the last few
        const Item x = items[i];
        const std::uint64_t k = key(x);
        std::size_t j = i;
        for (; j > lo && k < key(items[j - 1]); --j) items[j] = items[j - 1];
        items[j] = x;
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Node pool

std::int32_t DynamicAabbTree::allocate_node() {
    if (free_list_ != kNull) {
        const std::int32_t index = free_list_;
        free_list_ = links_[index].parent;
        nodes_[index] = Node{};
        links_[index] = Link{};
        return index;
    }
    nodes_.emplace_back();
    links_.emplace_back();
    leaf_data_.emplace_back();
    return static_cast<std::int32_t>(nodes_.size() - 1);
}

void DynamicAabbTree::free_node(std::int32_t index) {
    Node& node = nodes_[index];
    links_[index].parent = free_list_;
    node.child1 = node.child2 = kNull;
    links_[index].height = -1;
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
    leaf_data_[index] = {box, id};
    node.fat = fatten(box);
    node.child2 = static_cast<std::int32_t>(id);
    links_[index].height = 0;
    map_id(id, index);
    ++leaf_count_;
    return index;
}

std::int32_t DynamicAabbTree::leaf_of(std::uint32_t id) const {
    if (id < leaf_of_.size()) return leaf_of_[id];
    const auto it = far_leaf_of_.find(id);
    return it == far_leaf_of_.end() ? kNull : it->second;
}

// The table grows (at least doubling, so that the ids moved over from the hash map are moved
// O(log n) times) to take an id below 2 * size() + kTableSlack; larger ids are hashed.
void DynamicAabbTree::map_id(std::uint32_t id, std::int32_t leaf) {
    const std::size_t reach = 2 * (leaf_count_ + 1) + kTableSlack;
    if (id >= leaf_of_.size() && id < reach) {
        const std::size_t size =
            std::max(std::size_t{id} + 1, std::min(reach, 2 * leaf_of_.size()));
        leaf_of_.resize(size, kNull);
        for (auto it = far_leaf_of_.begin(); it != far_leaf_of_.end();) {
            if (it->first >= size) {
                ++it;
                continue;
            }
            leaf_of_[it->first] = it->second;
            it = far_leaf_of_.erase(it);
        }
    }
    if (id < leaf_of_.size()) {
        leaf_of_[id] = leaf;
    } else {
        far_leaf_of_[id] = leaf;
    }
}

void DynamicAabbTree::unmap_id(std::uint32_t id) {
    if (id < leaf_of_.size()) {
        leaf_of_[id] = kNull;
    } else {
        far_leaf_of_.erase(id);
    }
}

void DynamicAabbTree::clear() {
    nodes_.clear();
    links_.clear();
    leaf_data_.clear();
    root_ = kNull;
    free_list_ = kNull;
    leaf_of_.clear();
    far_leaf_of_.clear();
    leaf_count_ = 0;
    reinserts_since_layout_ = 0;
    margin_chosen_ = false;
    sampling_margin_ = false;
    margin_sample_.clear();
}

// ---------------------------------------------------------------------------------------------
// Build

// What build() and build_apart() begin with: the tree emptied, the boxes checked, the margin
// chosen, the id table sized, and for a bulk build the node arrays reserved.
Status DynamicAabbTree::start_build(std::span<const Box> boxes) {
    clear();
    if (Status s = validate_boxes(boxes); !s) return s;
    set_relative_margin(boxes);
    if (boxes.size() > std::size_t(std::numeric_limits<std::int32_t>::max() / 2)) {
        return Error{ErrorCode::limit_exceeded, "dynamic_aabb_tree: too many boxes"};
    }
    leaf_of_.assign(boxes.size(), kNull);
    if (config_.bulk_build && !boxes.empty()) {
        nodes_.reserve(2 * boxes.size() - 1);
        links_.reserve(2 * boxes.size() - 1);
        leaf_data_.reserve(2 * boxes.size() - 1);
    }
    return Status::success();
}

Status DynamicAabbTree::build(std::span<const Box> boxes) {
    if (Status s = start_build(boxes); !s) return s;
    const auto n = static_cast<std::uint32_t>(boxes.size());
    if (!config_.bulk_build) {
        for (std::uint32_t i = 0; i < n; ++i)
            insert_leaf(make_leaf(i, boxes[i]), config_.rotations);
        return Status::success();
    }
    if (n == 0) return Status::success();
    std::vector<BuildItem> items(n);
    for (std::uint32_t i = 0; i < n; ++i) items[i] = build_item(boxes[i], i);
    root_ = build_top_down(boxes, items, kNull);
    return Status::success();
}

Status DynamicAabbTree::build_apart(std::span<const Box> boxes, std::span<const std::uint8_t> apart,
                                    std::vector<Pair>& out) {
    if (apart.size() != boxes.size()) {
        clear();
        return Error{ErrorCode::invalid_argument,
                     "dynamic_aabb_tree: build_apart needs one flag per box"};
    }
    const auto n = static_cast<std::uint32_t>(boxes.size());
    std::uint32_t flagged = 0;
    for (const std::uint8_t f : apart) flagged += f != 0;
    if (flagged == 0 || flagged == n || !config_.bulk_build) {
        if (Status s = build(boxes); !s) return s;
        if (flagged == n) return Status::success();
        const std::size_t from = out.size();
        self_pairs(out);
        if (flagged != 0) {  // built by inserts: the flagged pairs dropped after the walk
            const auto both = [&](const Pair& p) { return apart[p.i] && apart[p.j]; };
            out.erase(std::remove_if(out.begin() + std::ptrdiff_t(from), out.end(), both),
                      out.end());
        }
        return Status::success();
    }
    if (Status s = start_build(boxes); !s) return s;
    // The flagged items first: each part is one contiguous span, in id order.
    std::vector<BuildItem> items(n);
    std::uint32_t front = 0, back = flagged;
    for (std::uint32_t i = 0; i < n; ++i)
        items[apart[i] ? front++ : back++] = build_item(boxes[i], i);
    root_ = allocate_node();
    const std::span<BuildItem> all(items);
    const std::int32_t still = build_top_down(boxes, all.first(flagged), root_);
    const std::int32_t rest = build_top_down(boxes, all.subspan(flagged), root_);
    nodes_[root_].child1 = still;
    nodes_[root_].child2 = rest;
    refit_node(root_);
    if (overlaps(nodes_[still].fat, nodes_[rest].fat)) {
        pair_walk({{rest, kNull}, {still, rest}}, out);
    } else {
        pair_walk({{rest, kNull}}, out);
    }
    return Status::success();
}

// Splits `items` at the median centroid along the longest axis of their centroid bounds;
// nodes are allocated in pre-order, so a subtree is contiguous in memory.
std::int32_t DynamicAabbTree::build_top_down(std::span<const Box> boxes, std::span<BuildItem> items,
                                             std::int32_t parent) {
    if (items.size() == 1) {
        const std::uint32_t id = items[0].id;
        const std::int32_t leaf = make_leaf(id, boxes[id]);
        links_[leaf].parent = parent;
        return leaf;
    }
    const std::int32_t index = allocate_node();
    links_[index].parent = parent;
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
    select_nth(items, mid, axis);
    const std::int32_t c1 = build_top_down(boxes, items.first(mid), index);
    const std::int32_t c2 = build_top_down(boxes, items.subspan(mid), index);
    nodes_[index].child1 = c1;
    nodes_[index].child2 = c2;
    refit_node(index);
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

// Box2D v3's b2FindBestSibling (see the file comment): the node whose new parent with `box`
// adds the least surface area to the tree (the parent's area plus every ancestor's growth),
// by a greedy descent that stops where no node below can beat the best cost found so far.
std::int32_t DynamicAabbTree::find_best_sibling(const Box& box, std::int32_t top) const {
    const Cost area_d = measure(box);
    std::int32_t index = top;
    Cost area = measure(nodes_[top].fat);
    Cost direct = measure(merge(nodes_[top].fat, box));  // the new parent's area
    Cost inherited;  // the growth of the ancestors of `index` below `top`
    std::int32_t best = top;
    Cost best_cost = direct;
    while (!nodes_[index].leaf()) {
        const Node& node = nodes_[index];
        if (!(best_cost < direct + inherited)) {  // a tie goes deeper
            best = index;
            best_cost = direct + inherited;
        }
        inherited = inherited + (direct - area);
        // For each child: its direct cost, and a lower bound of the cost of any sibling
        // below it (its parent grows by its direct cost less its area; the new parent is no
        // smaller than `box`).
        struct Option {
            std::int32_t index;
            Cost area, direct, lower;
            bool leaf;
        };
        Option options[2];
        for (int k = 0; k < 2; ++k) {
            const std::int32_t child = k == 0 ? node.child1 : node.child2;
            const Node& c = nodes_[child];
            Option& o = options[k];
            o.index = child;
            o.leaf = c.leaf();
            o.direct = measure(merge(c.fat, box));
            o.lower = Cost{kInfinity, kInfinity};
            if (o.leaf) {
                if (!(best_cost < o.direct + inherited)) {
                    best = child;
                    best_cost = o.direct + inherited;
                }
                continue;
            }
            o.area = measure(c.fat);
            const Cost shrink = area_d - o.area;
            o.lower = inherited + o.direct +
                      Cost{std::min(shrink.area, 0.0), std::min(shrink.length, 0.0)};
        }
        if (options[0].leaf && options[1].leaf) break;
        if (best_cost < options[0].lower && best_cost < options[1].lower) break;
        double key1 = 0, key2 = 0;
        bool first = options[0].lower < options[1].lower;
        if (options[0].lower == options[1].lower) {
            // Both hold the box, say: the nearer centre decides.
            const Vec3 c = centroid(box), c1 = centroid(nodes_[node.child1].fat),
                       c2 = centroid(nodes_[node.child2].fat);
            for (int a = 0; a < 3; ++a) {
                key1 += (double(c1[a]) - c[a]) * (double(c1[a]) - c[a]);
                key2 += (double(c2[a]) - c[a]) * (double(c2[a]) - c[a]);
            }
            // Then the lower child (identical boxes stay balanced).
            first = key1 < key2 ||
                    (key1 == key2 && links_[node.child1].height < links_[node.child2].height);
        }
        const Option& next = options[first && !options[0].leaf ? 0 : 1];
        index = next.index;
        area = next.area;
        direct = next.direct;
    }
    return best;
}

void DynamicAabbTree::insert_leaf(std::int32_t leaf, bool rotations, std::int32_t top) {
    if (root_ == kNull) {
        root_ = leaf;
        links_[leaf].parent = kNull;
        return;
    }
    const std::int32_t index = find_best_sibling(nodes_[leaf].fat, top == kNull ? root_ : top);
    const std::int32_t sibling = index;
    const std::int32_t old_parent = links_[sibling].parent;
    const std::int32_t new_parent = allocate_node();
    {
        Node& p = nodes_[new_parent];
        links_[new_parent].parent = old_parent;
        p.child1 = sibling;
        p.child2 = leaf;
    }
    relink(old_parent, sibling, new_parent);
    links_[sibling].parent = new_parent;
    links_[leaf].parent = new_parent;
    refit_upwards(new_parent, rotations);
}

void DynamicAabbTree::remove_leaf(std::int32_t leaf) {
    if (leaf == root_) {
        root_ = kNull;
        return;
    }
    const std::int32_t parent = links_[leaf].parent;
    const std::int32_t grand_parent = links_[parent].parent;
    const std::int32_t sibling =
        nodes_[parent].child1 == leaf ? nodes_[parent].child2 : nodes_[parent].child1;
    // The sibling takes the parent's place.
    relink(grand_parent, parent, sibling);
    links_[sibling].parent = grand_parent;
    free_node(parent);
    links_[leaf].parent = kNull;
    refit_upwards(grand_parent, false);  // Box2D v3 does not rotate after a removal either
}

// An internal node's fat box and height from its two children.
void DynamicAabbTree::refit_node(std::int32_t index) {
    Node& node = nodes_[index];
    node.fat = merge(nodes_[node.child1].fat, nodes_[node.child2].fat);
    links_[index].height = 1 + std::max(links_[node.child1].height, links_[node.child2].height);
}

// Recomputes fat boxes and heights from `index` towards the root, rotating (if asked) at each
// node once its children are up to date, and stops above a node that neither changed nor
// rotated: every node above it is as it was.
void DynamicAabbTree::refit_upwards(std::int32_t index, bool rotations) {
    while (index != kNull) {
        const Box fat = nodes_[index].fat;
        const std::int32_t height = links_[index].height;
        refit_node(index);
        const bool rotated = rotations && rotate(index);
        if (!rotated && nodes_[index].fat == fat && links_[index].height == height) break;
        index = links_[index].parent;
    }
}

// Box2D v3's b2RotateNodes at internal node A (see the file comment): of the swaps of a child
// of A (`sunk`) with a grandchild under A's other child (`raised`, whose sibling `kept` stays),
// applies the one whose changed node (the other child, which then holds `sunk` and `kept`)
// shrinks the most, or, where none changes it at all, one that lowers A's height. A's box and
// every other node's are unchanged.
bool DynamicAabbTree::rotate(std::int32_t a) {
    const Node& node_a = nodes_[a];
    if (links_[a].height < 2) return false;
    std::int32_t best_sunk = kNull, best_raised = kNull;
    Cost best_gain;
    std::int32_t best_height = links_[a].height;
    for (const auto& [sunk, other] :
         {std::pair{node_a.child1, node_a.child2}, std::pair{node_a.child2, node_a.child1}}) {
        const Node& o = nodes_[other];
        if (o.leaf()) continue;
        const Cost before = measure(o.fat);
        for (const auto& [raised, kept] :
             {std::pair{o.child1, o.child2}, std::pair{o.child2, o.child1}}) {
            const Cost gain = before - measure(merge(nodes_[sunk].fat, nodes_[kept].fat));
            const std::int32_t other_height =
                1 + std::max(links_[sunk].height, links_[kept].height);
            const std::int32_t height = 1 + std::max(links_[raised].height, other_height);
            if (best_gain < gain || (gain == best_gain && height < best_height)) {
                best_gain = gain;
                best_height = height;
                best_sunk = sunk;
                best_raised = raised;
            }
        }
    }
    if (best_sunk == kNull) return false;
    const std::int32_t other = links_[best_raised].parent;
    relink(a, best_sunk, best_raised);
    relink(other, best_raised, best_sunk);
    links_[best_raised].parent = a;
    links_[best_sunk].parent = other;
    refit_node(other);
    refit_node(a);
    return true;
}

Status DynamicAabbTree::insert(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    if (leaf_of(id) != kNull) {
        return invalid("insert of id " + std::to_string(id) + ", already present", id);
    }
    if (leaf_count_ >= std::size_t(std::numeric_limits<std::int32_t>::max() / 2)) {
        return Error{ErrorCode::limit_exceeded, "dynamic_aabb_tree: too many boxes", id};
    }
    if (!margin_chosen_) {
        margin_sample_.clear();
        sampling_margin_ = config_.margin_is_relative;
        if (!sampling_margin_) set_relative_margin(std::span<const Box>(&box, 1));
    }
    if (sampling_margin_) sample_margin(box);
    insert_leaf(make_leaf(id, box), config_.rotations);
    return Status::success();
}

Status DynamicAabbTree::remove(std::uint32_t id) {
    const std::int32_t leaf = leaf_of(id);
    if (leaf == kNull) return invalid("remove of id " + std::to_string(id) + ", not present", id);
    unmap_id(id);
    --leaf_count_;
    remove_leaf(leaf);
    free_node(leaf);
    return Status::success();
}

Status DynamicAabbTree::move(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    const std::int32_t leaf = leaf_of(id);
    if (leaf == kNull) return invalid("move of id " + std::to_string(id) + ", not present", id);
    leaf_data_[leaf].tight = box;
    if (contains_box(nodes_[leaf].fat, box)) return Status::success();
    ++reinserts_;
    const Box fat = fatten(box);
    // Inside its parent's box the leaf's place is as good as any: it takes the new box there.
    std::int32_t top = links_[leaf].parent;
    if (top != kNull && contains_box(nodes_[top].fat, fat)) {
        nodes_[leaf].fat = fat;
        refit_upwards(top, false);
        return Status::success();
    }
    // Else it is re-inserted below the lowest ancestor whose box holds the new one (the root
    // when none does): every node above that one grows alike wherever below it the leaf goes.
    if (top != kNull) top = links_[top].parent;  // the parent goes with the leaf
    while (top != kNull && !contains_box(nodes_[top].fat, fat)) top = links_[top].parent;
    remove_leaf(leaf);
    nodes_[leaf].fat = fat;
    insert_leaf(leaf, config_.rotations, top);
    note_reinsert();
    return Status::success();
}

// Re-insertions take nodes wherever the free list has them, so that a tree whose leaves all
// moved a few times has its nodes scattered in memory and a descent misses the cache at most
// nodes it reads. Once as many leaves were re-inserted as the tree holds, the nodes are laid
// out again in depth-first order (O(n), so O(1) per re-insertion): a subtree lies in one run
// of memory, the first child right after its parent. The tree's shape does not change.
void DynamicAabbTree::note_reinsert() {
    if (++reinserts_since_layout_ < std::max<std::size_t>(leaf_count_, 1024)) return;
    relayout();
}

void DynamicAabbTree::relayout() {
    reinserts_since_layout_ = 0;
    if (root_ == kNull) return;
    std::vector<std::int32_t> order;  // old indices, depth first
    order.reserve(2 * leaf_count_);
    std::vector<std::int32_t> stack{root_};
    while (!stack.empty()) {
        const std::int32_t index = stack.back();
        stack.pop_back();
        order.push_back(index);
        const Node& node = nodes_[index];
        if (node.leaf()) continue;
        stack.push_back(node.child2);
        stack.push_back(node.child1);
    }
    std::vector<std::int32_t> new_index(nodes_.size(), kNull);
    for (std::size_t k = 0; k < order.size(); ++k)
        new_index[std::size_t(order[k])] = static_cast<std::int32_t>(k);
    const auto renamed = [&](std::int32_t i) { return i == kNull ? kNull : new_index[i]; };
    std::vector<Node> nodes(order.size());
    std::vector<Link> links(order.size());
    std::vector<LeafData> leaves(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        const std::int32_t old = order[k];
        Node node = nodes_[old];
        if (!node.leaf()) {  // a leaf's child2 is its id
            node.child1 = renamed(node.child1);
            node.child2 = renamed(node.child2);
        }
        nodes[k] = node;
        links[k] = {renamed(links_[old].parent), links_[old].height};
        leaves[k] = leaf_data_[old];
        if (node.leaf()) map_id(leaves[k].id, static_cast<std::int32_t>(k));
    }
    nodes_.swap(nodes);
    links_.swap(links);
    leaf_data_.swap(leaves);
    root_ = 0;
    free_list_ = kNull;
}

Status DynamicAabbTree::refit_all(std::span<const Box> boxes) {
    if (boxes.size() != leaf_count_) {
        return invalid("refit_all of " + std::to_string(boxes.size()) + " boxes, but " +
                       std::to_string(leaf_count_) + " are in the tree");
    }
    if (Status s = validate_boxes(boxes); !s) return s;
    for (std::uint32_t id = 0; id < boxes.size(); ++id) {
        if (leaf_of(id) == kNull) {
            return invalid("refit_all: id " + std::to_string(id) + " is not in the tree", id);
        }
    }
    if (root_ == kNull) return Status::success();
    for (std::uint32_t id = 0; id < boxes.size(); ++id) {
        const std::int32_t leaf = leaf_of(id);
        leaf_data_[leaf].tight = boxes[id];
        nodes_[leaf].fat = fatten(boxes[id]);
    }
    // Internal nodes in pre-order, then refitted in reverse: every child before its parent.
    std::vector<std::int32_t> order;
    order.reserve(leaf_count_);
    std::vector<std::int32_t> stack{root_};
    while (!stack.empty()) {
        const std::int32_t i = stack.back();
        stack.pop_back();
        if (nodes_[i].leaf()) continue;
        order.push_back(i);
        stack.push_back(nodes_[i].child1);
        stack.push_back(nodes_[i].child2);
    }
    for (auto i = order.rbegin(); i != order.rend(); ++i) refit_node(*i);
    return Status::success();
}

// ---------------------------------------------------------------------------------------------
// Queries

void DynamicAabbTree::self_pairs(std::vector<Pair>& out) const {
    if (root_ == kNull) return;
    pair_walk({{root_, kNull}}, out);
}

// (a, kNull): pairs inside subtree a. (a, b): pairs between disjoint subtrees a and b, pushed
// only when their fat boxes overlap.
void DynamicAabbTree::pair_walk(std::initializer_list<std::pair<std::int32_t, std::int32_t>> start,
                                std::vector<Pair>& out) const {
    std::vector<std::pair<std::int32_t, std::int32_t>> stack;
    stack.reserve(256);
    stack.insert(stack.end(), start.begin(), start.end());
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
            if (!(config_.margin > 0)) {  // fat boxes are the tight ones, found overlapping
                report_pair(out, static_cast<std::uint32_t>(na.child2),
                            static_cast<std::uint32_t>(nb.child2));
                continue;
            }
            const LeafData& da = leaf_data_[a];
            const LeafData& db = leaf_data_[b];
            if (overlaps(da.tight, db.tight)) {
                report_pair(out, da.id, db.id);
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
            const Node& node = nodes_[child];
            if (!overlaps(node.fat, other.fat)) continue;
            if (!node.leaf()) {
                __builtin_prefetch(&nodes_[node.child1]);
                __builtin_prefetch(&nodes_[node.child2]);
            }
            stack.emplace_back(child, other_index);
        }
    }
}

void DynamicAabbTree::query_boxes(
    std::span<const Box> regions, std::vector<std::uint32_t>& out,
    std::vector<std::pair<std::uint32_t, std::uint32_t>>& ranges) const {
    out.clear();
    ranges.assign(regions.size(), {0, 0});
    constexpr std::int32_t kStack = 64;
    if (root_ == kNull || regions.empty()) return;
    if (links_[root_].height >= kStack) {  // a degenerate tree: one region at a time
        for (std::size_t r = 0; r < regions.size(); ++r) {
            const std::size_t from = out.size();
            query_box(regions[r], out);
            ranges[r] = {static_cast<std::uint32_t>(from),
                         static_cast<std::uint32_t>(out.size() - from)};
        }
        return;
    }
    // Descents in flight: each its region, stack and found ids (appended to `out` when done).
    constexpr std::size_t kLanes = 8;
    struct Lane {
        std::size_t region = 0;
        std::int32_t top = 0;  // 0: idle
        std::int32_t stack[kStack];
        std::vector<std::uint32_t> found;
    };
    Lane lanes[kLanes];
    std::size_t next = 0, busy = 0;
    std::uint64_t nodes = 0, leaves = 0;
    const auto start = [&](Lane& lane) {
        lane.region = next++;
        lane.top = 1;
        lane.stack[0] = root_;
        lane.found.clear();
        ++busy;
    };
    for (Lane& lane : lanes)
        if (next < regions.size()) start(lane);
    while (busy > 0) {
        for (Lane& lane : lanes) {
            if (lane.top == 0) continue;
            const Box& region = regions[lane.region];
            const std::int32_t index = lane.stack[--lane.top];
            const Node& node = nodes_[index];
            if (overlaps(node.fat, region)) {
                if (node.leaf()) {
                    ++leaves;
                    report_leaf(index, region, lane.found);
                } else {
                    ++nodes;
                    __builtin_prefetch(&nodes_[node.child1]);
                    __builtin_prefetch(&nodes_[node.child2]);
                    lane.stack[lane.top++] = node.child1;
                    lane.stack[lane.top++] = node.child2;
                }
            }
            if (lane.top > 0) continue;
            ranges[lane.region] = {static_cast<std::uint32_t>(out.size()),
                                   static_cast<std::uint32_t>(lane.found.size())};
            out.insert(out.end(), lane.found.begin(), lane.found.end());
            --busy;
            if (next < regions.size()) start(lane);
        }
    }
    stats_.nodes_visited += nodes;
    stats_.leaves_visited += leaves;
    stats_.box_tests += leaves;
}

void DynamicAabbTree::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    if (root_ == kNull) return;
    // A depth-first stack never holds more than height + 1 nodes: on the call stack when that
    // fits (no allocation per query), else the shared descent's.
    constexpr std::int32_t kStack = 64;
    if (links_[root_].height < kStack) {
        std::int32_t stack[kStack];
        std::int32_t top = 0;
        stack[top++] = root_;
        std::uint64_t nodes = 0, leaves = 0;
        while (top > 0) {
            const std::int32_t index = stack[--top];
            const Node& node = nodes_[index];
            if (!overlaps(node.fat, region)) continue;
            if (node.leaf()) {
                ++leaves;
                report_leaf(index, region, out);
                continue;
            }
            ++nodes;
            // Both children are read next, one after the other: ask for the second now.
            __builtin_prefetch(&nodes_[node.child1]);
            stack[top++] = node.child1;
            stack[top++] = node.child2;
        }
        stats_.nodes_visited += nodes;
        stats_.leaves_visited += leaves;
        stats_.box_tests += leaves;
        return;
    }
    detail::region_descent(
        root_, stats_, [&](std::int32_t i) { return overlaps(nodes_[i].fat, region); },
        [&](std::int32_t i) { return nodes_[i].leaf(); },
        [&](std::int32_t i) {
            ++stats_.box_tests;
            report_leaf(i, region, out);
        },
        [&](std::int32_t i) {
            return std::pair{nodes_[i].child1, nodes_[i].child2};
        });
}

void DynamicAabbTree::query_ray_candidates(const Ray& ray, const Vec3& lo, const Vec3& hi,
                                           std::vector<std::uint32_t>& out) const {
    if (root_ == kNull) return;
    auto touches = [&](const Box& b) {
        const Box grown{{b.min.x + lo.x, b.min.y + lo.y, b.min.z + lo.z},
                        {b.max.x + hi.x, b.max.y + hi.y, b.max.z + hi.z}};
        float t_near = 0, t_far = ray.tmax;
        return ray_box_slabs(ray, grown, t_near, t_far) && t_near <= t_far;
    };
    std::vector<std::int32_t> stack{root_};
    while (!stack.empty()) {
        const std::int32_t index = stack.back();
        stack.pop_back();
        const Node& node = nodes_[index];
        if (!touches(node.fat)) continue;
        if (node.leaf()) {
            ++stats_.leaves_visited;
            ++stats_.box_tests;
            if (touches(leaf_data_[index].tight)) out.push_back(leaf_data_[index].id);
            continue;
        }
        ++stats_.nodes_visited;
        stack.push_back(node.child1);
        stack.push_back(node.child2);
    }
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
            keep_closer(best, leaf_data_[i].id, ray_box_entry(ray, leaf_data_[i].tight));
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
            q.push_box(point_box_distance(p, leaf_data_[index].tight), leaf_data_[index].id);
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
    return root_ == kNull ? 0 : links_[root_].height;
}

std::size_t DynamicAabbTree::size() const {
    return leaf_count_;
}

Status DynamicAabbTree::validate() const {
    // Free nodes have height -1 and link the free list through `parent`.
    const auto total = static_cast<std::int64_t>(nodes_.size());
    const Result<std::int64_t> free_count = count_free_list(
        free_list_, total, [&](std::int32_t i) { return links_[i].parent; },
        [&](std::int32_t i) { return links_[i].height == -1; });
    if (!free_count) return free_count.error();
    const auto node_name = [](std::int32_t i) { return "node " + std::to_string(i); };
    const auto in_range = [&](std::int32_t i) { return i >= 0 && i < total; };
    for (const auto& entry : far_leaf_of_) {
        if (entry.first < leaf_of_.size()) {
            return broken("id " + std::to_string(entry.first) + " hashed but within the id table");
        }
    }
    const std::size_t mapped =
        far_leaf_of_.size() +
        static_cast<std::size_t>(std::count_if(leaf_of_.begin(), leaf_of_.end(),
                                               [](std::int32_t i) { return i != kNull; }));
    if (mapped != leaf_count_) {
        return broken(std::to_string(mapped) + " ids mapped but size " +
                      std::to_string(leaf_count_));
    }
    if (root_ == kNull) {
        if (mapped != 0) return broken("no root but ids are mapped");
        if (*free_count != total) return broken("empty tree with nodes in use");
        return Status::success();
    }
    if (!in_range(root_)) return broken("root outside the pool");
    if (links_[root_].parent != kNull) return broken("root has a parent");

    std::size_t leaves = 0;
    const auto is_free = [&](std::int32_t i) { return links_[i].height < 0; };
    const auto check = [&](std::int32_t i, std::vector<std::int32_t>& stack) -> Status {
        const Node& node = nodes_[i];
        if (node.leaf()) {
            if (links_[i].height != 0) return broken(node_name(i) + " leaf height not 0");
            const LeafData& data = leaf_data_[i];
            if (node.child2 != static_cast<std::int32_t>(data.id))
                return broken(node_name(i) + " does not hold its id " + std::to_string(data.id));
            if (Status s = validate_box(data.tight, data.id); !s) return s;
            if (!contains_box(node.fat, data.tight)) {
                return broken("fat box of id " + std::to_string(data.id) +
                              " does not contain its box");
            }
            if (leaf_of(data.id) != i) {
                return broken("id " + std::to_string(data.id) + " not mapped to " + node_name(i));
            }
            ++leaves;
            return Status::success();
        }
        for (const std::int32_t child : {node.child1, node.child2}) {
            if (!in_range(child)) return broken(node_name(i) + " child out of range");
            if (links_[child].parent != i) {
                return broken(node_name(child) + " parent link is not " + node_name(i));
            }
            if (!contains_box(node.fat, nodes_[child].fat)) {
                return broken(node_name(i) + " fat box does not contain child " + node_name(child));
            }
            stack.push_back(child);
        }
        if (links_[i].height !=
            1 + std::max(links_[node.child1].height, links_[node.child2].height)) {
            return broken(node_name(i) + " height inconsistent with its children");
        }
        return Status::success();
    };
    if (Status s = walk_pool(root_, total, *free_count, is_free, check); !s) return s;
    if (leaves == mapped) return Status::success();
    return broken(std::to_string(leaves) + " leaves but " + std::to_string(mapped) + " ids mapped");
}

}  // namespace broadphase

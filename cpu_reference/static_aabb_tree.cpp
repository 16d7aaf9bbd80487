// Static AABB tree after PhysX's AABBTree and AABBPruner (PhysX SDK 3.4, GeomUtils
// GuAABBTree / SceneQuery SqAABBTree, SqAABBPruner), as described in Hakuya's study notes
// "「Scene Queries」AABBTree —— 上" (docs/references.md):
//
// - Build (buildInit / _buildHierarchy / subdivide): centroids are cached; a node over more than
//   leaf_limit boxes is split along the axis of largest centroid variance at the mean centroid,
//   the larger centroids first ("大放左边"); when one side would be empty the node is cut in half
//   by index. Only the index array is permuted, never the boxes (the "二级索引"). The two children
//   of a node are allocated together, so the right child is the left one + 1.
// - buildEnd / flatten: build nodes are copied into one array of 28-byte runtime nodes whose word
//   packs either (first index, count, leaf bit) or (left child, 0). The flattening walks the
//   build tree in one fixed order, so the one-shot build (depth first) and the progressive build
//   (breadth first, PhysX's FIFOStack) give identical arrays.
// - progressiveBuild: nodes are popped from a FIFO and subdivided until the step's work limit
//   (primitives processed) is reached; the last step flattens and installs the tree.
// - Refit: mParentIndices, mRefitBitmask and mRefitHighestSetWord; marking walks to the root and
//   stops at an already marked node; refit visits set bits from the highest word down, so
//   children (which have larger indices) are refitted before their parents.
// - Removal (AABBTreeUpdateMap::invalidate and the pruner's swap-with-last): the box leaves its
//   leaf's range (the leaf's last entry takes its place), then the last slot moves into its slot.
// - mergeTree: the fresh root is attached beside the deepest live node containing it. A leaf
//   target becomes internal with (copy of the leaf, fresh root) appended at the end; any other
//   target is handled by laying the array out again with the splice, which keeps the "parents
//   before children" order (PhysX inserts in the middle and shifts, also a full copy).
#include "static_aabb_tree.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "best_first.hpp"
#include "broadphase/scene.hpp"
#include "tree_descent.hpp"

namespace broadphase {
namespace {

constexpr std::uint32_t kNone = StaticAabbTree::kNone;
constexpr float kHuge = std::numeric_limits<float>::max();
constexpr Box kEmptyBox{{kHuge, kHuge, kHuge}, {-kHuge, -kHuge, -kHuge}};

bool is_empty(const Box& b) {
    return b.min.x > b.max.x || b.min.y > b.max.y || b.min.z > b.max.z;
}

}  // namespace

StaticAabbTree::StaticAabbTree(const StaticAabbTree& other)
    : config_(other.config_),
      nodes_(other.nodes_),
      parents_(other.parents_),
      indices_(other.indices_),
      boxes_(other.boxes_),
      ids_(other.ids_),
      position_of_(other.position_of_),
      leaf_of_slot_(other.leaf_of_slot_),
      slot_of_(other.slot_of_),
      dirty_(other.dirty_),
      highest_dirty_word_(other.highest_dirty_word_),
      pending_(other.pending_ ? std::make_unique<BuildState>(*other.pending_) : nullptr) {}

StaticAabbTree& StaticAabbTree::operator=(const StaticAabbTree& other) {
    if (this != &other) *this = StaticAabbTree(other);
    return *this;
}

void StaticAabbTree::clear() {
    nodes_.clear();
    parents_.clear();
    indices_.clear();
    boxes_.clear();
    ids_.clear();
    position_of_.clear();
    leaf_of_slot_.clear();
    slot_of_.clear();
    dirty_.clear();
    highest_dirty_word_ = -1;
}

// ---------------------------------------------------------------------------------------------
// Build

Status StaticAabbTree::init_build(std::span<const Box> boxes, std::span<const std::uint32_t> ids,
                                  BuildState& state) const {
    if (config_.leaf_limit < 1 || config_.leaf_limit > 15) {
        return invalid("leaf_limit must be in 1 .. 15");
    }
    if (Status s = validate_boxes(boxes); !s) return s;
    if (!ids.empty() && ids.size() != boxes.size()) {
        return invalid("ids and boxes differ in length");
    }
    if (boxes.size() >= kMaxPositions) {
        return Error{ErrorCode::limit_exceeded, "static_aabb_tree: more than 2^27 - 1 boxes"};
    }
    const auto n = static_cast<std::uint32_t>(boxes.size());
    state = BuildState{};
    state.boxes.assign(boxes.begin(), boxes.end());
    state.ids.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) state.ids[i] = ids.empty() ? i : ids[i];
    if (!ids.empty()) {
        std::vector<std::uint32_t> sorted = state.ids;
        std::sort(sorted.begin(), sorted.end());
        const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
        if (dup != sorted.end()) return invalid("duplicate id " + std::to_string(*dup));
    }
    state.items.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        BuildItem& item = state.items[i];
        for (int a = 0; a < 3; ++a) {
            item.centroid[a] = 0.5f * boxes[i].min[a] + 0.5f * boxes[i].max[a];
        }
        item.slot = i;
    }
    if (n > 0) {
        state.nodes.reserve(2 * std::size_t{n});
        state.nodes.push_back(BuildNode{0, n, 0});
    }
    return Status::success();
}

// PhysX's AABBTreeBuildNode::subdivide: a leaf, or the variance split. (PhysX also computes
// the node's bounds here; they are computed bottom-up in install() instead, so that splitting
// reads only the centroids, in order.)
void StaticAabbTree::subdivide(BuildState& state, std::uint32_t node_index) const {
    const std::uint32_t start = state.nodes[node_index].start;
    const std::uint32_t count = state.nodes[node_index].count;
    if (count <= config_.leaf_limit) return;
    BuildItem* const items = state.items.data() + start;

    // Mean and variance of the centroids, shifted by the first one against cancellation far
    // from the origin.
    double shift[3], sum[3] = {0, 0, 0}, sum_sq[3] = {0, 0, 0};
    for (int a = 0; a < 3; ++a) shift[a] = items[0].centroid[a];
    for (std::uint32_t i = 0; i < count; ++i) {
        for (int a = 0; a < 3; ++a) {
            const double d = items[i].centroid[a] - shift[a];
            sum[a] += d;
            sum_sq[a] += d * d;
        }
    }
    double variance[3];
    for (int a = 0; a < 3; ++a) variance[a] = sum_sq[a] - sum[a] * sum[a] / count;
    int axis = 0;
    for (int a = 1; a < 3; ++a) {
        if (variance[a] > variance[axis]) axis = a;
    }
    const double split = shift[axis] + sum[axis] / count;
    // PhysX's in-place pass: centroids above the mean are swapped to the front.
    std::uint32_t positive = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
        if (double(items[i].centroid[axis]) > split) std::swap(items[i], items[positive++]);
    }
    if (positive == 0 || positive == count) positive = count / 2;  // "暴力的对半分"

    const auto child = static_cast<std::uint32_t>(state.nodes.size());
    state.nodes[node_index].child = child;
    state.nodes.push_back(BuildNode{start, positive, 0});
    state.nodes.push_back(BuildNode{start + positive, count - positive, 0});
}

// buildEnd: flattens the build nodes into runtime nodes (pre-order, sibling pairs adjacent) and
// takes over the boxes, ids and index array.
void StaticAabbTree::install(BuildState& state) {
    clear();
    boxes_ = std::move(state.boxes);
    ids_ = std::move(state.ids);
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    indices_.resize(n);
    for (std::uint32_t p = 0; p < n; ++p) indices_[p] = state.items[p].slot;
    slot_of_.reserve(n);
    for (std::uint32_t s = 0; s < n; ++s) slot_of_.emplace(ids_[s], s);
    position_of_.resize(n);
    for (std::uint32_t p = 0; p < n; ++p) position_of_[indices_[p]] = p;
    if (n > 0) {
        nodes_.resize(1);
        parents_.assign(1, kNone);
        nodes_.reserve(state.nodes.size());
        parents_.reserve(state.nodes.size());
        std::vector<std::pair<std::uint32_t, std::uint32_t>> stack{{0u, 0u}};  // (build, runtime)
        while (!stack.empty()) {
            const auto [b, r] = stack.back();
            stack.pop_back();
            const BuildNode& bn = state.nodes[b];
            if (bn.child == 0) {
                nodes_[r] = RuntimeNode::leaf(kEmptyBox, bn.start, bn.count);
                nodes_[r].bounds = leaf_bounds(nodes_[r]);
                continue;
            }
            const auto c = static_cast<std::uint32_t>(nodes_.size());
            nodes_[r] = RuntimeNode::internal(kEmptyBox, c);
            nodes_.resize(c + 2);
            parents_.push_back(r);
            parents_.push_back(r);
            stack.emplace_back(bn.child + 1, c + 1);
            stack.emplace_back(bn.child, c);
        }
        // Bounds bottom-up: children come after their parents.
        for (std::size_t i = nodes_.size(); i-- > 0;) {
            if (!nodes_[i].is_leaf()) refit_node(static_cast<std::uint32_t>(i));
        }
    }
    dirty_.assign((nodes_.size() + 31) / 32, 0u);
    rebuild_leaf_map();
    state = BuildState{};
}

void StaticAabbTree::rebuild_leaf_map() {
    leaf_of_slot_.assign(boxes_.size(), kNone);
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
        const RuntimeNode& node = nodes_[i];
        if (!node.is_leaf()) continue;
        for (std::uint32_t p = node.first(); p < node.first() + node.count(); ++p) {
            leaf_of_slot_[indices_[p]] = i;
        }
    }
}

Status StaticAabbTree::build(std::span<const Box> boxes) {
    return build(boxes, {});
}

Status StaticAabbTree::build(std::span<const Box> boxes, std::span<const std::uint32_t> ids) {
    pending_.reset();
    clear();
    BuildState state;
    if (Status s = init_build(boxes, ids, state); !s) return s;
    // Depth first (PhysX's recursive _buildHierarchy, here with an explicit stack).
    std::vector<std::uint32_t> stack;
    if (!state.nodes.empty()) stack.push_back(0);
    while (!stack.empty()) {
        const std::uint32_t node = stack.back();
        stack.pop_back();
        subdivide(state, node);
        if (const std::uint32_t c = state.nodes[node].child; c != 0) {
            stack.push_back(c + 1);
            stack.push_back(c);
        }
    }
    install(state);
    return Status::success();
}

Status StaticAabbTree::begin_progressive_build(std::span<const Box> boxes,
                                               std::span<const std::uint32_t> ids) {
    auto state = std::make_unique<BuildState>();
    if (Status s = init_build(boxes, ids, *state); !s) return s;
    if (!state->nodes.empty()) state->fifo.push_back(0);
    pending_ = std::move(state);
    return Status::success();
}

bool StaticAabbTree::step_progressive_build() {
    if (!pending_) return true;
    BuildState& state = *pending_;
    std::uint64_t work = 0;
    const std::uint64_t limit = std::max<std::uint32_t>(1, config_.progressive_work_per_step);
    while (work < limit && state.fifo_head < state.fifo.size()) {
        const std::uint32_t node = state.fifo[state.fifo_head++];
        subdivide(state, node);
        work += state.nodes[node].count;
        if (const std::uint32_t c = state.nodes[node].child; c != 0) {
            state.fifo.push_back(c);
            state.fifo.push_back(c + 1);
        }
    }
    if (state.fifo_head < state.fifo.size()) return false;
    install(state);
    pending_.reset();
    return true;
}

// ---------------------------------------------------------------------------------------------
// Refit

void StaticAabbTree::mark_node(std::uint32_t node) {
    while (node != kNone) {
        std::uint32_t& word = dirty_[node >> 5];
        const std::uint32_t bit = 1u << (node & 31);
        if (word & bit) return;  // its ancestors are marked already
        word |= bit;
        highest_dirty_word_ = std::max<std::int64_t>(highest_dirty_word_, node >> 5);
        node = parents_[node];
    }
}

Box StaticAabbTree::leaf_bounds(const RuntimeNode& leaf) const {
    Box b = kEmptyBox;
    for (std::uint32_t p = leaf.first(); p < leaf.first() + leaf.count(); ++p) {
        b = broadphase::merge(b, boxes_[indices_[p]]);
    }
    return b;
}

void StaticAabbTree::refit_node(std::uint32_t node) {
    RuntimeNode& n = nodes_[node];
    if (n.is_leaf()) {
        n.bounds = leaf_bounds(n);
    } else {
        n.bounds = broadphase::merge(nodes_[n.left()].bounds, nodes_[n.left() + 1].bounds);
    }
}

Status StaticAabbTree::mark_dirty(std::uint32_t id, const Box& new_box) {
    if (Status s = validate_box(new_box, id); !s) return s;
    const auto it = slot_of_.find(id);
    if (it == slot_of_.end()) {
        return invalid("id " + std::to_string(id) + " not present", id);
    }
    boxes_[it->second] = new_box;
    mark_node(leaf_of_slot_[it->second]);
    return Status::success();
}

void StaticAabbTree::refit() {
    for (std::int64_t w = highest_dirty_word_; w >= 0; --w) {
        std::uint32_t word = dirty_[w];
        while (word != 0) {
            const int bit = 31 - std::countl_zero(word);
            refit_node(static_cast<std::uint32_t>(w * 32 + bit));
            word &= ~(1u << bit);
        }
        dirty_[w] = 0;
    }
    highest_dirty_word_ = -1;
}

// ---------------------------------------------------------------------------------------------
// Insert, remove, move, merge

Status StaticAabbTree::insert(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    if (slot_of_.count(id) != 0) {
        return invalid("insert of id " + std::to_string(id) + ", already present", id);
    }
    StaticAabbTree one(config_);
    if (Status s = one.build(std::span<const Box>(&box, 1), std::span<const std::uint32_t>(&id, 1));
        !s) {
        return s;
    }
    return merge(one);
}

Status StaticAabbTree::move(std::uint32_t id, const Box& box) {
    if (Status s = mark_dirty(id, box); !s) return s;
    refit();
    return Status::success();
}

Status StaticAabbTree::remove(std::uint32_t id) {
    const auto it = slot_of_.find(id);
    if (it == slot_of_.end()) {
        return invalid("remove of id " + std::to_string(id) + ", not present", id);
    }
    if (boxes_.size() == 1) {
        clear();
        return Status::success();
    }
    const std::uint32_t slot = it->second;
    slot_of_.erase(it);

    // Out of its leaf: the leaf's last entry takes its position, the range shrinks by one.
    const std::uint32_t leaf = leaf_of_slot_[slot];
    RuntimeNode& node = nodes_[leaf];
    const std::uint32_t pos = position_of_[slot];
    const std::uint32_t last_pos = node.first() + node.count() - 1;
    const std::uint32_t moved = indices_[last_pos];
    indices_[pos] = moved;
    position_of_[moved] = pos;
    indices_[last_pos] = kNone;
    node = RuntimeNode::leaf(node.bounds, node.first(), node.count() - 1);
    mark_node(leaf);

    // Swap-with-last: the last slot's box, id and links move into the freed slot.
    const auto last = static_cast<std::uint32_t>(boxes_.size() - 1);
    if (slot != last) {
        boxes_[slot] = boxes_[last];
        ids_[slot] = ids_[last];
        position_of_[slot] = position_of_[last];
        leaf_of_slot_[slot] = leaf_of_slot_[last];
        indices_[position_of_[slot]] = slot;
        slot_of_[ids_[slot]] = slot;
    }
    boxes_.pop_back();
    ids_.pop_back();
    position_of_.pop_back();
    leaf_of_slot_.pop_back();
    refit();
    return Status::success();
}

Status StaticAabbTree::check_merge(const StaticAabbTree& fresh) const {
    if (&fresh == this) return invalid("merge of a tree into itself");
    if (fresh.highest_dirty_word_ >= 0) return invalid("merge of a tree pending refit");
    if (fresh.config_.leaf_limit > config_.leaf_limit) {
        return invalid("merge of a tree with a larger leaf_limit");
    }
    if (fresh.size() == 0) return Status::success();
    for (const std::uint32_t id : fresh.ids_) {
        if (slot_of_.count(id) != 0) {
            return invalid("merge: id " + std::to_string(id) + " already present", id);
        }
    }
    if (std::size_t{indices_.size()} + fresh.indices_.size() >= kMaxPositions) {
        return Error{ErrorCode::limit_exceeded, "static_aabb_tree: index array over 2^27"};
    }
    return Status::success();
}

Status StaticAabbTree::merge(const StaticAabbTree& fresh) {
    if (Status s = check_merge(fresh); !s || fresh.size() == 0) return s;
    refit();
    if (size() == 0) {
        const Config config = config_;
        std::unique_ptr<BuildState> pending = std::move(pending_);
        *this = fresh;
        config_ = config;
        pending_ = std::move(pending);
        return Status::success();
    }
    const auto slot_offset = static_cast<std::uint32_t>(boxes_.size());
    const auto pos_offset = static_cast<std::uint32_t>(indices_.size());
    append_slots(fresh, slot_offset, pos_offset);
    const Box fresh_bounds = fresh.nodes_[0].bounds;
    std::uint32_t target = merge_target(fresh_bounds);
    if (nodes_[target].is_leaf()) {
        attach_beside_leaf(fresh, target, pos_offset);
    } else {
        target = lay_out_with(fresh, target, pos_offset);
    }
    for (std::uint32_t i = target; i != kNone; i = parents_[i]) {
        nodes_[i].bounds = broadphase::merge(nodes_[i].bounds, fresh_bounds);
    }
    dirty_.assign((nodes_.size() + 31) / 32, 0u);
    return Status::success();
}

void StaticAabbTree::append_slots(const StaticAabbTree& fresh, std::uint32_t slot_offset,
                                  std::uint32_t pos_offset) {
    boxes_.insert(boxes_.end(), fresh.boxes_.begin(), fresh.boxes_.end());
    ids_.insert(ids_.end(), fresh.ids_.begin(), fresh.ids_.end());
    for (std::uint32_t s = 0; s < fresh.ids_.size(); ++s) {
        slot_of_.emplace(fresh.ids_[s], slot_offset + s);
        position_of_.push_back(fresh.position_of_[s] + pos_offset);
    }
    for (const std::uint32_t slot : fresh.indices_) {
        indices_.push_back(slot == kNone ? kNone : slot + slot_offset);
    }
}

std::uint32_t StaticAabbTree::merge_target(const Box& fresh_bounds) const {
    std::uint32_t target = 0;
    if (!contains_box(nodes_[0].bounds, fresh_bounds)) return target;
    while (!nodes_[target].is_leaf()) {
        const std::uint32_t l = nodes_[target].left();
        if (contains_box(nodes_[l].bounds, fresh_bounds)) {
            target = l;
        } else if (contains_box(nodes_[l + 1].bounds, fresh_bounds)) {
            target = l + 1;
        } else {
            break;
        }
    }
    return target;
}

StaticAabbTree::RuntimeNode StaticAabbTree::shifted(const RuntimeNode& node,
                                                    std::uint32_t pos_offset,
                                                    std::uint32_t child_base) {
    return node.is_leaf() ? RuntimeNode::leaf(node.bounds, node.first() + pos_offset, node.count())
                          : RuntimeNode::internal(node.bounds, node.left() + child_base);
}

void StaticAabbTree::attach_beside_leaf(const StaticAabbTree& fresh, std::uint32_t target,
                                        std::uint32_t pos_offset) {
    // Append (copy of the leaf, fresh root, rest of the fresh tree) at the end.
    const auto copy = static_cast<std::uint32_t>(nodes_.size());
    const std::uint32_t base = copy + 1;  // fresh node j lands at base + j
    nodes_.push_back(nodes_[target]);
    parents_.push_back(target);
    for (std::uint32_t j = 0; j < fresh.nodes_.size(); ++j) {
        nodes_.push_back(shifted(fresh.nodes_[j], pos_offset, base));
        parents_.push_back(j == 0 ? target : fresh.parents_[j] + base);
    }
    nodes_[target] = RuntimeNode::internal(nodes_[target].bounds, copy);
    for (std::uint32_t p = nodes_[copy].first(); p < nodes_[copy].first() + nodes_[copy].count();
         ++p) {
        leaf_of_slot_[indices_[p]] = copy;
    }
    for (std::uint32_t s = 0; s < fresh.ids_.size(); ++s) {
        leaf_of_slot_.push_back(fresh.leaf_of_slot_[s] + base);
    }
}

std::uint32_t StaticAabbTree::lay_out_with(const StaticAabbTree& fresh, std::uint32_t target,
                                           std::uint32_t pos_offset) {
    // Lay the array out again: the target becomes (copy of target, fresh root).
    std::vector<RuntimeNode> out(1);
    std::vector<std::uint32_t> out_parents(1, kNone);
    out.reserve(nodes_.size() + fresh.nodes_.size() + 2);
    out_parents.reserve(out.capacity());
    struct Item {
        std::uint32_t dst, src;
        bool from_fresh, splice;
    };
    std::vector<Item> stack{{0, 0, false, true}};
    std::uint32_t new_target = 0;
    while (!stack.empty()) {
        const Item it = stack.back();
        stack.pop_back();
        const auto c = static_cast<std::uint32_t>(out.size());
        if (!it.from_fresh && it.splice && it.src == target) {
            new_target = it.dst;
            out[it.dst] = RuntimeNode::internal(nodes_[target].bounds, c);
            out.resize(c + 2);
            out_parents.insert(out_parents.end(), {it.dst, it.dst});
            stack.push_back({c + 1, 0, true, false});
            stack.push_back({c, target, false, false});
            continue;
        }
        const RuntimeNode& src = it.from_fresh ? fresh.nodes_[it.src] : nodes_[it.src];
        if (src.is_leaf()) {
            out[it.dst] = it.from_fresh ? shifted(src, pos_offset, 0) : src;
            continue;
        }
        out[it.dst] = RuntimeNode::internal(src.bounds, c);
        out.resize(c + 2);
        out_parents.insert(out_parents.end(), {it.dst, it.dst});
        stack.push_back({c + 1, src.left() + 1, it.from_fresh, it.splice});
        stack.push_back({c, src.left(), it.from_fresh, it.splice});
    }
    nodes_ = std::move(out);
    parents_ = std::move(out_parents);
    rebuild_leaf_map();
    return new_target;
}

// ---------------------------------------------------------------------------------------------
// Queries

void StaticAabbTree::self_pairs(std::vector<Pair>& out) const {
    if (nodes_.empty()) return;
    const auto emit = [&](std::uint32_t sa, std::uint32_t sb) {
        const std::uint32_t a = ids_[sa], b = ids_[sb];
        report_pair(out, a, b);
    };
    // (a, kNone): pairs inside subtree a. (a, b): pairs between disjoint subtrees a and b,
    // pushed only when their bounds overlap. Each pair has one lowest common ancestor (or one
    // leaf), so it is reported once.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> stack;
    stack.reserve(256);
    stack.emplace_back(0u, kNone);
    while (!stack.empty()) {
        const auto [a, b] = stack.back();
        stack.pop_back();
        const RuntimeNode& na = nodes_[a];
        if (b == kNone) {
            if (na.is_leaf()) {
                ++stats_.leaves_visited;
                const std::uint32_t end = na.first() + na.count();
                for (std::uint32_t p = na.first(); p < end; ++p) {
                    const Box& box = boxes_[indices_[p]];
                    for (std::uint32_t q = p + 1; q < end; ++q) {
                        ++stats_.box_tests;
                        if (overlaps(box, boxes_[indices_[q]])) emit(indices_[p], indices_[q]);
                    }
                }
                continue;
            }
            ++stats_.nodes_visited;
            const std::uint32_t l = na.left();
            stack.emplace_back(l, kNone);
            stack.emplace_back(l + 1, kNone);
            if (overlaps(nodes_[l].bounds, nodes_[l + 1].bounds)) stack.emplace_back(l, l + 1);
            continue;
        }
        const RuntimeNode& nb = nodes_[b];
        if (na.is_leaf() && nb.is_leaf()) {
            ++stats_.leaves_visited;
            const std::uint32_t end_a = na.first() + na.count();
            const std::uint32_t end_b = nb.first() + nb.count();
            for (std::uint32_t p = na.first(); p < end_a; ++p) {
                const Box& box = boxes_[indices_[p]];
                ++stats_.box_tests;
                if (!overlaps(box, nb.bounds)) continue;
                for (std::uint32_t q = nb.first(); q < end_b; ++q) {
                    ++stats_.box_tests;
                    if (overlaps(box, boxes_[indices_[q]])) emit(indices_[p], indices_[q]);
                }
            }
            continue;
        }
        ++stats_.nodes_visited;
        // Descend the internal node, the larger one when both are.
        const bool split_a =
            nb.is_leaf() || (!na.is_leaf() && half_area(na.bounds) >= half_area(nb.bounds));
        const RuntimeNode& split = split_a ? na : nb;
        const RuntimeNode& other = split_a ? nb : na;
        const std::uint32_t other_index = split_a ? b : a;
        for (const std::uint32_t child : {split.left(), split.left() + 1}) {
            if (overlaps(nodes_[child].bounds, other.bounds))
                stack.emplace_back(child, other_index);
        }
    }
}

void StaticAabbTree::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    if (nodes_.empty()) return;
    detail::region_descent(
        0u, stats_, [&](std::uint32_t i) { return overlaps(nodes_[i].bounds, region); },
        [&](std::uint32_t i) { return nodes_[i].is_leaf(); },
        [&](std::uint32_t i) {
            const RuntimeNode& leaf = nodes_[i];
            for (std::uint32_t p = leaf.first(); p < leaf.first() + leaf.count(); ++p) {
                ++stats_.box_tests;
                if (overlaps(boxes_[indices_[p]], region)) out.push_back(ids_[indices_[p]]);
            }
        },
        [&](std::uint32_t i) {
            return std::pair{nodes_[i].left(), nodes_[i].left() + 1};
        });
}

std::optional<RayHit> StaticAabbTree::ray_cast(const Ray& ray) const {
    if (nodes_.empty() || is_empty(nodes_[0].bounds)) return std::nullopt;
    const std::optional<float> root_t = ray_box_entry(ray, nodes_[0].bounds);
    if (!root_t) return std::nullopt;
    return detail::closest_hit_descent(
        0u, *root_t, stats_, [&](std::uint32_t i) { return nodes_[i].is_leaf(); },
        [&](std::uint32_t i, std::optional<RayHit>& best) {
            const RuntimeNode& leaf = nodes_[i];
            for (std::uint32_t p = leaf.first(); p < leaf.first() + leaf.count(); ++p) {
                ++stats_.box_tests;
                const std::uint32_t slot = indices_[p];
                keep_closer(best, ids_[slot], ray_box_entry(ray, boxes_[slot]));
            }
        },
        [&](std::uint32_t i) {
            return std::pair{nodes_[i].left(), nodes_[i].left() + 1};
        },
        [&](std::uint32_t c) -> std::optional<float> {
            // An emptied subtree (inverted bounds) holds nothing to hit.
            if (is_empty(nodes_[c].bounds)) return std::nullopt;
            return ray_box_entry(ray, nodes_[c].bounds);
        });
}

Status StaticAabbTree::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0 || nodes_.empty() || is_empty(nodes_[0].bounds)) return Status::success();
    best_first::Queue queue;
    queue.push_node(point_box_distance(p, nodes_[0].bounds), 0u);
    queue.search(k, out, [&](std::uint32_t index, best_first::Queue& q) {
        const RuntimeNode& node = nodes_[index];
        if (node.is_leaf()) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.count();
            for (std::uint32_t i = node.first(); i < node.first() + node.count(); ++i) {
                const std::uint32_t slot = indices_[i];
                q.push_box(point_box_distance(p, boxes_[slot]), ids_[slot]);
            }
            return;
        }
        ++stats_.nodes_visited;
        for (const std::uint32_t child : {node.left(), node.left() + 1}) {
            if (is_empty(nodes_[child].bounds)) continue;
            q.push_node(point_box_distance(p, nodes_[child].bounds), child);
        }
    });
    return Status::success();
}

// ---------------------------------------------------------------------------------------------
// Invariants

std::uint32_t StaticAabbTree::depth() const {
    std::uint32_t deepest = 0;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> stack;
    if (!nodes_.empty()) stack.emplace_back(0u, 0u);
    while (!stack.empty()) {
        const auto [i, d] = stack.back();
        stack.pop_back();
        deepest = std::max(deepest, d);
        if (!nodes_[i].is_leaf()) {
            stack.emplace_back(nodes_[i].left(), d + 1);
            stack.emplace_back(nodes_[i].left() + 1, d + 1);
        }
    }
    return deepest;
}

std::size_t StaticAabbTree::size() const {
    return boxes_.size();
}

Status StaticAabbTree::validate() const {
    const auto node_name = [](std::uint32_t i) { return "node " + std::to_string(i); };
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    const auto total = static_cast<std::uint32_t>(nodes_.size());
    if (ids_.size() != n || position_of_.size() != n || leaf_of_slot_.size() != n ||
        slot_of_.size() != n) {
        return broken("slot arrays differ in length from the box count");
    }
    if (parents_.size() != total) return broken("parent indices differ from node count");
    if (dirty_.size() != (total + 31) / 32) return broken("dirty bitmask has wrong size");
    for (std::size_t w = 0; w < dirty_.size(); ++w) {
        if (dirty_[w] != 0) {
            return broken("dirty bits left (word " + std::to_string(w) + "): refit pending");
        }
    }
    if (highest_dirty_word_ != -1) return broken("highest dirty word set without bits");
    if (n == 0) {
        if (total != 0 || !indices_.empty()) return broken("empty tree with nodes");
        return Status::success();
    }
    if (total == 0) return broken("boxes but no nodes");
    if (parents_[0] != kNone) return broken("root has a parent");

    std::vector<std::uint8_t> seen_slot(n, 0);
    std::vector<std::uint8_t> reached(total, 0);
    std::uint32_t live = 0;
    std::vector<std::uint32_t> stack{0};
    while (!stack.empty()) {
        const std::uint32_t i = stack.back();
        stack.pop_back();
        if (reached[i]) return broken(node_name(i) + " reached twice");
        reached[i] = 1;
        const RuntimeNode& node = nodes_[i];
        if (node.is_leaf()) {
            if (node.count() > config_.leaf_limit) {
                return broken(node_name(i) + " holds " + std::to_string(node.count()) +
                              " boxes, over the leaf limit");
            }
            if (std::size_t{node.first()} + node.count() > indices_.size()) {
                return broken(node_name(i) + " range outside the index array");
            }
            for (std::uint32_t p = node.first(); p < node.first() + node.count(); ++p) {
                const std::uint32_t slot = indices_[p];
                if (slot >= n) return broken("index entry " + std::to_string(p) + " bad");
                if (seen_slot[slot]) {
                    return broken("slot " + std::to_string(slot) + " indexed twice");
                }
                seen_slot[slot] = 1;
                ++live;
                if (position_of_[slot] != p || leaf_of_slot_[slot] != i) {
                    return broken("slot " + std::to_string(slot) +
                                  " position or leaf map is stale");
                }
                if (Status s = validate_box(boxes_[slot], ids_[slot]); !s) return s;
                if (!contains_box(node.bounds, boxes_[slot])) {
                    return broken(node_name(i) + " bounds do not contain id " +
                                  std::to_string(ids_[slot]));
                }
            }
            continue;
        }
        const std::uint32_t l = node.left();
        if (l <= i || l + 1 >= total) {
            return broken(node_name(i) + " children not after it or out of range");
        }
        for (const std::uint32_t c : {l, l + 1}) {
            if (parents_[c] != i) {
                return broken(node_name(c) + " parent index is not " + node_name(i));
            }
            if (!is_empty(nodes_[c].bounds) && !contains_box(node.bounds, nodes_[c].bounds)) {
                return broken(node_name(i) + " bounds do not contain " + node_name(c));
            }
            stack.push_back(c);
        }
    }
    for (std::uint32_t i = 0; i < total; ++i) {
        if (!reached[i]) return broken(node_name(i) + " unreachable from the root");
    }
    if (live != n) return broken("index array does not cover every slot");
    for (std::uint32_t s = 0; s < n; ++s) {
        const auto it = slot_of_.find(ids_[s]);
        if (it == slot_of_.end() || it->second != s) {
            return broken("id " + std::to_string(ids_[s]) + " not mapped to its slot");
        }
    }
    return Status::success();
}

}  // namespace broadphase

// R-tree with Guttman's linear and quadratic splits and the R*-tree, after the R-tree section of
// magley's survey "Broad phase algorithms and data structures" (docs/references.md), A. Guttman,
// "R-trees: a dynamic index structure for spatial searching" (SIGMOD 1984) and N. Beckmann, H.-P.
// Kriegel, R. Schneider, B. Seeger, "The R*-tree: an efficient and robust access method for points
// and rectangles" (SIGMOD 1990).
//
// - Levels count up from the leaves (0), so a root split does not renumber anything and an
//   entry orphaned by CondenseTree goes back into a node of its old level.
// - Content: Guttman and Beckmann measure area (volume in 3D). A 2D scene has zero volume
//   everywhere, which would make every choice a tie, so content is taken in the
//   lexicographically ordered group (volume, half surface area, edge sum): volume decides, and
//   where volumes tie (flat boxes) area decides, then length. Enlargements, differences and
//   overlaps are computed componentwise in that group.
// - Guttman: ChooseLeaf by least enlargement (ties: least content); splits by LinearPickSeeds
//   (greatest normalised separation) or QuadraticPickSeeds (most wasted content) with PickNext,
//   giving a group all remaining entries when it needs them to reach min_entries.
// - Beckmann: ChooseSubtree by least overlap enlargement when the children are leaves, else as
//   Guttman; split on the axis of least margin sum over all distributions of both sorts, at the
//   distribution of least overlap (ties: least content); OverflowTreatment reinserts the p
//   entries farthest from the node centre (close reinsert) the first time a level overflows
//   during one insertion, and splits otherwise and at the root.
// - Delete is Guttman's: CondenseTree drops underfull nodes, shrinks a root with one child and
//   reinserts the orphaned entries at their own level.
// - Queries descend where entry boxes overlap; self-pairs are a dual-tree traversal in lockstep
//   (every leaf is at the same depth), each pair found once at the lowest node holding both.
#include "rtree.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <string>
#include <utility>

#include "best_first.hpp"
#include "broadphase/scene.hpp"

namespace broadphase {
namespace {

// A box's content in the lexicographically ordered group (volume, half area, edge sum).
struct Content {
    double volume = 0, area = 0, margin = 0;

    friend Content operator+(const Content& a, const Content& b) {
        return {a.volume + b.volume, a.area + b.area, a.margin + b.margin};
    }
    friend Content operator-(const Content& a, const Content& b) {
        return {a.volume - b.volume, a.area - b.area, a.margin - b.margin};
    }
    friend bool operator<(const Content& a, const Content& b) {
        if (a.volume != b.volume) return a.volume < b.volume;
        if (a.area != b.area) return a.area < b.area;
        return a.margin < b.margin;
    }
};

Content content(const Box& b) {
    const double dx = double(b.max.x) - b.min.x;
    const double dy = double(b.max.y) - b.min.y;
    const double dz = double(b.max.z) - b.min.z;
    return {dx * dy * dz, dx * dy + dy * dz + dz * dx, dx + dy + dz};
}

Content magnitude(const Content& c) {
    return c < Content{} ? Content{} - c : c;
}

// Content of the intersection of a and b (zero when disjoint).
Content overlap(const Box& a, const Box& b) {
    if (!overlaps(a, b)) return {};
    Box i;
    for (int axis = 0; axis < 3; ++axis) {
        i.min[axis] = std::max(a.min[axis], b.min[axis]);
        i.max[axis] = std::min(a.max[axis], b.max[axis]);
    }
    return content(i);
}

double margin(const Box& b) {
    return double(b.max.x) - b.min.x + double(b.max.y) - b.min.y + double(b.max.z) - b.min.z;
}

Content enlargement(const Box& b, const Box& add) {
    return content(merge(b, add)) - content(b);
}

// Guttman's distribution of the remaining entries after the seeds: PickNext chooses the entry
// to assign (`quadratic`: greatest preference for one group; else the next one), which goes
// to the group needing least enlargement (ties: less content, fewer entries).
std::vector<std::uint8_t> distribute(std::span<const Box> boxes, std::size_t seed0,
                                     std::size_t seed1, std::size_t min_entries, bool quadratic) {
    const std::size_t n = boxes.size();
    std::vector<std::uint8_t> group(n, 2);
    group[seed0] = 0;
    group[seed1] = 1;
    Box cover[2] = {boxes[seed0], boxes[seed1]};
    std::size_t count[2] = {1, 1};
    std::vector<std::size_t> rest;
    for (std::size_t i = 0; i < n; ++i) {
        if (i != seed0 && i != seed1) rest.push_back(i);
    }
    while (!rest.empty()) {
        for (int g = 0; g < 2; ++g) {
            if (count[g] + rest.size() == min_entries) {
                for (const std::size_t i : rest) group[i] = static_cast<std::uint8_t>(g);
                return group;
            }
        }
        std::size_t pick = 0;
        if (quadratic) {
            Content best_preference{-1, 0, 0};
            for (std::size_t r = 0; r < rest.size(); ++r) {
                const Box& b = boxes[rest[r]];
                const Content preference =
                    magnitude(enlargement(cover[0], b) - enlargement(cover[1], b));
                if (best_preference < preference) best_preference = preference, pick = r;
            }
        }
        const std::size_t i = rest[pick];
        rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(pick));
        const Content d0 = enlargement(cover[0], boxes[i]);
        const Content d1 = enlargement(cover[1], boxes[i]);
        int g = 0;
        if (d1 < d0) {
            g = 1;
        } else if (!(d0 < d1)) {
            const Content c0 = content(cover[0]), c1 = content(cover[1]);
            g = c1 < c0 ? 1 : (c0 < c1 ? 0 : (count[1] < count[0] ? 1 : 0));
        }
        group[i] = static_cast<std::uint8_t>(g);
        cover[g] = merge(cover[g], boxes[i]);
        ++count[g];
    }
    return group;
}

// Guttman's LinearPickSeeds: on each axis the entry with the highest low side and the one with
// the lowest high side, their separation normalised by the width of the whole set; the pair of
// greatest normalised separation.
std::vector<std::uint8_t> split_linear(std::span<const Box> boxes, std::size_t min_entries) {
    const std::size_t n = boxes.size();
    std::size_t seed0 = 0, seed1 = 1;
    double best = -std::numeric_limits<double>::infinity();
    for (int axis = 0; axis < 3; ++axis) {
        std::size_t high_low = 0;
        float lo = boxes[0].min[axis], hi = boxes[0].max[axis];
        for (std::size_t i = 1; i < n; ++i) {
            if (boxes[i].min[axis] > boxes[high_low].min[axis]) high_low = i;
            lo = std::min(lo, boxes[i].min[axis]);
            hi = std::max(hi, boxes[i].max[axis]);
        }
        std::size_t low_high = high_low == 0 ? 1 : 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (i != high_low && boxes[i].max[axis] < boxes[low_high].max[axis]) low_high = i;
        }
        const double width = double(hi) - lo;
        const double gap = double(boxes[high_low].min[axis]) - boxes[low_high].max[axis];
        const double separation = width > 0 ? gap / width : 0.0;
        if (separation > best) best = separation, seed0 = low_high, seed1 = high_low;
    }
    return distribute(boxes, seed0, seed1, min_entries, false);
}

// Guttman's QuadraticPickSeeds: the pair that would waste the most content if put together.
std::vector<std::uint8_t> split_quadratic(std::span<const Box> boxes, std::size_t min_entries) {
    const std::size_t n = boxes.size();
    std::size_t seed0 = 0, seed1 = 1;
    bool first = true;
    Content worst;
    for (std::size_t i = 0; i < n; ++i) {
        const Content ci = content(boxes[i]);
        for (std::size_t j = i + 1; j < n; ++j) {
            const Content waste = content(merge(boxes[i], boxes[j])) - ci - content(boxes[j]);
            if (first || worst < waste) worst = waste, seed0 = i, seed1 = j, first = false;
        }
    }
    return distribute(boxes, seed0, seed1, min_entries, true);
}

// Beckmann's R* split: ChooseSplitAxis (least sum of margins over every distribution of both
// sorts), then ChooseSplitIndex (least overlap, ties least content) on that axis.
std::vector<std::uint8_t> split_rstar(std::span<const Box> boxes, std::size_t min_entries) {
    const std::size_t n = boxes.size();
    const auto n32 = static_cast<std::uint32_t>(n);
    std::vector<std::uint32_t> order(n);
    std::vector<Box> prefix(n), suffix(n);
    const auto sort_by = [&](int axis, bool by_max) {
        std::iota(order.begin(), order.end(), 0u);
        std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
            const float ka = by_max ? boxes[a].max[axis] : boxes[a].min[axis];
            const float kb = by_max ? boxes[b].max[axis] : boxes[b].min[axis];
            if (ka != kb) return ka < kb;
            const float sa = by_max ? boxes[a].min[axis] : boxes[a].max[axis];
            const float sb = by_max ? boxes[b].min[axis] : boxes[b].max[axis];
            return sa < sb || (sa == sb && a < b);
        });
        prefix[0] = boxes[order[0]];
        for (std::uint32_t i = 1; i < n32; ++i) prefix[i] = merge(prefix[i - 1], boxes[order[i]]);
        suffix[n - 1] = boxes[order[n - 1]];
        for (std::uint32_t i = n32 - 1; i-- > 0;) suffix[i] = merge(suffix[i + 1], boxes[order[i]]);
    };
    // Distribution k: the first k entries of the sort, k in [min, n - min].
    int best_axis = 0;
    double best_margin = std::numeric_limits<double>::infinity();
    for (int axis = 0; axis < 3; ++axis) {
        double sum = 0;
        for (const bool by_max : {false, true}) {
            sort_by(axis, by_max);
            for (std::size_t k = min_entries; k + min_entries <= n; ++k) {
                sum += margin(prefix[k - 1]) + margin(suffix[k]);
            }
        }
        if (sum < best_margin) best_margin = sum, best_axis = axis;
    }
    bool best_by_max = false;
    std::size_t best_k = min_entries;
    bool first = true;
    Content best_overlap, best_content;
    for (const bool by_max : {false, true}) {
        sort_by(best_axis, by_max);
        for (std::size_t k = min_entries; k + min_entries <= n; ++k) {
            const Content o = overlap(prefix[k - 1], suffix[k]);
            const Content c = content(prefix[k - 1]) + content(suffix[k]);
            if (first || o < best_overlap || (!(best_overlap < o) && c < best_content)) {
                best_overlap = o, best_content = c, best_by_max = by_max, best_k = k;
                first = false;
            }
        }
    }
    sort_by(best_axis, best_by_max);
    std::vector<std::uint8_t> group(n, 1);
    for (std::size_t i = 0; i < best_k; ++i) group[order[i]] = 0;
    return group;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Node pool and helpers

std::string_view RTree::name() const {
    switch (config_.split) {
        case SplitPolicy::linear:
            return "rtree_linear";
        case SplitPolicy::quadratic:
            return "rtree_quadratic";
        case SplitPolicy::rstar:
            return "rstar_tree";
    }
    return "rtree";
}

Status RTree::check_config() const {
    const std::uint32_t m = config_.min_entries, big_m = config_.max_entries;
    if (m < 1 || big_m < 2 || m > big_m / 2 || big_m > 4096) {
        return invalid("needs 1 <= min_entries <= max_entries / 2 and max_entries <= 4096, got " +
                       std::to_string(m) + " and " + std::to_string(big_m));
    }
    if (!(config_.reinsert_fraction >= 0.0f && config_.reinsert_fraction < 1.0f)) {
        return invalid("reinsert_fraction must be in [0, 1)");
    }
    return Status::success();
}

Status RTree::check_id(std::uint32_t id, bool present, const char* what) const {
    if ((leaf_of_.count(id) != 0) == present) return Status::success();
    return invalid(std::string(what) + " of id " + std::to_string(id) +
                       (present ? ", not present" : ", already present"),
                   id);
}

std::int32_t RTree::allocate_node(std::int32_t level) {
    std::int32_t index;
    if (free_list_ != kNull) {
        index = free_list_;
        free_list_ = nodes_[index].parent;
        --free_count_;
    } else {
        index = static_cast<std::int32_t>(nodes_.size());
        nodes_.emplace_back();
    }
    Node& node = nodes_[index];
    node.entries.clear();
    node.entries.reserve(config_.max_entries + 1);
    node.parent = kNull;
    node.level = level;
    return index;
}

void RTree::free_node(std::int32_t index) {
    Node& node = nodes_[index];
    node.entries.clear();
    node.parent = free_list_;
    node.level = -1;
    free_list_ = index;
    ++free_count_;
}

void RTree::clear() {
    nodes_.clear();
    root_ = kNull;
    free_list_ = kNull;
    free_count_ = 0;
    leaf_of_.clear();
}

Box RTree::bounds(std::int32_t node) const {
    const std::vector<Entry>& entries = nodes_[node].entries;
    Box b = entries.front().box;
    for (const Entry& e : entries) b = merge(b, e.box);
    return b;
}

RTree::Entry& RTree::entry_of(std::int32_t parent, std::int32_t child) {
    for (Entry& e : nodes_[parent].entries) {
        if (e.ref == static_cast<std::uint32_t>(child)) return e;
    }
    return nodes_[parent].entries.front();  // unreachable while the parent links hold
}

void RTree::add_entry(std::int32_t node, const Entry& entry) {
    nodes_[node].entries.push_back(entry);
    if (nodes_[node].level == 0) {
        leaf_of_[entry.ref] = node;
    } else {
        nodes_[entry.ref].parent = node;
    }
}

// ---------------------------------------------------------------------------------------------
// Insert

Status RTree::build(std::span<const Box> boxes) {
    clear();
    if (Status s = check_config(); !s) return s;
    if (Status s = validate_boxes(boxes); !s) return s;
    if (boxes.size() > std::size_t(std::numeric_limits<std::int32_t>::max() / 2)) {
        return Error{ErrorCode::limit_exceeded, std::string(name()) + ": too many boxes"};
    }
    leaf_of_.reserve(boxes.size());
    nodes_.reserve(2 * boxes.size() / std::max<std::uint32_t>(config_.min_entries, 2) + 1);
    std::vector<char> reinserted;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        reinserted.assign(reinserted.size(), 0);
        insert_entry(Entry{boxes[i], static_cast<std::uint32_t>(i)}, 0, reinserted);
    }
    return Status::success();
}

Status RTree::insert(std::uint32_t id, const Box& box) {
    if (Status s = check_config(); !s) return s;
    if (Status s = validate_box(box, id); !s) return s;
    if (Status s = check_id(id, false, "insert"); !s) return s;
    if (leaf_of_.size() >= std::size_t(std::numeric_limits<std::int32_t>::max() / 2)) {
        return Error{ErrorCode::limit_exceeded, std::string(name()) + ": too many boxes", id};
    }
    std::vector<char> reinserted;
    insert_entry(Entry{box, id}, 0, reinserted);
    return Status::success();
}

// The nodes from the root down to the node of `level` chosen to receive `box`.
std::vector<std::int32_t> RTree::choose_path(const Box& box, std::int32_t level) const {
    std::vector<std::int32_t> path;
    path.reserve(static_cast<std::size_t>(height()));
    std::int32_t index = root_;
    path.push_back(index);
    while (nodes_[index].level > level) {
        const Node& node = nodes_[index];
        index = static_cast<std::int32_t>(node.entries[choose_subtree(node, box)].ref);
        path.push_back(index);
    }
    return path;
}

// Guttman's ChooseLeaf step: least enlargement, ties least content. Beckmann's ChooseSubtree
// when the children are leaves: least overlap enlargement, ties least enlargement, least content.
std::size_t RTree::choose_subtree(const Node& node, const Box& box) const {
    const std::vector<Entry>& entries = node.entries;
    std::size_t best = 0;
    Content best_growth, best_content;
    for (std::size_t k = 0; k < entries.size(); ++k) {
        const Content c = content(entries[k].box);
        const Content growth = content(merge(entries[k].box, box)) - c;
        if (k == 0 || growth < best_growth || (!(best_growth < growth) && c < best_content)) {
            best = k, best_growth = growth, best_content = c;
        }
    }
    const bool by_overlap = config_.split == SplitPolicy::rstar && node.level == 1;
    // No growth means no overlap growth either: the least-enlargement entry is also best by
    // overlap.
    if (!by_overlap || !(Content{} < best_growth)) return best;

    // Overlap growth of entry k, or nothing as soon as it exceeds `bound` (every term is
    // nonnegative, so the partial sums only grow).
    const auto overlap_growth = [&](std::size_t k, const Content* bound) -> std::optional<Content> {
        const Box grown = merge(entries[k].box, box);
        Content sum;
        for (std::size_t j = 0; j < entries.size(); ++j) {
            if (j == k || !overlaps(grown, entries[j].box)) continue;
            sum = sum + overlap(grown, entries[j].box) - overlap(entries[k].box, entries[j].box);
            if (bound && *bound < sum) return std::nullopt;
        }
        return sum;
    };
    // The least-enlargement entry first: it sets a tight bound for the others.
    Content best_overlap = *overlap_growth(best, nullptr);
    const std::size_t first = best;
    for (std::size_t k = 0; k < entries.size(); ++k) {
        if (k == first) continue;
        const std::optional<Content> o = overlap_growth(k, &best_overlap);
        if (!o) continue;
        const Content c = content(entries[k].box);
        const Content growth = content(merge(entries[k].box, box)) - c;
        if (*o < best_overlap ||
            (!(best_overlap < *o) &&
             (growth < best_growth || (!(best_growth < growth) && c < best_content)))) {
            best = k, best_overlap = *o, best_growth = growth, best_content = c;
        }
    }
    return best;
}

// Adds `entry` to a node of `level` and treats overflows on the way back to the root (Guttman's
// AdjustTree; Beckmann's OverflowTreatment). `reinserted` flags the levels that have already
// given up entries during this insertion.
void RTree::insert_entry(const Entry& entry, std::int32_t level, std::vector<char>& reinserted) {
    if (root_ == kNull) root_ = allocate_node(0);
    const std::vector<std::int32_t> path = choose_path(entry.box, level);
    add_entry(path.back(), entry);
    for (std::size_t i = path.size(); i-- > 0;) {
        const std::int32_t index = path[i];
        const std::int32_t node_level = nodes_[index].level;
        if (nodes_[index].entries.size() <= config_.max_entries) {
            // Splits below only share out entries, so this node's bounds grow by exactly the
            // new box; once they do not grow, nothing above changes.
            if (i == 0) break;
            Box& cover = entry_of(path[i - 1], index).box;
            const Box grown = merge(cover, entry.box);
            if (grown == cover) break;
            cover = grown;
            continue;
        }
        const auto lvl = static_cast<std::size_t>(node_level);
        if (config_.split == SplitPolicy::rstar && index != root_) {
            if (reinserted.size() <= lvl) reinserted.resize(lvl + 1, 0);
            if (!reinserted[lvl]) {
                reinserted[lvl] = 1;
                std::vector<Entry> removed = take_farthest(index);
                if (!removed.empty()) {
                    ++forced_reinserts_;
                    for (std::size_t j = i; j > 0; --j) {
                        entry_of(path[j - 1], path[j]).box = bounds(path[j]);
                    }
                    for (const Entry& e : removed) insert_entry(e, node_level, reinserted);
                    return;
                }
            }
        }
        const std::int32_t sibling = split_node(index);
        if (index == root_) {
            const std::int32_t new_root = allocate_node(node_level + 1);
            add_entry(new_root, Entry{bounds(index), static_cast<std::uint32_t>(index)});
            add_entry(new_root, Entry{bounds(sibling), static_cast<std::uint32_t>(sibling)});
            root_ = new_root;
            return;
        }
        entry_of(path[i - 1], index).box = bounds(index);
        add_entry(path[i - 1], Entry{bounds(sibling), static_cast<std::uint32_t>(sibling)});
    }
}

// Beckmann's Reinsert: removes the p entries whose centres are farthest from the centre of the
// node's bounds and returns them nearest first (close reinsert).
std::vector<RTree::Entry> RTree::take_farthest(std::int32_t index) {
    std::vector<Entry>& entries = nodes_[index].entries;
    const std::size_t n = entries.size();
    const auto wanted = static_cast<std::size_t>(config_.reinsert_fraction *
                                                 static_cast<float>(config_.max_entries));
    const std::size_t p = std::min(wanted, n - config_.min_entries);
    if (p == 0) return {};
    const Box b = bounds(index);
    std::vector<std::pair<double, std::size_t>> by_distance(n);
    for (std::size_t i = 0; i < n; ++i) {
        double d2 = 0;
        for (int a = 0; a < 3; ++a) {
            const double d = (double(entries[i].box.min[a]) + entries[i].box.max[a]) -
                             (double(b.min[a]) + b.max[a]);
            d2 += d * d;
        }
        by_distance[i] = {d2, i};
    }
    // Farthest first; equal distances by position, so that the choice is deterministic.
    std::sort(by_distance.begin(), by_distance.end(), [](const auto& x, const auto& y) {
        return x.first > y.first || (x.first == y.first && x.second < y.second);
    });
    std::vector<Entry> removed;
    std::vector<char> take(n, 0);
    for (std::size_t r = p; r-- > 0;) {
        removed.push_back(entries[by_distance[r].second]);
        take[by_distance[r].second] = 1;
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!take[i]) entries[kept++] = entries[i];
    }
    entries.resize(kept);
    return removed;
}

// Splits an overflowing node by the configured policy; the second group moves to a new
// sibling of the same level, returned (its parent link is set when it is added to a parent).
std::int32_t RTree::split_node(std::int32_t index) {
    ++splits_;
    std::vector<Entry> all = std::move(nodes_[index].entries);
    std::vector<Box> boxes(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) boxes[i] = all[i].box;
    const std::size_t m = config_.min_entries;
    std::vector<std::uint8_t> group;
    switch (config_.split) {
        case SplitPolicy::linear:
            group = split_linear(boxes, m);
            break;
        case SplitPolicy::quadratic:
            group = split_quadratic(boxes, m);
            break;
        case SplitPolicy::rstar:
            group = split_rstar(boxes, m);
            break;
    }
    const std::int32_t sibling = allocate_node(nodes_[index].level);
    nodes_[index].entries.clear();
    nodes_[index].entries.reserve(config_.max_entries + 1);
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (group[i] == 0) {
            nodes_[index].entries.push_back(all[i]);
        } else {
            add_entry(sibling, all[i]);
        }
    }
    return sibling;
}

// ---------------------------------------------------------------------------------------------
// Remove and move

Status RTree::remove(std::uint32_t id) {
    if (Status s = check_id(id, true, "remove"); !s) return s;
    const auto it = leaf_of_.find(id);
    const std::int32_t leaf = it->second;
    leaf_of_.erase(it);
    std::vector<Entry>& entries = nodes_[leaf].entries;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].ref == id) {
            entries[i] = entries.back();
            entries.pop_back();
            break;
        }
    }
    condense(leaf);
    return Status::success();
}

// Guttman's CondenseTree, from the leaf that lost an entry up to the root.
void RTree::condense(std::int32_t leaf) {
    std::vector<std::pair<Entry, std::int32_t>> orphans;  // entry, level of its node
    std::int32_t index = leaf;
    while (index != root_) {
        const std::int32_t parent = nodes_[index].parent;
        if (nodes_[index].entries.size() < config_.min_entries) {
            std::vector<Entry>& siblings = nodes_[parent].entries;
            Entry& mine = entry_of(parent, index);
            mine = siblings.back();
            siblings.pop_back();
            for (const Entry& e : nodes_[index].entries)
                orphans.emplace_back(e, nodes_[index].level);
            free_node(index);
        } else {
            entry_of(parent, index).box = bounds(index);
        }
        index = parent;
    }
    while (nodes_[root_].level > 0 && nodes_[root_].entries.size() == 1) {
        const std::int32_t child = static_cast<std::int32_t>(nodes_[root_].entries[0].ref);
        free_node(root_);
        root_ = child;
        nodes_[root_].parent = kNull;
    }
    if (nodes_[root_].level == 0 && nodes_[root_].entries.empty()) {
        free_node(root_);
        root_ = kNull;
    }
    std::vector<char> reinserted;
    std::vector<Entry> leaf_entries;
    for (const auto& [entry, level] : orphans) {
        reinserted.assign(reinserted.size(), 0);
        if (level == 0 || (root_ != kNull && level <= nodes_[root_].level)) {
            insert_entry(entry, level, reinserted);
            continue;
        }
        // The tree has become lower than this subtree (only possible with min_entries 1):
        // its boxes go back one by one.
        leaf_entries.clear();
        collect_leaf_entries(static_cast<std::int32_t>(entry.ref), leaf_entries);
        for (const Entry& e : leaf_entries) {
            reinserted.assign(reinserted.size(), 0);
            insert_entry(e, 0, reinserted);
        }
    }
}

// Appends the leaf entries below `index` and frees the subtree's nodes.
void RTree::collect_leaf_entries(std::int32_t index, std::vector<Entry>& out) {
    if (nodes_[index].level == 0) {
        out.insert(out.end(), nodes_[index].entries.begin(), nodes_[index].entries.end());
    } else {
        const std::vector<Entry> children = nodes_[index].entries;
        for (const Entry& e : children) collect_leaf_entries(static_cast<std::int32_t>(e.ref), out);
    }
    free_node(index);
}

Status RTree::move(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    if (Status s = check_id(id, true, "move"); !s) return s;
    if (Status s = remove(id); !s) return s;
    return insert(id, box);
}

// ---------------------------------------------------------------------------------------------
// Queries

void RTree::self_pairs(std::vector<Pair>& out) const {
    if (root_ == kNull) return;
    // A task (a, nullptr): the pairs inside the subtree of entry a. A task (a, b): the pairs
    // between the disjoint subtrees of the entries a and b, of one level, whose boxes overlap.
    using Task = std::pair<const Entry*, const Entry*>;
    std::vector<Task> stack;
    stack.reserve(256);
    std::vector<const Entry*> near_a, near_b;
    // The pairs among one node's entries: reported at a leaf, else crossed subtrees.
    const auto within = [&](const Node& node) {
        const std::vector<Entry>& e = node.entries;
        const bool leaf = node.level == 0;
        ++(leaf ? stats_.leaves_visited : stats_.nodes_visited);
        if (leaf) stats_.box_tests += e.size() * (e.size() - 1) / 2;
        for (std::size_t i = 0; i < e.size(); ++i) {
            if (!leaf) stack.emplace_back(&e[i], nullptr);
            for (std::size_t j = i + 1; j < e.size(); ++j) {
                if (!overlaps(e[i].box, e[j].box)) continue;
                if (leaf) {
                    report_pair(out, e[i].ref, e[j].ref);
                } else {
                    stack.emplace_back(&e[i], &e[j]);
                }
            }
        }
    };
    within(nodes_[root_]);
    while (!stack.empty()) {
        const auto [a, b] = stack.back();
        stack.pop_back();
        const Node& na = nodes_[a->ref];
        if (b == nullptr) {
            within(na);
            continue;
        }
        const Node& nb = nodes_[b->ref];
        const bool leaf = na.level == 0;
        (leaf ? stats_.leaves_visited : stats_.nodes_visited) += 2;
        // Only the entries of each side that reach into the other side's box can pair up.
        near_a.clear();
        for (const Entry& e : na.entries) {
            if (overlaps(e.box, b->box)) near_a.push_back(&e);
        }
        if (near_a.empty()) continue;
        near_b.clear();
        for (const Entry& e : nb.entries) {
            if (overlaps(e.box, a->box)) near_b.push_back(&e);
        }
        if (leaf) stats_.box_tests += near_a.size() * near_b.size();
        for (const Entry* x : near_a) {
            for (const Entry* y : near_b) {
                if (!overlaps(x->box, y->box)) continue;
                if (leaf) {
                    report_pair(out, x->ref, y->ref);
                } else {
                    stack.emplace_back(x, y);
                }
            }
        }
    }
}

void RTree::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    if (root_ == kNull) return;
    std::vector<std::int32_t> stack;
    stack.reserve(64);
    stack.push_back(root_);
    while (!stack.empty()) {
        const Node& node = nodes_[stack.back()];
        stack.pop_back();
        if (node.level == 0) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.entries.size();
            for (const Entry& e : node.entries) {
                if (overlaps(e.box, region)) out.push_back(e.ref);
            }
            continue;
        }
        ++stats_.nodes_visited;
        for (const Entry& e : node.entries) {
            if (overlaps(e.box, region)) stack.push_back(static_cast<std::int32_t>(e.ref));
        }
    }
}

std::optional<RayHit> RTree::ray_cast(const Ray& ray) const {
    if (root_ == kNull) return std::nullopt;
    // Entries' boxes key their children (best_first::closest_hit); the root is entered at 0.
    return best_first::closest_hit(
        root_, 0.0f, [&](std::int32_t index, std::optional<RayHit>& best, const auto& push) {
            const Node& node = nodes_[index];
            if (node.level == 0) {
                ++stats_.leaves_visited;
                for (const Entry& e : node.entries) {
                    ++stats_.box_tests;
                    keep_closer(best, e.ref, ray_box_entry(ray, e.box));
                }
                return;
            }
            ++stats_.nodes_visited;
            for (const Entry& e : node.entries) {
                if (const std::optional<float> t = ray_box_entry(ray, e.box))
                    push(*t, static_cast<std::int32_t>(e.ref));
            }
        });
}

Status RTree::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0 || root_ == kNull) return Status::success();
    // A node's key is the distance to its entry's box, the union of the boxes below it.
    best_first::Queue queue;
    queue.push_node(0.0f, std::uint32_t(root_));
    queue.search(k, out, [&](std::uint32_t index, best_first::Queue& q) {
        const Node& node = nodes_[index];
        if (node.level == 0) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.entries.size();
            for (const Entry& e : node.entries) q.push_box(point_box_distance(p, e.box), e.ref);
            return;
        }
        ++stats_.nodes_visited;
        for (const Entry& e : node.entries) q.push_node(point_box_distance(p, e.box), e.ref);
    });
    return Status::success();
}

// ---------------------------------------------------------------------------------------------
// Invariants

int RTree::height() const {
    return root_ == kNull ? 0 : nodes_[root_].level + 1;
}

std::size_t RTree::size() const {
    return leaf_of_.size();
}

Status RTree::validate() const {
    const auto node_name = [](std::int32_t i) { return "node " + std::to_string(i); };
    const auto total = static_cast<std::int64_t>(nodes_.size());
    const auto in_range = [&](std::int64_t i) { return i >= 0 && i < total; };

    const Result<std::int64_t> free_nodes = count_free_list(
        free_list_, total, [&](std::int32_t i) { return nodes_[i].parent; },
        [&](std::int32_t i) { return nodes_[i].level == -1; });
    if (!free_nodes) return free_nodes.error();
    const std::int64_t free_seen = *free_nodes;
    if (free_seen != static_cast<std::int64_t>(free_count_)) return broken("free count is wrong");
    if (root_ == kNull) {
        if (!leaf_of_.empty()) return broken("no root but ids are mapped");
        if (free_seen != total) return broken("empty tree with nodes in use");
        return Status::success();
    }
    if (!in_range(root_)) return broken("root outside the pool");
    const Node& root = nodes_[root_];
    if (root.parent != kNull) return broken("root has a parent");
    if (root.level < 0) return broken("root is on the free list");
    if (root.entries.empty() || root.entries.size() > config_.max_entries ||
        (root.level > 0 && root.entries.size() < 2)) {
        return broken("root holds " + std::to_string(root.entries.size()) + " entries");
    }

    std::size_t ids = 0;
    std::unordered_map<std::uint32_t, std::int32_t> seen;
    const auto is_free = [&](std::int32_t i) { return nodes_[i].level < 0; };
    const auto check = [&](std::int32_t i, std::vector<std::int32_t>& stack) -> Status {
        const Node& node = nodes_[i];
        const std::size_t count = node.entries.size();
        if (i != root_ && (count < config_.min_entries || count > config_.max_entries)) {
            return broken(node_name(i) + " holds " + std::to_string(count) + " entries, not in [" +
                          std::to_string(config_.min_entries) + ", " +
                          std::to_string(config_.max_entries) + "]");
        }
        for (const Entry& e : node.entries) {
            if (node.level == 0) {
                if (Status s = validate_box(e.box, e.ref); !s) return s;
                if (!seen.emplace(e.ref, i).second) {
                    return broken("id " + std::to_string(e.ref) + " stored twice");
                }
                const auto it = leaf_of_.find(e.ref);
                if (it == leaf_of_.end() || it->second != i) {
                    return broken("id " + std::to_string(e.ref) + " not mapped to " + node_name(i));
                }
                ++ids;
                continue;
            }
            const auto child = static_cast<std::int32_t>(e.ref);
            if (!in_range(child)) return broken(node_name(i) + " has a child out of range");
            const Node& c = nodes_[child];
            if (c.parent != i)
                return broken(node_name(child) + " parent link is not " + node_name(i));
            if (c.level != node.level - 1) {
                return broken(node_name(child) + " is at level " + std::to_string(c.level) +
                              " under level " + std::to_string(node.level) +
                              " (leaves at different depths)");
            }
            if (c.entries.empty() || !(e.box == bounds(child))) {
                return broken("bounds of " + node_name(child) +
                              " are not the union of its entries");
            }
            stack.push_back(child);
        }
        return Status::success();
    };
    if (Status s = walk_pool(root_, total, free_seen, is_free, check); !s) return s;
    if (ids == leaf_of_.size()) return Status::success();
    return broken(std::to_string(ids) + " ids stored but " + std::to_string(leaf_of_.size()) +
                  " mapped");
}

}  // namespace broadphase

// Regular octree, every box referenced from every leaf it overlaps, results kept unique by the
// owner-leaf rule (see octree.hpp; Meagher 1982).
#include "octree.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "best_first.hpp"
#include "broadphase/scene.hpp"
#include "list_sweep.hpp"

namespace broadphase {
namespace {

constexpr std::uint32_t kDepthLimit = 300;
/// split_plan: the leaf stays; or it splits and its boxes spread over several children (0-7:
/// every box not covering the cell goes to that child).
constexpr int kStays = -1;
constexpr int kSpread = 8;

Vec3 max_corner(const Vec3& a, const Vec3& b) {
    return {std::max(a.x, b.x), std::max(a.y, b.y), std::max(a.z, b.z)};
}

// The split point, in double: exact for any finite cell (max - min may exceed FLT_MAX), then
// rounded once; maybe_split only splits when it falls strictly inside the cell.
Vec3 centre_of(const Box& cell) {
    Vec3 m;
    for (int a = 0; a < 3; ++a)
        m[a] = static_cast<float>(0.5 * (double(cell.min[a]) + cell.max[a]));
    return m;
}

Box intersection(const Box& a, const Box& b) {
    Box r;
    for (int i = 0; i < 3; ++i) {
        r.min[i] = std::max(a.min[i], b.min[i]);
        r.max[i] = std::min(a.max[i], b.max[i]);
    }
    return r;
}

// True when the box covers the whole cell: such a box is in every leaf below, never separated
// by a split, so it does not count towards splitting.
bool covers(const Box& box, const Box& cell) {
    return detail::encloses(box, cell);
}

Box child_cell(const Box& cell, const Vec3& mid, std::uint32_t c) {
    Box b;
    for (int a = 0; a < 3; ++a) {
        const bool upper = (c >> a) & 1u;
        b.min[a] = upper ? mid[a] : cell.min[a];
        b.max[a] = upper ? cell.max[a] : mid[a];
    }
    return b;
}

// Mask of the children (bit c) whose closed cells a box overlapping `cell` overlaps.
std::uint32_t child_mask(const Box& box, const Vec3& mid) {
    std::uint32_t lower[3], upper[3];
    for (int a = 0; a < 3; ++a) {
        lower[a] = box.min[a] <= mid[a];
        upper[a] = box.max[a] >= mid[a];
    }
    std::uint32_t mask = 0;
    for (std::uint32_t c = 0; c < 8; ++c) {
        const bool hit = ((c & 1u) ? upper[0] : lower[0]) && ((c & 2u) ? upper[1] : lower[1]) &&
                         ((c & 4u) ? upper[2] : lower[2]);
        mask |= std::uint32_t(hit) << c;
    }
    return mask;
}

}  // namespace

// ---- build and dynamic updates ---------------------------------------------------------------

// Empty, as a failed build leaves the tree.
void Octree::clear() {
    nodes_.clear();
    clear_boxes();
}

Status Octree::build(std::span<const Box> boxes) {
    clear();
    split_references_ = 0;
    if (config_.capacity == 0) return invalid("capacity must be at least 1");
    if (config_.max_depth > kDepthLimit) {
        return invalid("max_depth must be at most " + std::to_string(kDepthLimit));
    }
    return build_from(boxes);
}

void Octree::place_all(const std::vector<Entry>& entries, bool robust) {
    clear();
    items_.reserve(entries.size());
    if (entries.empty()) return;
    // The root, robust to a few far outliers and world-wide boxes (issue 9;
    // detail::robust_root_bounds). The cube from its min corner is computed in double and
    // rounded outwards once (bounded for any finite boxes; issue 14), clamped to the largest
    // float. Boxes not inside it go to the outside list, each tested against the tree by one
    // descent.
    const std::size_t n = entries.size();
    const detail::RootBounds core = detail::robust_root_bounds(entries, robust);
    double side = 0;
    for (int a = 0; a < 3; ++a) side = std::max(side, core.hi[a] - core.lo[a]);
    Box root;
    for (int a = 0; a < 3; ++a) {
        root.min[a] = detail::round_down_float(core.lo[a]);
        const double top = double(root.min[a]) + side;
        root.max[a] =
            top >= double(std::numeric_limits<float>::max())
                ? std::numeric_limits<float>::max()
                : std::max(detail::round_up_float(top), detail::round_up_float(core.hi[a]));
    }
    nodes_.push_back(Node{{}, root, 0});  // a leaf, its entries filled below
    std::vector<Entry>& at_root = nodes_[0].entries;
    at_root.reserve(n);
    for (const Entry& e : entries) {
        const bool inside = detail::encloses(root, e.box);
        items_.emplace(e.id, Item{e.box, !inside});
        (inside ? at_root : outside_).push_back(e);
    }
    inside_count_ = at_root.size();
    maybe_split(0);
}

bool Octree::inside_root(const Box& box) const {
    return !nodes_.empty() && detail::encloses(nodes_[0].cell, box);
}

bool Octree::cell_splits(const Node& node) const {
    if (node.depth >= config_.max_depth) return false;
    const Vec3 mid = centre_of(node.cell);
    for (int a = 0; a < 3; ++a) {
        if (!(node.cell.min[a] < mid[a] && mid[a] < node.cell.max[a])) return false;
    }
    return double(node.cell.max.x) - node.cell.min.x >= 2.0 * config_.min_size;
}

int Octree::split_plan(std::uint32_t index) const {
    {
        const Node& node = nodes_[index];
        const std::size_t count = node.entries.size();
        if (count <= config_.capacity || !cell_splits(node)) return kStays;
        const Vec3 mid = centre_of(node.cell);
        // Boxes covering the whole cell are in every leaf below whatever happens: only the
        // others count. Split when more than `capacity` of them are left and the split
        // separates some of them (some box misses some child another box reaches); boxes that
        // cannot be told apart (duplicates, or all straddling the same corner) stay together.
        std::uint32_t nonempty = 0;
        std::size_t partial = 0, shared = 0;
        std::vector<std::uint32_t> masks;
        masks.reserve(count);
        std::size_t child_counts[8] = {};
        const Box* first_clip = nullptr;
        bool all_same = true;
        Box first_box;
        for (const Entry& e : node.entries) {
            if (covers(e.box, node.cell)) continue;
            masks.push_back(child_mask(e.box, mid));
            nonempty |= masks.back();
            for (std::uint32_t c = 0; c < 8; ++c) child_counts[c] += (masks.back() >> c) & 1u;
            const Box clipped = intersection(e.box, node.cell);
            if (first_clip == nullptr) {
                first_box = clipped;
                first_clip = &first_box;
            } else if (!(clipped == first_box)) {
                all_same = false;
            }
            ++partial;
        }
        if (partial <= config_.capacity) return kStays;
        for (const std::uint32_t m : masks) shared += (m & nonempty) == nonempty;
        if (std::popcount(nonempty) == 1) {
            // All in one child: splitting separates nothing yet but shrinks the cell towards
            // where they differ; boxes identical within the cell never part.
            if (all_same) return kStays;
            return std::countr_zero(nonempty);
        } else {
            if (shared == partial) return kStays;
            // Split only when it cuts the leaf's pair tests (sum of n_c^2 below 0.7 n^2) or
            // copies little (at most n/2 new references): boxes long against the cell would
            // otherwise be copied into ever more leaves.
            double after = 0;
            std::size_t references = 0;
            for (const std::size_t n : child_counts) {
                after += double(n) * double(n);
                references += n;
            }
            if (after >= 0.7 * double(partial) * double(partial) && 2 * references > 3 * partial) {
                return kStays;
            }
        }
    }
    return kSpread;
}

void Octree::index_crowded(std::uint32_t index) {
    Node& node = nodes_[index];
    if (!node.index.active() && node.entries.size() > detail::kCrowded) {
        node.index = detail::make_index(node.entries);
    }
}

std::uint32_t Octree::add_children(std::uint32_t index) {
    const auto first = static_cast<std::uint32_t>(nodes_.size());
    const Box cell = nodes_[index].cell;
    const Vec3 mid = centre_of(cell);
    const std::uint32_t depth = nodes_[index].depth + 1;
    for (std::uint32_t c = 0; c < 8; ++c) {
        nodes_.push_back(Node{{}, child_cell(cell, mid, c), depth});
    }
    nodes_[index].index = {};
    nodes_[index].first_child = first;
    return first;
}

void Octree::maybe_split(std::uint32_t index) {
    int plan = split_plan(index);
    if (plan == kStays) {
        // A leaf that stays crowded is indexed on its spread axis for the queries.
        index_crowded(index);
        return;
    }
    if (plan != kSpread) {
        // A cluster far from the cell's centre (a group 1e6 away, clusters 1e4 apart) sends
        // every box to one child for many levels. Along such a chain the boxes move down as one
        // list: each level costs its 8 nodes and copies of the boxes covering the cell (they
        // cover every child), not a pass over every box. The tree is the one the level-by-level
        // splits build: while the bounds of the boxes not covering the cell fall in one child,
        // every such box goes there alone, none starts to cover the child (the bounds would
        // straddle the split), and the same boxes, clipped alike, make split_plan choose that
        // child again unless the cell itself stops splitting.
        const Node& node = nodes_[index];
        std::vector<Entry> covering;
        Box bounds = node.cell;
        bool first = true;
        for (const Entry& e : node.entries) {
            if (covers(e.box, node.cell)) {
                covering.push_back(e);
            } else {
                bounds = first ? e.box : merge(bounds, e.box);
                first = false;
            }
        }
        const auto one_child = [&](std::uint32_t at) {
            const std::uint32_t mask = child_mask(bounds, centre_of(nodes_[at].cell));
            return std::popcount(mask) == 1 ? std::countr_zero(mask) : kSpread;
        };
        while (plan != kSpread) {
            const std::uint32_t children = add_children(index);
            const std::uint32_t next = children + std::uint32_t(plan);
            nodes_[next].entries = std::move(nodes_[index].entries);
            nodes_[index].entries = {};
            for (std::uint32_t c = 0; c < 8; ++c) {
                if (children + c == next) continue;
                nodes_[children + c].entries = covering;
                index_crowded(children + c);
            }
            split_references_ += 7 * covering.size();
            index = next;
            plan = one_child(index);
            if (plan != kSpread && !cell_splits(nodes_[index])) plan = kStays;
            if (plan == kStays) {
                index_crowded(index);
                return;
            }
        }
        // The chain ends where the boxes straddle the split: the full rule decides.
        maybe_split(index);
        return;
    }
    const std::uint32_t children = add_children(index);
    const Vec3 mid = centre_of(nodes_[index].cell);
    std::vector<Entry> entries = std::move(nodes_[index].entries);
    nodes_[index].entries = {};
    for (const Entry& e : entries) {
        const std::uint32_t mask = child_mask(e.box, mid);
        for (std::uint32_t c = 0; c < 8; ++c) {
            if ((mask >> c) & 1u) nodes_[children + c].entries.push_back(e);
        }
    }
    for (std::uint32_t c = 0; c < 8; ++c) {
        split_references_ += nodes_[children + c].entries.size();
        maybe_split(children + c);
    }
}

void Octree::insert_into(std::uint32_t index, const Entry& entry) {
    if (nodes_[index].is_leaf()) {
        detail::index_insert(nodes_[index].entries, nodes_[index].index, entry);
        maybe_split(index);
        return;
    }
    const std::uint32_t first = nodes_[index].first_child;
    const std::uint32_t mask = child_mask(entry.box, centre_of(nodes_[index].cell));
    for (std::uint32_t c = 0; c < 8; ++c) {
        if ((mask >> c) & 1u) insert_into(first + c, entry);
    }
}

void Octree::remove_from(std::uint32_t index, std::uint32_t id, const Box& box) {
    Node& node = nodes_[index];
    if (node.is_leaf()) {
        const std::size_t pos = detail::position_of(node.entries, id);
        if (pos != node.entries.size()) detail::index_erase(node.entries, node.index, pos);
        return;
    }
    const std::uint32_t first = node.first_child;
    const std::uint32_t mask = child_mask(box, centre_of(node.cell));
    for (std::uint32_t c = 0; c < 8; ++c) {
        if ((mask >> c) & 1u) remove_from(first + c, id, box);
    }
}

bool Octree::tree_insert(Entry entry) {
    if (!inside_root(entry.box)) return false;
    insert_into(0, entry);
    return true;
}

void Octree::tree_remove(std::uint32_t id, const Box& box) {
    remove_from(0, id, box);
}

// ---- queries ---------------------------------------------------------------------------------

bool Octree::owns(const Node& leaf, const Vec3& p) const {
    const Box& root = nodes_[0].cell;
    for (int a = 0; a < 3; ++a) {
        if (p[a] < leaf.cell.min[a]) return false;
        if (p[a] >= leaf.cell.max[a] && leaf.cell.max[a] != root.max[a]) return false;
    }
    return true;
}

// Calls leaf(node) for every leaf whose cell overlaps `region`, counting the internal nodes
// entered and the leaves visited.
template <class Leaf>
void Octree::for_each_leaf(const Box& region, Leaf&& leaf) const {
    if (nodes_.empty() || !overlaps(region, nodes_[0].cell)) return;
    std::vector<std::uint32_t> stack = {0};
    while (!stack.empty()) {
        const Node& node = nodes_[stack.back()];
        stack.pop_back();
        if (!node.is_leaf()) {
            ++stats_.nodes_visited;
            for (std::uint32_t c = 0; c < 8; ++c) {
                if (overlaps(region, nodes_[node.first_child + c].cell)) {
                    stack.push_back(node.first_child + c);
                }
            }
            continue;
        }
        ++stats_.leaves_visited;
        leaf(node);
    }
}

void Octree::self_pairs(std::vector<Pair>& out) const {
    const auto emit = [this, &out](std::uint32_t a, std::uint32_t b) { report_pair(out, a, b); };
    std::vector<std::uint32_t> order;
    for (const Node& node : nodes_) {
        if (!node.is_leaf()) {
            ++stats_.nodes_visited;
            continue;
        }
        ++stats_.leaves_visited;
        // A leaf with many references (boxes long against the cell stop the splitting, see
        // maybe_split) is paired by sort and sweep, not all against all.
        detail::list_pairs(
            node.entries, order, stats_.box_tests,
            [&](const Entry& a, const Entry& b) {
                return owns(node, max_corner(a.box.min, b.box.min));
            },
            emit);
    }
    // Outside boxes are in no leaf: each meets the later outside boxes and the tree once.
    detail::outside_pairs(outside_, stats_.box_tests, emit, [&](const Entry& a) {
        for_each_leaf(a.box, [&](const Node& leaf) {
            stats_.box_tests += leaf.entries.size();
            for (const Entry& b : leaf.entries) {
                if (overlaps(a.box, b.box) && owns(leaf, max_corner(a.box.min, b.box.min))) {
                    emit(a.id, b.id);
                }
            }
        });
    });
}

void Octree::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    stats_.box_tests += outside_.size();
    for (const Entry& e : outside_) {
        if (overlaps(region, e.box)) out.push_back(e.id);
    }
    for_each_leaf(region, [&](const Node& leaf) {
        const int axis = leaf.index.active() ? leaf.index.axis : 0;
        detail::for_each_meeting(
            leaf.entries, leaf.index, region.min[axis], region.max[axis], stats_.box_tests,
            [&](const Entry& e) {
                // max(region.min, box.min) lies in both: report from its owner leaf only.
                if (overlaps(region, e.box) && owns(leaf, max_corner(region.min, e.box.min))) {
                    out.push_back(e.id);
                }
            });
    });
}

void Octree::query_point(const Vec3& p, std::vector<std::uint32_t>& out) const {
    stats_.box_tests += outside_.size();
    for (const Entry& e : outside_) {
        if (contains(e.box, p)) out.push_back(e.id);
    }
    if (nodes_.empty() || !contains(nodes_[0].cell, p)) return;
    // p's owner leaf holds every box containing p (they all overlap its closed cell).
    const Node* node = &nodes_[0];
    while (!node->is_leaf()) {
        ++stats_.nodes_visited;
        const Vec3 mid = centre_of(node->cell);
        const std::uint32_t c = std::uint32_t(p.x >= mid.x) | (std::uint32_t(p.y >= mid.y) << 1) |
                                (std::uint32_t(p.z >= mid.z) << 2);
        node = &nodes_[node->first_child + c];
    }
    ++stats_.leaves_visited;
    const int axis = node->index.active() ? node->index.axis : 0;
    detail::for_each_meeting(node->entries, node->index, p[axis], p[axis], stats_.box_tests,
                             [&](const Entry& e) {
                                 if (contains(e.box, p)) out.push_back(e.id);
                             });
}

std::optional<RayHit> Octree::ray_cast(const Ray& ray) const {
    std::optional<RayHit> best = outside_ray_hit(ray);
    if (nodes_.empty()) return best;
    // The entry t of a cell never exceeds that of a box inside it (every step of the slab
    // test is monotone in the bounds), so a cell entered after the best hit is skipped, with a
    // few ulps of slack: the leaf holding the hit point must be visited, since an indexed leaf
    // only looks for hits on the part of the ray inside its own cell.
    detail::walk_ray(
        nodes_, ray_box_entry(ray, nodes_[0].cell),
        [&](const detail::OctantVisit& v) {
            if (best && double(v.t) > double(best->t) * (1.0 + 1e-5)) return false;
            const Node& node = nodes_[v.node];
            if (node.is_leaf()) {
                ++stats_.leaves_visited;
                detail::ray_scan_closest(node.entries, node.index, ray, v.t, node.cell,
                                         stats_.box_tests, best);
                return false;
            }
            ++stats_.nodes_visited;
            return true;
        },
        [&](std::uint32_t child) { return ray_box_entry(ray, nodes_[child].cell); });
    return best;
}

Status Octree::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0) return Status::success();
    // Node keys are point_box_distance of the cells. The leaf holding a box's nearest point is
    // no farther than the box, so a box's first copy pops in its final place; copies from
    // farther leaves pop later and are skipped (repeats).
    // An indexed leaf opens into cursors walking its run outwards from p (queue nodes numbered
    // from nodes_.size() on).
    detail::ListKnn knn(nodes_, outside_, p, stats_.box_tests);
    if (!nodes_.empty()) knn.queue.push_node(point_box_distance(p, nodes_[0].cell), 0);
    knn.search(
        k, out,
        [&](std::uint32_t index, best_first::Queue& q) {
            const Node& node = nodes_[index];
            if (node.is_leaf()) {
                ++stats_.leaves_visited;
                knn.open(index, q);
                return;
            }
            ++stats_.nodes_visited;
            for (std::uint32_t c = 0; c < 8; ++c) {
                const std::uint32_t child = node.first_child + c;
                q.push_node(point_box_distance(p, nodes_[child].cell), child);
            }
        },
        /*repeats=*/true);
    return Status::success();
}

// ---- invariants ------------------------------------------------------------------------------

std::uint32_t Octree::height() const {
    std::uint32_t h = 0;
    for (const Node& n : nodes_) h = std::max(h, n.depth);
    return h;
}

std::size_t Octree::leaves_overlapping(const Box& box) const {
    std::size_t count = 0;
    std::vector<std::uint32_t> stack = {0};
    while (!stack.empty()) {
        const Node& node = nodes_[stack.back()];
        stack.pop_back();
        if (!overlaps(box, node.cell)) continue;
        if (node.is_leaf()) {
            ++count;
        } else {
            for (std::uint32_t c = 0; c < 8; ++c) stack.push_back(node.first_child + c);
        }
    }
    return count;
}

std::size_t Octree::size() const {
    return items_.size();
}

Status Octree::validate() const {
    std::unordered_map<std::uint32_t, std::size_t> references;
    references.reserve(items_.size());
    std::vector<std::uint32_t> ids;  // one leaf's ids (one buffer for every leaf)
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const Node& node = nodes_[i];
        const std::string where = "node " + std::to_string(i);
        if (node.is_leaf()) {
            ids.clear();
            for (const Entry& e : node.entries) {
                auto it = items_.find(e.id);
                if (it == items_.end()) return broken(where + " holds unknown id", e.id);
                if (it->second.outside || !(it->second.box == e.box)) {
                    return broken(where + " holds a stale box", e.id);
                }
                if (!overlaps(e.box, node.cell)) {
                    return broken(where + " holds a box outside its cell", e.id);
                }
                ids.push_back(e.id);
                ++references[e.id];
            }
            std::sort(ids.begin(), ids.end());
            if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
                return broken(where + " holds an id twice");
            }
            if (const char* error = detail::index_error(node.entries, node.index)) {
                return broken(where + ": " + error);
            }
            if (node.entries.size() > detail::kCrowded && !node.index.active()) {
                return broken(where + " is crowded but not indexed");
            }
            continue;
        }
        if (node.index.active()) return broken(where + " is internal but indexed");
        if (!node.entries.empty()) return broken(where + " is internal but holds boxes");
        if (node.first_child + 8 > nodes_.size() || node.first_child <= i) {
            return broken(where + " has a bad child index");
        }
        const Vec3 mid = centre_of(node.cell);
        for (std::uint32_t c = 0; c < 8; ++c) {
            const Node& child = nodes_[node.first_child + c];
            if (!(child.cell == child_cell(node.cell, mid, c))) {
                return broken(where + " child " + std::to_string(c) + " is not its octant");
            }
            if (child.depth != node.depth + 1 || child.depth > config_.max_depth) {
                return broken(where + " child " + std::to_string(c) + " has a bad depth");
            }
        }
    }
    std::size_t inside = 0;
    for (const auto& [id, item] : items_) {
        if (item.outside) continue;  // validate_outside checks those
        ++inside;
        if (!inside_root(item.box)) return broken("a tree box is outside the root", id);
        const auto it = references.find(id);
        const std::size_t have = it == references.end() ? 0 : it->second;
        if (have != leaves_overlapping(item.box)) {
            return broken("id is not in exactly the leaves it overlaps", id);
        }
    }
    if (inside != inside_count_) return broken("counts of tree and outside boxes disagree");
    return validate_outside([this](const Box& box) { return inside_root(box); });
}

}  // namespace broadphase

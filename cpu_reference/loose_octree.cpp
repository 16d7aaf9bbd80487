// Loose octree with O(1) depth and cell computation on insert (Ulrich, "Loose octrees", 2000).
// See loose_octree.hpp for the placement rule and the corrections to the original pseudocode.
#include "loose_octree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "best_first.hpp"
#include "broadphase/scene.hpp"
#include "list_sweep.hpp"

namespace broadphase {
namespace {

// A crowded octant keeps its own boxes indexed on their spread axis for the queries.
template <class Node>
void index_crowded(Node& node) {
    if (!node.index.active() && node.entries.size() > detail::kCrowded) {
        node.index = detail::make_index(node.entries);
    }
}

// Outward rounding to float, clamped to the finite range (a root over boxes near +-3e38 has
// loose bounds beyond it; every box still fits the clamped bound).
using detail::round_down_float;
using detail::round_up_float;

using detail::encloses;

// Child slot of the octant at depth `depth` on the path to `ideal` (the pseudocode's child index,
// with the precedence and masking fixed).
std::uint32_t child_slot(const LooseOctree::Cell& ideal, std::uint32_t depth) {
    const std::uint32_t shift = ideal.depth - depth;
    return ((ideal.x >> shift) & 1u) | (((ideal.y >> shift) & 1u) << 1) |
           (((ideal.z >> shift) & 1u) << 2);
}

}  // namespace

// ---- placement -------------------------------------------------------------------------------

std::pair<Box, Box> LooseOctree::cell_bounds(const Cell& cell) const {
    const double side = std::ldexp(root_side_, -static_cast<int>(cell.depth));
    const double margin = 0.5 * (double(config_.k) - 1.0) * side;
    const std::uint32_t coord[3] = {cell.x, cell.y, cell.z};
    Box strict, loose;
    for (int a = 0; a < 3; ++a) {
        const double lo = root_min_[a] + double(coord[a]) * side;
        const double hi = lo + side;
        strict.min[a] = round_down_float(lo);
        strict.max[a] = round_up_float(hi);
        loose.min[a] = round_down_float(lo - margin);
        loose.max[a] = round_up_float(hi + margin);
    }
    return {strict, loose};
}

std::optional<LooseOctree::Cell> LooseOctree::ideal_cell(const Box& box) const {
    if (nodes_.empty()) return std::nullopt;
    double centre[3], extent = 0;
    for (int a = 0; a < 3; ++a) {
        centre[a] = 0.5 * (double(box.min[a]) + double(box.max[a]));
        if (!(root_min_[a] <= centre[a] && centre[a] <= root_min_[a] + root_side_)) {
            return std::nullopt;  // centre outside the root's strict cube
        }
        extent = std::max(extent, double(box.max[a]) - double(box.min[a]));
    }
    // Deepest d with side_d * (k-1)/2 >= extent/2, i.e. 2^d <= (k-1) * side_0 / extent.
    int depth = static_cast<int>(config_.max_depth);
    if (extent > 0) {
        const double ratio = (double(config_.k) - 1.0) * root_side_ / extent;
        depth = ratio < 1.0 ? 0 : std::min(depth, std::ilogb(ratio));
    }
    // Rounding may push the box a hair outside the loose bound: then one level up (at most a
    // step or two; a box that fits nowhere goes outside).
    for (; depth >= 0; --depth) {
        const double side = std::ldexp(root_side_, -depth);
        const std::uint32_t last = (1u << depth) - 1;
        std::uint32_t coord[3];
        for (int a = 0; a < 3; ++a) {
            const double index = std::floor((centre[a] - root_min_[a]) / side);
            coord[a] = index <= 0 ? 0 : std::min(last, static_cast<std::uint32_t>(index));
        }
        const Cell cell{static_cast<std::uint32_t>(depth), coord[0], coord[1], coord[2]};
        if (encloses(cell_bounds(cell).second, box)) return cell;
    }
    return std::nullopt;
}

// ---- build and dynamic updates ---------------------------------------------------------------

// Empty, as a failed build leaves the tree.
void LooseOctree::clear() {
    nodes_.clear();
    clear_boxes();
}

Status LooseOctree::build(std::span<const Box> boxes) {
    clear();
    if (!(config_.k > 1.0f && config_.k <= 8.0f)) return invalid("k must be in (1, 8]");
    if (config_.capacity == 0) return invalid("capacity must be at least 1");
    if (config_.max_depth > 31) return invalid("max_depth must be at most 31");
    return build_from(boxes);
}

void LooseOctree::place_all(const std::vector<Entry>& entries, bool robust) {
    clear();
    items_.reserve(entries.size());
    if (entries.empty()) return;
    // The root, robust to a few far outliers (issue 9; detail::robust_root_bounds). Boxes beyond
    // it, or too large for its loose bound (a world-wide ground slab), go to the outside list;
    // the octree then resolves the core to its own box sizes instead of the outliers' distance.
    const detail::RootBounds core = detail::robust_root_bounds(entries, robust);
    root_side_ = 0;
    for (int a = 0; a < 3; ++a) {
        root_min_[a] = core.lo[a];
        root_side_ = std::max(root_side_, core.hi[a] - core.lo[a]);
    }
    if (!(root_side_ > 0)) root_side_ = 1;
    Node root;
    root.cell = Cell{};
    std::tie(root.strict, root.loose) = cell_bounds(root.cell);
    nodes_.push_back(std::move(root));
    // Everything goes to the root first, then splits push boxes down level by level.
    std::vector<Entry>& at_root = nodes_[0].entries;
    at_root.reserve(entries.size());
    for (Entry e : entries) {
        const std::optional<Cell> ideal = ideal_cell(e.box);
        items_.emplace(e.id, Item{e.box, !ideal});
        if (!ideal) {
            outside_.push_back(e);
            continue;
        }
        e.ideal = *ideal;
        at_root.push_back(e);
    }
    inside_count_ = at_root.size();
    nodes_[0].subtree_count = static_cast<std::uint32_t>(inside_count_);
    maybe_split(0);
}

void LooseOctree::maybe_split(std::uint32_t index) {
    {
        Node& node = nodes_[index];
        const std::uint32_t depth = node.cell.depth;
        if (!node.is_leaf() || node.entries.size() <= config_.capacity ||
            depth >= config_.max_depth ||
            std::none_of(node.entries.begin(), node.entries.end(),
                         [depth](const Entry& e) { return e.ideal.depth > depth; })) {
            index_crowded(node);
            return;
        }
    }
    const auto first = static_cast<std::uint32_t>(nodes_.size());
    const Cell parent = nodes_[index].cell;
    for (std::uint32_t c = 0; c < 8; ++c) {
        Node child;
        child.cell = Cell{parent.depth + 1, 2 * parent.x + (c & 1u), 2 * parent.y + ((c >> 1) & 1u),
                          2 * parent.z + ((c >> 2) & 1u)};
        std::tie(child.strict, child.loose) = cell_bounds(child.cell);
        nodes_.push_back(std::move(child));
    }
    Node& node = nodes_[index];
    node.first_child = first;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < node.entries.size(); ++i) {
        const Entry e = node.entries[i];
        if (e.ideal.depth == node.cell.depth) {
            node.entries[kept++] = e;
            continue;
        }
        Node& child = nodes_[first + child_slot(e.ideal, node.cell.depth + 1)];
        child.entries.push_back(e);
        ++child.subtree_count;
    }
    nodes_[index].entries.resize(kept);
    nodes_[index].entries.shrink_to_fit();
    nodes_[index].index = {};
    index_crowded(nodes_[index]);
    for (std::uint32_t c = 0; c < 8; ++c) maybe_split(first + c);
}

// The deepest allocated octant on the path to `ideal` (the pseudocode's findBestFittingOctant).
std::uint32_t LooseOctree::find_node(const Cell& ideal) const {
    std::uint32_t index = 0;
    while (!nodes_[index].is_leaf() && nodes_[index].cell.depth < ideal.depth) {
        index = nodes_[index].first_child + child_slot(ideal, nodes_[index].cell.depth + 1);
    }
    return index;
}

// The octant of a box whose ideal octant is `ideal` (find_node's), counting the box in or out of
// the subtree counts along the path there.
std::uint32_t LooseOctree::count_path(const Cell& ideal, bool added) {
    std::uint32_t index = 0;
    for (;;) {
        std::uint32_t& count = nodes_[index].subtree_count;
        count = added ? count + 1 : count - 1;
        if (nodes_[index].is_leaf() || nodes_[index].cell.depth >= ideal.depth) return index;
        index = nodes_[index].first_child + child_slot(ideal, nodes_[index].cell.depth + 1);
    }
}

bool LooseOctree::tree_insert(Entry entry) {
    const std::optional<Cell> ideal = ideal_cell(entry.box);
    if (!ideal) return false;
    entry.ideal = *ideal;
    const std::uint32_t index = count_path(entry.ideal, true);
    detail::index_insert(nodes_[index].entries, nodes_[index].index, entry);
    maybe_split(index);
    return true;
}

void LooseOctree::tree_remove(std::uint32_t id, const Box& box) {
    // The box sits where tree_insert put it: the same O(1) ideal cell, the same path.
    Node& node = nodes_[count_path(*ideal_cell(box), false)];
    detail::index_erase(node.entries, node.index, detail::position_of(node.entries, id));
}

// ---- queries ---------------------------------------------------------------------------------

// Calls visit(node) for every non-empty octant whose loose bound overlaps `region`.
template <class Visit>
void LooseOctree::descend(const Box& region, std::vector<std::uint32_t>& stack,
                          Visit&& visit) const {
    if (nodes_.empty() || nodes_[0].subtree_count == 0 || !overlaps(region, nodes_[0].loose)) {
        return;
    }
    stack.clear();
    stack.push_back(0);
    while (!stack.empty()) {
        const Node& node = nodes_[stack.back()];
        stack.pop_back();
        ++stats_.nodes_visited;
        visit(node);
        if (node.is_leaf()) continue;
        for (std::uint32_t c = 0; c < 8; ++c) {
            const Node& child = nodes_[node.first_child + c];
            if (child.subtree_count > 0 && overlaps(region, child.loose)) {
                stack.push_back(node.first_child + c);
            }
        }
    }
}

void LooseOctree::self_pairs(std::vector<Pair>& out) const {
    std::vector<std::uint32_t> stack, order;
    const auto emit = [this, &out](std::uint32_t a, std::uint32_t b) { report_pair(out, a, b); };
    // Per octant, one descent with the bounds of its boxes: a pair of boxes stored in octants
    // A and B is met from the shallower one, or at equal depth from the lower index (inside one
    // octant, i < j).
    for (std::uint32_t h = 0; h < nodes_.size(); ++h) {
        const Node& home = nodes_[h];
        if (home.entries.empty()) continue;
        Box bounds = home.entries[0].box;
        for (const Entry& e : home.entries) bounds = merge(bounds, e.box);
        const std::uint32_t depth = home.cell.depth;
        descend(bounds, stack, [&](const Node& node) {
            if (node.cell.depth < depth || node.entries.empty()) return;
            const bool same = &node == &home;
            if (node.cell.depth == depth && !same && &node < &home) return;
            ++stats_.leaves_visited;
            if (!same) {
                // Two octants' lists: each box of the shorter one looks up the window it can
                // meet in the longer one's index (long boxes crowd the octants of their longest
                // side: on the line scenes thousands of parallel boxes lie in each octant, and
                // testing two such lists all against all made self-pairs quadratic).
                detail::cross_pairs(home.entries, home.index, home.loose, node.entries, node.index,
                                    node.loose, stats_.box_tests, emit);
                return;
            }
            // The octant's own boxes (sorted and swept when crowded).
            detail::list_pairs(
                home.entries, order, stats_.box_tests,
                [](const Entry&, const Entry&) { return true; }, emit);
        });
    }
    // Outside boxes: against the later outside boxes and the whole tree.
    detail::outside_pairs(outside_, stats_.box_tests, emit, [&](const Entry& a) {
        descend(a.box, stack, [&](const Node& node) {
            ++stats_.leaves_visited;
            const int axis = node.index.active() ? node.index.axis : 0;
            detail::for_each_meeting(node.entries, node.index, a.box.min[axis], a.box.max[axis],
                                     stats_.box_tests, [&](const Entry& b) {
                                         if (overlaps(a.box, b.box)) emit(a.id, b.id);
                                     });
        });
    });
}

void LooseOctree::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    stats_.box_tests += outside_.size();
    for (const Entry& e : outside_) {
        if (overlaps(region, e.box)) out.push_back(e.id);
    }
    std::vector<std::uint32_t> stack;
    descend(region, stack, [&](const Node& node) {
        if (node.entries.empty()) return;
        ++stats_.leaves_visited;
        const int axis = node.index.active() ? node.index.axis : 0;
        detail::for_each_meeting(node.entries, node.index, region.min[axis], region.max[axis],
                                 stats_.box_tests, [&](const Entry& e) {
                                     if (overlaps(region, e.box)) out.push_back(e.id);
                                 });
    });
}

std::optional<RayHit> LooseOctree::ray_cast(const Ray& ray) const {
    std::optional<RayHit> best = outside_ray_hit(ray);
    if (nodes_.empty() || nodes_[0].subtree_count == 0) return best;
    // A loose bound's entry t never exceeds that of a box inside it (the slab test is monotone
    // in the bounds), so an octant entered after the best hit is skipped.
    detail::walk_ray(
        nodes_, ray_box_entry(ray, nodes_[0].loose),
        [&](const detail::OctantVisit& v) {
            if (best && v.t > best->t) return false;
            const Node& node = nodes_[v.node];
            ++stats_.nodes_visited;
            if (!node.entries.empty()) {
                // Every box of the octant is inside its loose bound: hit at t >= v.t, on the
                // part of the ray inside that bound.
                ++stats_.leaves_visited;
                detail::ray_scan_closest(node.entries, node.index, ray, v.t, node.loose,
                                         stats_.box_tests, best);
            }
            return true;
        },
        [&](std::uint32_t child) -> std::optional<float> {
            if (nodes_[child].subtree_count == 0) return std::nullopt;
            return ray_box_entry(ray, nodes_[child].loose);
        });
    return best;
}

Status LooseOctree::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0) return Status::success();
    // Node keys are point_box_distance of the loose bounds, which contain every box below.
    // A crowded octant opens into cursors walking its run outwards from p (queue nodes
    // numbered from nodes_.size() on).
    detail::ListKnn knn(nodes_, outside_, p, stats_.box_tests);
    if (!nodes_.empty() && nodes_[0].subtree_count > 0)
        knn.queue.push_node(point_box_distance(p, nodes_[0].loose), 0);
    knn.search(k, out, [&](std::uint32_t index, best_first::Queue& q) {
        const Node& node = nodes_[index];
        ++stats_.nodes_visited;
        if (!node.entries.empty()) {
            ++stats_.leaves_visited;
            knn.open(index, q);
        }
        if (node.is_leaf()) return;
        for (std::uint32_t c = 0; c < 8; ++c) {
            const std::uint32_t child = node.first_child + c;
            if (nodes_[child].subtree_count == 0) continue;
            q.push_node(point_box_distance(p, nodes_[child].loose), child);
        }
    });
    return Status::success();
}

// ---- invariants ------------------------------------------------------------------------------

std::size_t LooseOctree::size() const {
    return items_.size();
}

Status LooseOctree::validate() const {
    std::size_t stored = 0;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const Node& node = nodes_[i];
        const std::string where = "octant " + std::to_string(i);
        const auto [strict, loose] = cell_bounds(node.cell);
        if (!(strict == node.strict) || !(loose == node.loose)) {
            return broken(where + " has wrong bounds");
        }
        if (i == 0 && !(node.cell == Cell{})) return broken("the root is not cell (0, 0, 0, 0)");
        std::size_t count = node.entries.size();
        if (!node.is_leaf()) {
            if (node.first_child + 8 > nodes_.size() || node.first_child <= i) {
                return broken(where + " has a bad child index");
            }
            for (std::uint32_t c = 0; c < 8; ++c) {
                const Node& child = nodes_[node.first_child + c];
                const Cell want{node.cell.depth + 1, 2 * node.cell.x + (c & 1u),
                                2 * node.cell.y + ((c >> 1) & 1u),
                                2 * node.cell.z + ((c >> 2) & 1u)};
                if (!(child.cell == want)) return broken(where + " child has the wrong cell");
                if (!encloses(node.loose, child.loose)) {
                    return broken(where + " child's loose bound sticks out");
                }
                count += child.subtree_count;
            }
        }
        if (count != node.subtree_count) return broken(where + " has a wrong subtree count");
        if (node.cell.depth > config_.max_depth) return broken(where + " is too deep");
        bool any_deeper = false;
        for (const Entry& e : node.entries) {
            auto it = items_.find(e.id);
            if (it == items_.end()) return broken(where + " holds an unknown id", e.id);
            if (it->second.outside || !(it->second.box == e.box)) {
                return broken(where + " holds a stale box", e.id);
            }
            const std::optional<Cell> ideal = ideal_cell(e.box);
            if (!ideal || !(*ideal == e.ideal)) return broken(where + " stale ideal cell", e.id);
            if (e.ideal.depth < node.cell.depth || find_node(e.ideal) != i) {
                return broken(where + " is not the deepest octant on the box's path", e.id);
            }
            if (!node.is_leaf() && e.ideal.depth != node.cell.depth) {
                return broken(where + " has children but keeps a deeper box", e.id);
            }
            if (!encloses(node.loose, e.box)) {
                return broken(where + " holds a box outside its loose bound", e.id);
            }
            // Centre in the strict cell (in double, as placed).
            const double side = std::ldexp(root_side_, -static_cast<int>(node.cell.depth));
            const std::uint32_t coord[3] = {node.cell.x, node.cell.y, node.cell.z};
            for (int a = 0; a < 3; ++a) {
                const double centre = 0.5 * (double(e.box.min[a]) + double(e.box.max[a]));
                const double lo = root_min_[a] + double(coord[a]) * side;
                if (centre < lo || centre > lo + side) {
                    return broken(where + " holds a box whose centre is outside it", e.id);
                }
            }
            any_deeper = any_deeper || e.ideal.depth > node.cell.depth;
        }
        if (const char* error = detail::index_error(node.entries, node.index)) {
            return broken(where + ": " + error);
        }
        if (node.entries.size() > detail::kCrowded && !node.index.active()) {
            return broken(where + " is crowded but not indexed");
        }
        if (node.is_leaf() && node.entries.size() > config_.capacity &&
            node.cell.depth < config_.max_depth && any_deeper) {
            return broken(where + " is over capacity but did not split");
        }
        stored += node.entries.size();
    }
    if (stored != inside_count_ || (!nodes_.empty() && nodes_[0].subtree_count != stored)) {
        return broken("stored box counts disagree");
    }
    return validate_outside([this](const Box& box) { return ideal_cell(box).has_value(); });
}

}  // namespace broadphase

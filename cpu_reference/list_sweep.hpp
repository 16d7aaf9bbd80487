// Crowded lists of boxes (an octree leaf, a loose octant's own boxes), shared by octree and
// loose_octree. Self-pairs by sort and sweep instead of all against all: sort on the axis where
// the min corners spread most against the boxes' mean extent, then test each box only against
// those starting before it ends (the sweep of Baraff's sweep and prune, on one list). Two lists
// (the loose octree's neighbouring octants) meet by the interval search below: each box of the
// shorter one looks up, in the longer one's index, the window of boxes it can meet.
//
// Queries get the same order, kept in the list itself (a SweepIndex): the boxes no longer than
// a bound E on that axis form a run sorted by their min, the longer ones a short tail scanned
// whole. A box meeting [lo, hi] on the axis starts in [lo - E, hi], found by binary search (the
// interval search of a sorted list of bounded-length intervals); a ray scans the run in its
// own direction from where it enters the list's cell and stops past the best hit so far; a
// k-nearest search walks the run outwards from the query point with two cursors in the best-
// first queue, each keyed by a lower bound of the distances it has left (Hjaltason & Samet
// 1999, the cursors standing for nodes). Every filter is conservative: results stay exact.
//
// Both octrees also share here their robust root (robust_root_bounds) and their outside list:
// the boxes the root does not take, kept in a plain list beside an id -> Item map, and the rule
// that rebuilds the tree when that list grows.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "best_first.hpp"
#include "broadphase/types.hpp"

namespace broadphase::detail {

/// An octant on a ray's depth-first stack, with the ray's entry parameter into it.
struct OctantVisit {
    std::uint32_t node;
    float t;
};

/// Pushes the octants children[0, count) (8 at most) onto a ray's depth-first stack, farthest
/// first, so that the nearest pops next; ties keep their order. Reorders `children`.
inline void push_nearest_last(std::vector<OctantVisit>& stack, OctantVisit* children, int count) {
    for (int i = 1; i < count; ++i) {  // insertion sort, farthest first
        for (int j = i; j > 0 && children[j - 1].t < children[j].t; --j) {
            std::swap(children[j - 1], children[j]);
        }
    }
    for (int i = 0; i < count; ++i) stack.push_back(children[i]);
}

/// Pushes the children first_child + [0, 8) that the ray enters (entry_t(child) is its entry
/// parameter, or nullopt to pass it by) onto a ray's depth-first stack, nearest last.
template <class EntryT>
void push_entered_children(std::vector<OctantVisit>& stack, std::uint32_t first_child,
                           EntryT&& entry_t) {
    OctantVisit children[8];
    int count = 0;
    for (std::uint32_t c = 0; c < 8; ++c) {
        const std::optional<float> t = entry_t(first_child + c);
        if (t) children[count++] = {first_child + c, *t};
    }
    push_nearest_last(stack, children, count);
}

/// A ray's front-to-back walk over an octree's octants (nodes[0] the root, a node's 8 children
/// consecutive from first_child): from the root, entered at `root_t` (nullopt: no walk),
/// visit(v) handles each octant popped, nearest entry first, and says whether to go on into its
/// children; those the ray enters (entry_t, as for push_entered_children) are pushed.
template <class Nodes, class Visit, class EntryT>
void walk_ray(const Nodes& nodes, std::optional<float> root_t, Visit&& visit, EntryT&& entry_t) {
    if (!root_t) return;
    std::vector<OctantVisit> stack = {{0, *root_t}};
    while (!stack.empty()) {
        const OctantVisit v = stack.back();
        stack.pop_back();
        if (visit(v) && !nodes[v.node].is_leaf()) {
            push_entered_children(stack, nodes[v.node].first_child, entry_t);
        }
    }
}

/// Lists with more entries than this are swept (self-pairs) and indexed (queries).
constexpr std::size_t kCrowded = 48;

/// The order of an indexed list: entries [0, sorted) ascending by box.min[axis], each with
/// max[axis] - min[axis] <= extent (in double) and inside `bounds`; entries [sorted, size) in
/// any order.
struct SweepIndex {
    static constexpr std::uint8_t kNone = 3;
    std::uint8_t axis = kNone;  ///< kNone: not indexed, every entry is scanned
    std::uint32_t sorted = 0;
    float extent = 0;
    Box bounds;  ///< holds the run (not shrunk on removal)
    bool active() const { return axis != kNone; }
};

/// Axis where the min corners spread most against the mean extent.
template <class Entries>
int spread_axis(const Entries& entries) {
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
    return axis;
}

/// Emits every overlapping pair (a.id, b.id) of `entries` (elements with `box` and `id`) for
/// which accept(a, b) holds; counts each box test in `box_tests`. `order` is scratch.
template <class Entries, class Accept, class Emit>
void sweep_list(const Entries& entries, std::vector<std::uint32_t>& order, WorkCounter& box_tests,
                Accept&& accept, Emit&& emit) {
    const std::size_t n = entries.size();
    const int axis = spread_axis(entries);
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

/// Emits every overlapping pair (a.id, b.id) of one list, a before b in it, for which
/// accept(a, b) holds: by sort and sweep when the list is crowded, else all against all (each
/// of the n(n-1)/2 tests counted in `box_tests`). `order` is scratch.
template <class Entries, class Accept, class Emit>
void list_pairs(const Entries& entries, std::vector<std::uint32_t>& order, WorkCounter& box_tests,
                Accept&& accept, Emit&& emit) {
    const std::size_t n = entries.size();
    if (n > kCrowded) {
        sweep_list(entries, order, box_tests, accept, emit);
        return;
    }
    box_tests += n * (n > 0 ? n - 1 : 0) / 2;
    for (std::size_t i = 0; i < n; ++i) {
        const auto& a = entries[i];
        for (std::size_t j = i + 1; j < n; ++j) {
            const auto& b = entries[j];
            if (overlaps(a.box, b.box) && accept(a, b)) emit(a.id, b.id);
        }
    }
}

inline double axis_extent(const Box& b, int axis) {
    return double(b.max[axis]) - double(b.min[axis]);
}

/// True when the closed box `outer` holds all of `inner`.
inline bool encloses(const Box& outer, const Box& inner) {
    return outer.min.x <= inner.min.x && outer.min.y <= inner.min.y && outer.min.z <= inner.min.z &&
           inner.max.x <= outer.max.x && inner.max.y <= outer.max.y && inner.max.z <= outer.max.z;
}

/// Outward rounding of a double to float, clamped to the finite range.
inline float round_up_float(double v) {
    if (v >= double(std::numeric_limits<float>::max())) return std::numeric_limits<float>::max();
    float f = static_cast<float>(v);
    if (double(f) < v) f = std::nextafter(f, std::numeric_limits<float>::infinity());
    return f;
}
inline float round_down_float(double v) {
    if (v <= double(std::numeric_limits<float>::lowest())) {
        return std::numeric_limits<float>::lowest();
    }
    float f = static_cast<float>(v);
    if (double(f) > v) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
    return f;
}

/// The robust root of both octrees trims at most this many centres from each end of each axis.
inline constexpr std::size_t kTrimmedPerSide = 32;

/// Per-axis bounds [lo, hi] (in double) of an octree's root, robust to a few far outliers and
/// world-wide boxes: the box centres of rank r and n-1-r (r = min(kTrimmedPerSide, n/64)) bound
/// a core [clo, chi], and the root spans [clo - w, chi + w] (w = chi - clo) clipped to the
/// scene's bounds. With robust = false (or too few boxes), the scene's bounds. `entries` is
/// non-empty; each has a `box`.
struct RootBounds {
    double lo[3], hi[3];
};
template <class Entry>
RootBounds robust_root_bounds(const std::vector<Entry>& entries, bool robust) {
    Box bounds = entries[0].box;
    for (const Entry& e : entries) bounds = merge(bounds, e.box);
    const std::size_t n = entries.size();
    const std::size_t r = robust ? std::min(kTrimmedPerSide, n / 64) : 0;
    RootBounds out;
    std::vector<double> centres(r == 0 ? 0 : n);
    for (int a = 0; a < 3; ++a) {
        out.lo[a] = bounds.min[a];
        out.hi[a] = bounds.max[a];
        if (r == 0) continue;
        for (std::size_t i = 0; i < n; ++i) {
            centres[i] = 0.5 * (double(entries[i].box.min[a]) + entries[i].box.max[a]);
        }
        std::nth_element(centres.begin(), centres.begin() + std::ptrdiff_t(r), centres.end());
        const double core_lo = centres[r];
        std::nth_element(centres.begin(), centres.end() - 1 - std::ptrdiff_t(r), centres.end());
        const double core_hi = centres[n - 1 - r];
        const double w = core_hi - core_lo;
        out.lo[a] = std::max(out.lo[a], core_lo - w);
        out.hi[a] = std::min(out.hi[a], core_hi + w);
    }
    return out;
}

// ---- the outside list --------------------------------------------------------------------------
// Both octrees keep the boxes their root does not take in a plain list, tested linearly, next to
// a hash map id -> Item{box, outside}; when the list outgrows kOutsideSlack plus a quarter of
// the boxes in the tree, the whole octree is rebuilt (its new root takes most of them in).

inline constexpr std::size_t kOutsideSlack = 16;

/// True when an outside list of `outside` boxes beside `inside` boxes in the tree calls for a
/// rebuild.
inline bool outside_overflows(std::size_t outside, std::size_t inside) {
    return outside > kOutsideSlack + inside / 4;
}

/// One entry per box, boxes[i] with id i (the ids build() gives).
template <class Entry>
std::vector<Entry> numbered_entries(std::span<const Box> boxes) {
    std::vector<Entry> entries(boxes.size());
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        entries[i].box = boxes[i];
        entries[i].id = static_cast<std::uint32_t>(i);
    }
    return entries;
}

/// One entry per stored box of `items` (id -> item with a `box`), ascending by id: a tree
/// rebuilt from them does not depend on the hash map's order.
template <class Entry, class Items>
std::vector<Entry> entries_by_id(const Items& items) {
    std::vector<Entry> all;
    all.reserve(items.size());
    for (const auto& [id, item] : items) {
        Entry e{};
        e.box = item.box;
        e.id = id;
        all.push_back(e);
    }
    std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.id < b.id; });
    return all;
}

/// Position of the entry with `id` in `list`, or list.size() when there is none.
template <class Entries>
std::size_t position_of(const Entries& list, std::uint32_t id) {
    return std::size_t(
        std::find_if(list.begin(), list.end(), [id](const auto& e) { return e.id == id; }) -
        list.begin());
}

/// Removes the entry with `id` (present) from an unordered list: the last entry takes its place.
template <class Entry>
void erase_by_id(std::vector<Entry>& list, std::uint32_t id) {
    list[position_of(list, id)] = list.back();
    list.pop_back();
}

/// The outside list's share of self_pairs: each outside box a meets the later outside boxes
/// (one box test each), then the tree (against_tree(a)); so every pair with an outside box is
/// found once.
template <class Entry, class Emit, class AgainstTree>
void outside_pairs(const std::vector<Entry>& outside, WorkCounter& box_tests, Emit&& emit,
                   AgainstTree&& against_tree) {
    for (std::size_t i = 0; i < outside.size(); ++i) {
        const Entry& a = outside[i];
        for (std::size_t j = i + 1; j < outside.size(); ++j) {
            ++box_tests;
            if (overlaps(a.box, outside[j].box)) emit(a.id, outside[j].id);
        }
        against_tree(a);
    }
}

/// Reorders `entries` into an index on their spread axis. The run holds the boxes no longer
/// than 4 times the median length on that axis; the longer ones form the tail.
template <class Entries>
SweepIndex make_index(Entries& entries) {
    SweepIndex index;
    if (entries.empty()) return index;
    const int axis = spread_axis(entries);
    std::vector<double> lengths(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) lengths[i] = axis_extent(entries[i].box, axis);
    const auto middle = lengths.begin() + std::ptrdiff_t(lengths.size() / 2);
    std::nth_element(lengths.begin(), middle, lengths.end());
    const double limit = 4.0 * *middle;
    const auto tail = std::stable_partition(entries.begin(), entries.end(), [&](const auto& e) {
        return axis_extent(e.box, axis) <= limit;
    });
    std::stable_sort(entries.begin(), tail, [axis](const auto& a, const auto& b) {
        return a.box.min[axis] < b.box.min[axis];
    });
    double extent = 0;
    index.bounds = entries.front().box;
    for (auto it = entries.begin(); it != tail; ++it) {
        extent = std::max(extent, axis_extent(it->box, axis));
        index.bounds = merge(index.bounds, it->box);
    }
    index.axis = static_cast<std::uint8_t>(axis);
    index.sorted = static_cast<std::uint32_t>(tail - entries.begin());
    index.extent = round_up_float(extent);
    return index;
}

/// Adds `entry` to an indexed or plain list, keeping the index.
template <class Entries, class Entry>
void index_insert(Entries& entries, SweepIndex& index, const Entry& entry) {
    if (!index.active() || axis_extent(entry.box, index.axis) > double(index.extent)) {
        entries.push_back(entry);
        return;
    }
    const int axis = index.axis;
    const auto pos =
        std::upper_bound(entries.begin(), entries.begin() + index.sorted, entry.box.min[axis],
                         [axis](float v, const auto& e) { return v < e.box.min[axis]; });
    entries.insert(pos, entry);
    index.bounds = index.sorted == 0 ? entry.box : merge(index.bounds, entry.box);
    ++index.sorted;
}

/// Removes entries[pos], keeping the index.
template <class Entries>
void index_erase(Entries& entries, SweepIndex& index, std::size_t pos) {
    if (index.active() && pos < index.sorted) {
        entries.erase(entries.begin() + std::ptrdiff_t(pos));
        --index.sorted;
        return;
    }
    entries[pos] = entries.back();
    entries.pop_back();
}

/// Empty when the index holds; else what is wrong.
template <class Entries>
const char* index_error(const Entries& entries, const SweepIndex& index) {
    if (!index.active()) return index.sorted == 0 ? nullptr : "an unindexed list has a run";
    if (index.axis > 2 || index.sorted > entries.size()) return "a bad list index";
    for (std::size_t i = 0; i < index.sorted; ++i) {
        if (axis_extent(entries[i].box, index.axis) > double(index.extent)) {
            return "a list index run holds a box longer than its bound";
        }
        if (!(merge(index.bounds, entries[i].box) == index.bounds)) {
            return "a list index run holds a box outside its bounds";
        }
        if (i > 0 && entries[i].box.min[index.axis] < entries[i - 1].box.min[index.axis]) {
            return "a list index run is out of order";
        }
    }
    return nullptr;
}

namespace list_index {

// Slack on a double computation with coordinates of magnitude `scale`: far above its rounding.
inline double slack(double scale) {
    return 1e-12 * scale;
}

// First run position whose min is >= v (binary search; counts its steps as box tests).
template <class Entries>
std::size_t first_at_least(const Entries& entries, const SweepIndex& index, double v,
                           WorkCounter& box_tests) {
    const int axis = index.axis;
    box_tests += std::bit_width(std::uint64_t(index.sorted));
    return std::size_t(
        std::partition_point(entries.begin(), entries.begin() + index.sorted,
                             [&](const auto& e) { return double(e.box.min[axis]) < v; }) -
        entries.begin());
}

}  // namespace list_index

/// Calls visit(entry) for every entry that may meet [lo, hi] on the index axis (every entry of
/// an unindexed list), counting each one in `box_tests`.
template <class Entries, class Visit>
void for_each_meeting(const Entries& entries, const SweepIndex& index, float lo, float hi,
                      WorkCounter& box_tests, Visit&& visit) {
    if (!index.active()) {
        box_tests += entries.size();
        for (const auto& e : entries) visit(e);
        return;
    }
    const int axis = index.axis;
    const double from = double(lo) - double(index.extent) -
                        list_index::slack(std::abs(double(lo)) + double(index.extent));
    for (std::size_t i = list_index::first_at_least(entries, index, from, box_tests);
         i < index.sorted && entries[i].box.min[axis] <= hi; ++i) {
        ++box_tests;
        visit(entries[i]);
    }
    box_tests += entries.size() - index.sorted;
    for (std::size_t i = index.sorted; i < entries.size(); ++i) visit(entries[i]);
}

/// Emits every overlapping pair (x.id, y.id) with x from `a` and y from `b`, two lists with
/// their indexes; `a_bound` holds every box of `a`, `b_bound` every box of `b`. The boxes of one
/// list that reach the other's bound look up the window they can meet in the other's index
/// (the shorter list looks up the longer one when both are indexed), so two crowded lists cost
/// about (shorter size) * log(longer size) tests, not their product; two plain lists are tested
/// all against all. Counts each box test and search step in `box_tests`.
template <class A, class B, class Emit>
void cross_pairs(const A& a, const SweepIndex& a_index, const Box& a_bound, const B& b,
                 const SweepIndex& b_index, const Box& b_bound, WorkCounter& box_tests,
                 Emit&& emit) {
    const auto look_up = [&box_tests, &emit](const auto& from, const Box& into_bound,
                                             const auto& into, const SweepIndex& into_index) {
        const int axis = into_index.axis;
        for (const auto& x : from) {
            if (!overlaps(x.box, into_bound)) continue;
            for_each_meeting(into, into_index, x.box.min[axis], x.box.max[axis], box_tests,
                             [&](const auto& y) {
                                 if (overlaps(x.box, y.box)) emit(x.id, y.id);
                             });
        }
    };
    if (b_index.active() && (!a_index.active() || a.size() <= b.size())) {
        look_up(a, b_bound, b, b_index);
    } else if (a_index.active()) {
        look_up(b, a_bound, a, a_index);
    } else {
        for (const auto& x : a) {
            if (!overlaps(x.box, b_bound)) continue;
            box_tests += b.size();
            for (const auto& y : b) {
                if (overlaps(x.box, y.box)) emit(x.id, y.id);
            }
        }
    }
}

/// Ray cast over one list whose hits that matter lie on the ray's part inside `cell`, entered
/// at t_enter: calls consider(entry) for every entry that may be hit there before bound() (the
/// best t so far, or the ray's tmax), in the ray's direction along the index axis, on the part
/// of the ray inside both the cell and the run's bounds.
template <class Entries, class Consider, class Bound>
void ray_scan(const Entries& entries, const SweepIndex& index, const Ray& ray, float t_enter,
              const Box& cell, WorkCounter& box_tests, Consider&& consider, Bound&& bound) {
    box_tests += entries.size() - (index.active() ? index.sorted : 0);
    for (std::size_t i = index.active() ? index.sorted : 0; i < entries.size(); ++i) {
        consider(entries[i]);
    }
    if (!index.active()) return;
    const int axis = index.axis;
    const float lo = cell.min[axis], hi = cell.max[axis];
    const double o = ray.origin[axis], d = ray.dir[axis], extent = index.extent;
    // Where the ray is inside the cell and the run's bounds, in double (the margin below covers
    // the rounding). Parallel to an axis outside the bounds (exact, as in the slab test): no hit.
    double t_in = t_enter, t_exit = std::numeric_limits<double>::infinity();
    for (int a = 0; a < 3; ++a) {
        const double from = std::max(cell.min[a], index.bounds.min[a]);
        const double to = std::min(cell.max[a], index.bounds.max[a]);
        if (ray.dir[a] == 0.0f) {
            if (!(index.bounds.min[a] <= ray.origin[a] && ray.origin[a] <= index.bounds.max[a])) {
                return;
            }
            continue;
        }
        const double t0 = (from - ray.origin[a]) / ray.dir[a];
        const double t1 = (to - ray.origin[a]) / ray.dir[a];
        t_in = std::max(t_in, std::min(t0, t1));
        t_exit = std::min(t_exit, std::max(t0, t1));
    }
    const auto until = [&] { return std::min(double(bound()), t_exit); };
    // The ray's coordinate on the axis at t, in double, clamped to the cell. The float slab
    // test may place a hit a few ulps off that line: the margin covers it many times over.
    const double margin = 1e-5 * (std::abs(o) + std::abs(double(lo)) + std::abs(double(hi))) +
                          double(std::numeric_limits<float>::denorm_min());
    const auto at = [&](double t) {
        return std::clamp(o + t * d, double(lo) - margin, double(hi) + margin);
    };
    if (d == 0.0) {
        // Parallel to the axis: the slab test asks lo <= o <= hi exactly.
        const double from = o - extent - list_index::slack(std::abs(o) + extent);
        for (std::size_t i = list_index::first_at_least(entries, index, from, box_tests);
             i < index.sorted && double(entries[i].box.min[axis]) <= o; ++i) {
            ++box_tests;
            consider(entries[i]);
        }
        return;
    }
    const double start = at(t_in);
    if (d > 0) {
        // Up the axis from the entry point: a box hit before bound() starts before the ray's
        // coordinate at bound().
        const double from = start - margin - extent - list_index::slack(std::abs(start) + extent);
        for (std::size_t i = list_index::first_at_least(entries, index, from, box_tests);
             i < index.sorted && double(entries[i].box.min[axis]) <= at(until()) + margin; ++i) {
            ++box_tests;
            consider(entries[i]);
        }
        return;
    }
    // Down the axis: a box hit before bound() ends above the ray's coordinate there.
    const double to = start + margin;
    std::size_t i = index.sorted;
    {
        // Last run position with min <= to.
        const std::size_t past = list_index::first_at_least(
            entries, index, std::nextafter(to, std::numeric_limits<double>::infinity()), box_tests);
        i = past;
    }
    while (i > 0) {
        --i;
        const double end = at(until()) - margin;
        if (double(entries[i].box.min[axis]) + extent + list_index::slack(std::abs(end) + extent) <
            end) {
            break;
        }
        ++box_tests;
        consider(entries[i]);
    }
}

/// ray_scan keeping the closest hit in `best` (bounded by it, or by the ray's tmax).
template <class Entries>
void ray_scan_closest(const Entries& entries, const SweepIndex& index, const Ray& ray,
                      float t_enter, const Box& cell, WorkCounter& box_tests,
                      std::optional<RayHit>& best) {
    ray_scan(
        entries, index, ray, t_enter, cell, box_tests,
        [&](const auto& e) { keep_closer(best, e.id, ray_box_entry(ray, e.box)); },
        [&] { return best ? best->t : ray.tmax; });
}

/// A k-nearest cursor over one indexed list: the run entries from `pos` up (up) or down.
struct Cursor {
    std::uint32_t list = 0;  ///< the caller's node index
    std::uint32_t pos = 0;
    bool up = true;
};

namespace list_index {

// A lower bound of the distances of the entries a cursor has left (positions pos.. up, or
// ..pos down), rounded so that it never passes point_box_distance's float.
template <class Entries>
float cursor_key(const Entries& entries, const SweepIndex& index, const Vec3& p, const Cursor& c) {
    const int axis = index.axis;
    const double min = entries[c.pos].box.min[axis];
    const double gap =
        c.up ? min - double(p[axis]) : double(p[axis]) - (min + double(index.extent));
    if (!(gap > 0)) return 0.0f;
    const double bound =
        gap - slack(std::abs(min) + std::abs(double(p[axis])) + double(index.extent)) - 1e-12 * gap;
    return bound > 0 ? static_cast<float>(bound) * (1.0f - 1e-6f) : 0.0f;
}

}  // namespace list_index

/// Opens one list for a best-first k-nearest search: pushes its unsorted entries as boxes and
/// its run as up to two cursors (added to `cursors`, pushed as node base + their position in
/// `cursors`).
template <class Entries>
void knn_open(const Entries& entries, const SweepIndex& index, const Vec3& p, std::uint32_t list,
              std::vector<Cursor>& cursors, std::uint32_t base, best_first::Queue& queue,
              WorkCounter& box_tests) {
    const std::size_t from = index.active() ? index.sorted : 0;
    box_tests += entries.size() - from;
    for (std::size_t i = from; i < entries.size(); ++i) {
        queue.push_box(point_box_distance(p, entries[i].box), entries[i].id);
    }
    if (!index.active() || index.sorted == 0) return;
    const std::size_t split =
        list_index::first_at_least(entries, index, double(p[index.axis]), box_tests);
    const auto push = [&](const Cursor& c) {
        cursors.push_back(c);
        queue.push_node(list_index::cursor_key(entries, index, p, c),
                        base + static_cast<std::uint32_t>(cursors.size() - 1));
    };
    if (split < index.sorted) push(Cursor{list, static_cast<std::uint32_t>(split), true});
    if (split > 0) push(Cursor{list, static_cast<std::uint32_t>(split - 1), false});
}

/// Advances the cursor cursors[slot] (just popped from the queue): pushes its entry as a box
/// and itself, moved one on, as the same node again while it has entries left.
template <class Entries>
void knn_step(const Entries& entries, const SweepIndex& index, const Vec3& p,
              std::vector<Cursor>& cursors, std::uint32_t slot, std::uint32_t base,
              best_first::Queue& queue, WorkCounter& box_tests) {
    Cursor& c = cursors[slot];
    ++box_tests;
    queue.push_box(point_box_distance(p, entries[c.pos].box), entries[c.pos].id);
    if (c.up ? c.pos + 1 >= index.sorted : c.pos == 0) return;
    c.pos = c.up ? c.pos + 1 : c.pos - 1;
    queue.push_node(list_index::cursor_key(entries, index, p, c), base + slot);
}

/// A best-first k-nearest search over an octree's nodes (elements with `entries` and `index`),
/// shared by octree and loose_octree: an indexed list opens into cursors walking its run
/// outwards from p, queued as nodes numbered from nodes.size() on.
template <class Nodes>
class ListKnn {
public:
    /// Starts with every entry of `outside` (the octree's boxes outside its root) on the queue as
    /// a box.
    template <class Entries>
    ListKnn(const Nodes& nodes, const Entries& outside, const Vec3& p, WorkCounter& box_tests)
        : nodes_(nodes),
          p_(p),
          box_tests_(box_tests),
          base_(static_cast<std::uint32_t>(nodes.size())) {
        box_tests_ += outside.size();
        for (const auto& e : outside) queue.push_box(point_box_distance(p_, e.box), e.id);
    }

    /// Opens the list of node `index` into `q`.
    void open(std::uint32_t index, best_first::Queue& q) {
        const auto& node = nodes_[index];
        knn_open(node.entries, node.index, p_, index, cursors_, base_, q, box_tests_);
    }

    /// Runs the search: expand(index, queue) handles each tree node popped; cursors are
    /// advanced here.
    template <class Expand>
    void search(std::size_t k, std::vector<Neighbor>& out, Expand&& expand, bool repeats = false) {
        queue.search(
            k, out,
            [&](std::uint32_t index, best_first::Queue& q) {
                if (index < base_) {
                    expand(index, q);
                    return;
                }
                const auto& list = nodes_[cursors_[index - base_].list];
                knn_step(list.entries, list.index, p_, cursors_, index - base_, base_, q,
                         box_tests_);
            },
            repeats);
    }

    best_first::Queue queue;

private:
    const Nodes& nodes_;
    const Vec3& p_;
    WorkCounter& box_tests_;
    std::uint32_t base_;
    std::vector<Cursor> cursors_;
};

}  // namespace broadphase::detail

// Bulk-loaded R-trees (the bulk loading of magley's survey, docs/references.md): Nearest-X
// (Roussopoulos and Leifker, SIGMOD 1985), Sort-Tile-Recursive (Leutenegger, Lopez and Edgington,
// ICDE 1997) and the Hilbert packed R-tree (Kamel and Faloutsos, CIKM 1993).
//
// All three order the box centroids, cut the order into runs of `node_capacity` boxes (the
// leaves) and repeat on the leaves' bounds until one node is left. Packing is bottom-up into a
// flat array: level 0 (the leaves) first, the root last.
// - Nearest-X sorts once, along the axis the centroids spread widest on (the remedy for the
//   XLine scene, where all centroids align on x). The nodes of a level inherit the order of
//   their children, so upper levels are packed in place without sorting again.
// - STR in 3D, with P = ceil(n / b) pages and S = ceil(P^(1/3)): sort along the first axis and
//   cut into slabs of S^2 b, sort each slab along the second axis and cut into slices of
//   S' b (S' = ceil(sqrt(pages of the slab))), sort each slice along the third axis and cut
//   into runs of b. The axes are taken in decreasing centroid spread, ties to the lower axis.
//   An axis along which the centroids spread no wider than the median box extent is not tiled
//   (slicing a band that every box spans, like XLine's x or a 2D scene's z, only stretches the
//   tiles along the other axes): with two tiled axes this is the paper's 2D STR (sqrt), with
//   one it is a sort. Slab and slice sizes are multiples of b, so only the last node is not
//   full. As in the paper, every upper level is tiled again, over the centroids of its nodes'
//   bounds (each node keeps its child range, so a level's child ranges tile the level below
//   but no longer follow one another in order); a level's one partial node is kept out of the
//   tiling and stays last.
// - Hilbert sorts by the 63-bit 3D Hilbert index (Skilling's transform) of the centroid in rank
//   space (Qi, Tao, Chang and Zhang, PVLDB 2018): each coordinate is replaced by its rank among
//   the centroids, scaled to 21 bits per axis, the untiled axes (as for STR) set to 0; upper
//   levels keep the order, as in Kamel and Faloutsos. (21 bits rather than the LBVH's 10: a
//   million boxes along a line would otherwise share a thousand codes and fall back to id
//   order inside each.)
// "Spread" is the range of the middle 98% of the centroids and "box extent" the median one, so
// that a few boxes far out of the world or one box as wide as it (issue 9's `level` scene)
// change neither which axes are tiled nor how finely: STR cuts by counts and Hilbert keys are
// ranks, so both cut every scene into tiles of equal counts wherever its boxes are.
// Ties in any sort key go to the smaller id (or node index), so builds are deterministic.
#include "bulk_rtree.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <string>

#include "best_first.hpp"
#include "broadphase/scene.hpp"
#include "lbvh.hpp"

namespace broadphase {
namespace {

struct Entry {
    Vec3 c;             // centroid
    std::uint32_t ref;  // box id (leaf level) or node index (upper levels)
};

// Halves first, so that boxes near the float limits do not overflow to infinity.
// The fraction of the centroids left out at each end when measuring how far they spread
// along an axis: a few boxes fallen far out of the world must not decide how the rest are cut.
constexpr double kTrim = 0.01;

// Robust per-axis measures of a set of boxes (or nodes): how far their centroids spread, the
// range between the kTrim and 1 - kTrim quantiles, and how wide a typical one is, the median
// extent. Unlike the range, the variance and the mean extent, neither moves when a few boxes
// are far away or one is as wide as the world (issue 9's `level` scene: a ground slab 2e6 wide
// made the mean extent along x and z larger than the whole play area, so only y was tiled and
// every leaf was a thin layer across the level).
struct AxisSpread {
    double spread[3] = {0, 0, 0};
    double extent[3] = {0, 0, 0};
};

// The k-th smallest and the k-th largest of v (k < v.size()): one pass keeping the k + 1
// smallest and largest values in two heaps; most values only meet the heaps' tops.
std::pair<float, float> kth_from_both_ends(std::span<const float> v, std::size_t k,
                                           std::vector<float>& low, std::vector<float>& high) {
    low.assign(v.begin(), v.begin() + k + 1);
    high = low;
    std::make_heap(low.begin(), low.end());                      // the largest on top
    std::make_heap(high.begin(), high.end(), std::greater<>{});  // the smallest on top
    for (std::size_t i = k + 1; i < v.size(); ++i) {
        if (v[i] < low.front()) {
            std::pop_heap(low.begin(), low.end());
            low.back() = v[i];
            std::push_heap(low.begin(), low.end());
        }
        if (v[i] > high.front()) {
            std::pop_heap(high.begin(), high.end(), std::greater<>{});
            high.back() = v[i];
            std::push_heap(high.begin(), high.end(), std::greater<>{});
        }
    }
    return {low.front(), high.front()};
}

// box_of(ref) is the box (or node bounds) of an entry; without `extents`, only the spread.
template <class BoxOf>
AxisSpread axis_spread(std::span<const Entry> entries, BoxOf&& box_of, bool extents = true) {
    AxisSpread s;
    const std::size_t n = entries.size();
    if (n == 0) return s;
    const auto trim = static_cast<std::size_t>(kTrim * double(n - 1));
    std::vector<float> v(n), low, high;
    for (int a = 0; a < 3; ++a) {
        for (std::size_t k = 0; k < n; ++k) v[k] = entries[k].c[a];
        const auto [lo, hi] = kth_from_both_ends(v, trim, low, high);
        s.spread[a] = double(hi) - double(lo);
        if (!extents) continue;
        for (std::size_t k = 0; k < n; ++k) {
            const Box& b = box_of(entries[k].ref);
            v[k] = b.max[a] - b.min[a];
        }
        std::nth_element(v.begin(), v.begin() + n / 2, v.end());
        s.extent[a] = v[n / 2];
    }
    return s;
}

// Axes by decreasing centroid spread, ties to the lower axis (Nearest-X's sort axis first).
std::array<std::uint8_t, 3> axes_by_spread(const AxisSpread& s) {
    std::array<std::uint8_t, 3> axes{0, 1, 2};
    std::stable_sort(axes.begin(), axes.end(),
                     [&](std::uint8_t a, std::uint8_t b) { return s.spread[a] > s.spread[b]; });
    return axes;
}

// The axes STR tiles along and Hilbert keeps: those where the centroids spread wider than a
// typical box (or node) is wide. Slicing along an axis on which the boxes all overlap one
// another (the survey's XLine band, a 2D scene's z) only stretches the tiles along the others.
// The plan lists the tiled axes first, each group by decreasing spread; when no axis
// qualifies, the first one is still used.
struct AxisPlan {
    std::array<std::uint8_t, 3> axes{0, 1, 2};
    int tiled = 1;  ///< 1 to 3: how many of `axes` are tiled
};

AxisPlan plan_axes(const AxisSpread& s) {
    bool worth[3];
    for (int a = 0; a < 3; ++a) worth[a] = s.spread[a] > s.extent[a];
    AxisPlan plan;
    std::stable_sort(plan.axes.begin(), plan.axes.end(), [&](std::uint8_t a, std::uint8_t b) {
        return worth[a] != worth[b] ? worth[a] : s.spread[a] > s.spread[b];
    });
    plan.tiled = std::max(1, int(worth[0]) + int(worth[1]) + int(worth[2]));
    return plan;
}

// Sorts by (centroid on `axis`, ref); one comparator per axis, as Vec3::operator[] inside the
// comparator slows the sort down.
void sort_along(std::span<Entry> e, int axis) {
    if (axis == 0) {
        std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) {
            return a.c.x < b.c.x || (a.c.x == b.c.x && a.ref < b.ref);
        });
    } else if (axis == 1) {
        std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) {
            return a.c.y < b.c.y || (a.c.y == b.c.y && a.ref < b.ref);
        });
    } else {
        std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) {
            return a.c.z < b.c.z || (a.c.z == b.c.z && a.ref < b.ref);
        });
    }
}

std::uint64_t int_pow(std::uint64_t base, int exp) {
    std::uint64_t r = 1;
    for (int i = 0; i < exp; ++i) r *= base;
    return r;
}

// Smallest s with s^d >= p (p >= 1).
std::uint64_t ceil_root(std::uint64_t p, int d) {
    auto s = static_cast<std::uint64_t>(std::ceil(std::pow(double(p), 1.0 / d)));
    s = std::max<std::uint64_t>(s, 1);
    while (s > 1 && int_pow(s - 1, d) >= p) --s;
    while (int_pow(s, d) < p) ++s;
    return s;
}

// STR's group size at `dim` (0: slabs, 1: slices) for a range of `count` entries tiled along
// `dims` axes: with P = ceil(count / b) pages and S = ceil(P^(1 / (dims - dim))), groups of
// S^(dims - dim - 1) pages. At dim == dims - 1 the groups are the runs of b.
std::uint64_t str_group(std::uint64_t count, int dim, int dims, std::uint64_t b) {
    if (dim + 1 >= dims) return b;
    const std::uint64_t pages = std::max<std::uint64_t>((count + b - 1) / b, 1);
    return int_pow(ceil_root(pages, dims - dim), dims - dim - 1) * b;
}

// Sort-Tile-Recursive over `e` along axes[0 .. dims), axes[dim] first.
void str_tile(std::span<Entry> e, const AxisPlan& plan, int dim, std::uint64_t b) {
    sort_along(e, plan.axes[dim]);
    if (dim + 1 >= plan.tiled) return;
    const std::uint64_t group = str_group(e.size(), dim, plan.tiled, b);
    for (std::uint64_t start = 0; start < e.size(); start += group) {
        str_tile(e.subspan(start, std::min<std::uint64_t>(group, e.size() - start)), plan, dim + 1,
                 b);
    }
}

// An unsigned integer in the order of the float (-0 and +0 alike).
std::uint32_t ordered_bits(float f) {
    if (f == 0.0f) f = 0.0f;
    const auto bits = std::bit_cast<std::uint32_t>(f);
    return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

// Sorts values (key << 32 | index) by key, keeping the index order among equal keys: an LSD
// radix sort, 11 bits a pass (std::sort of the three axes made a third of a Hilbert build).
void radix_sort_by_high_word(std::vector<std::uint64_t>& v, std::vector<std::uint64_t>& scratch) {
    constexpr int kBits = 11;
    constexpr std::uint32_t kDigits = 1u << kBits;
    scratch.resize(v.size());
    std::vector<std::size_t> start(kDigits + 1);
    for (int shift = 32; shift < 64; shift += kBits) {
        std::fill(start.begin(), start.end(), 0);
        for (const std::uint64_t x : v) ++start[((x >> shift) & (kDigits - 1)) + 1];
        if (start[((v[0] >> shift) & (kDigits - 1)) + 1] == v.size()) continue;  // one digit
        for (std::uint32_t d = 0; d < kDigits; ++d) start[d + 1] += start[d];
        for (const std::uint64_t x : v) scratch[start[(x >> shift) & (kDigits - 1)]++] = x;
        v.swap(scratch);
    }
}

// Hilbert keys in rank space (Qi, Tao, Chang and Zhang, "Theoretically optimal and empirically
// efficient R-trees with strong parallelizability", PVLDB 2018): along each of the first
// `tiled` axes, a centroid's coordinate is replaced by its rank among all the centroids (equal
// coordinates share the smallest), scaled to kHilbertBits bits; the other axes are 0. keys[i]
// is box i's. Ranks spread every scene evenly over the grid: quantising the coordinates over
// the centroid bounds instead squeezes a play area into a few cells as soon as a few boxes
// are far away (issue 9), and boxes with equal keys are packed in arbitrary order.
std::vector<std::uint64_t> rank_hilbert_keys(std::span<const Box> boxes,
                                             const std::array<std::uint8_t, 3>& axes, int tiled) {
    const std::size_t n = boxes.size();
    std::vector<std::array<std::uint32_t, 3>> q(n, {0, 0, 0});
    std::vector<std::uint64_t> order(n), scratch;  // (ordered coordinate, index), sorted
    for (int t = 0; t < tiled && n > 0; ++t) {
        const int a = axes[t];
        for (std::size_t i = 0; i < n; ++i) {
            order[i] = std::uint64_t{ordered_bits(centroid(boxes[i])[a])} << 32 | i;
        }
        radix_sort_by_high_word(order, scratch);
        std::uint64_t rank = 0;
        for (std::size_t k = 0; k < n; ++k) {
            if (k > 0 && (order[k] >> 32) != (order[k - 1] >> 32)) rank = k;
            q[order[k] & 0xffffffffu][a] =
                static_cast<std::uint32_t>((rank << BulkRTree::kHilbertBits) / n);
        }
    }
    std::vector<std::uint64_t> keys(n);
    for (std::size_t i = 0; i < n; ++i) keys[i] = BulkRTree::hilbert_index(q[i].data());
    return keys;
}

// Packs consecutive runs of b children [0, count) into parents appended to `out`; children are
// nodes (first_child is their offset in the node array) or boxes (first_child 0).
template <class BoundsOf>
void pack_runs(std::uint32_t count, std::uint32_t b, std::uint32_t first_child,
               BoundsOf&& bounds_of, std::vector<BulkRTree::Node>& out) {
    for (std::uint32_t start = 0; start < count; start += b) {
        BulkRTree::Node node;
        node.first = first_child + start;
        node.count = std::min(b, count - start);
        node.bounds = bounds_of(start);
        for (std::uint32_t k = start + 1; k < start + node.count; ++k) {
            node.bounds = merge(node.bounds, bounds_of(k));
        }
        out.push_back(node);
    }
}

bool before(float ka, std::uint32_t ia, float kb, std::uint32_t ib) {
    return ka < kb || (ka == kb && ia < ib);
}

}  // namespace

std::uint64_t BulkRTree::hilbert_index(const std::uint32_t q[3]) {
    // J. Skilling, "Programming the Hilbert curve" (AIP Conf. Proc. 707, 2004): AxesToTranspose
    // with b = 21 bits and n = 3 axes, then the transposed form read bit plane by bit plane,
    // x[0] highest.
    constexpr std::uint32_t kTopBit = 1u << (kHilbertBits - 1);
    constexpr std::uint32_t kMask = (1u << kHilbertBits) - 1;
    std::uint32_t x[3] = {q[0] & kMask, q[1] & kMask, q[2] & kMask};
    // Branch-free: the bits are data, and mispredicted branches cost more than the arithmetic.
    for (std::uint32_t bit = kTopBit; bit > 1; bit >>= 1) {  // inverse undo
        const std::uint32_t low = bit - 1;
        for (int i = 0; i < 3; ++i) {
            const std::uint32_t set = 0u - ((x[i] & bit) != 0);  // x[i] & bit ? ~0 : 0
            const std::uint32_t t = (x[0] ^ x[i]) & low & ~set;  // exchange the low bits
            x[0] ^= (low & set) | t;                             // or invert those of x[0]
            x[i] ^= t;
        }
    }
    x[1] ^= x[0];  // Gray encode
    x[2] ^= x[1];
    std::uint32_t t = 0;
    for (std::uint32_t bit = kTopBit; bit > 1; bit >>= 1) {
        t ^= (bit - 1) & (0u - ((x[2] & bit) != 0));
    }
    for (std::uint32_t& v : x) v ^= t;
    return (lbvh::expand_bits_21(x[0]) << 2) | (lbvh::expand_bits_21(x[1]) << 1) |
           lbvh::expand_bits_21(x[2]);
}

std::string_view BulkRTree::name() const {
    switch (config_.method) {
        case BulkLoad::nearest_x:
            return "rtree_nearest_x";
        case BulkLoad::str:
            return "rtree_str";
        case BulkLoad::hilbert:
            return "rtree_hilbert";
    }
    return "rtree_str";
}

// ---- build -----------------------------------------------------------------------------------

Status BulkRTree::build(std::span<const Box> boxes) {
    nodes_.clear();
    levels_.clear();
    ids_.clear();
    boxes_.clear();
    axes_ = {0, 1, 2};
    tiled_axes_ = 1;
    if (config_.node_capacity < 2) return invalid("node_capacity must be >= 2");
    if (Status s = validate_boxes(boxes); !s) return s;
    if (boxes.size() >= std::numeric_limits<std::uint32_t>::max()) {
        return Error{ErrorCode::limit_exceeded, std::string(name()) + ": too many boxes"};
    }
    const auto n = static_cast<std::uint32_t>(boxes.size());
    if (n == 0) return Status::success();
    const std::uint32_t b = config_.node_capacity;

    std::vector<Entry> entries(n);
    for (std::uint32_t i = 0; i < n; ++i) entries[i] = {centroid(boxes[i]), i};
    const AxisSpread spread = axis_spread(
        entries, [&](std::uint32_t id) -> const Box& { return boxes[id]; },
        config_.method != BulkLoad::nearest_x);
    switch (config_.method) {
        case BulkLoad::nearest_x:
            axes_ = axes_by_spread(spread);
            sort_along(entries, axes_[0]);
            break;
        case BulkLoad::str: {
            const AxisPlan plan = plan_axes(spread);
            axes_ = plan.axes;
            tiled_axes_ = static_cast<std::uint8_t>(plan.tiled);
            str_tile(entries, plan, 0, b);
            break;
        }
        case BulkLoad::hilbert: {
            // Sort (key, id): one key per box (Schwartzian transform).
            const AxisPlan plan = plan_axes(spread);
            axes_ = plan.axes;
            tiled_axes_ = static_cast<std::uint8_t>(plan.tiled);
            const std::vector<std::uint64_t> codes = rank_hilbert_keys(boxes, axes_, plan.tiled);
            struct Keyed {
                std::uint64_t code;
                std::uint32_t id;
            };
            std::vector<Keyed> keys(n);
            for (std::uint32_t i = 0; i < n; ++i) keys[i] = {codes[i], i};
            std::sort(keys.begin(), keys.end(), [](const Keyed& x, const Keyed& y) {
                return x.code < y.code || (x.code == y.code && x.id < y.id);
            });
            for (std::uint32_t k = 0; k < n; ++k) {
                entries[k] = {centroid(boxes[keys[k].id]), keys[k].id};
            }
            break;
        }
    }

    ids_.resize(n);
    boxes_.resize(n);
    for (std::uint32_t k = 0; k < n; ++k) {
        ids_[k] = entries[k].ref;
        boxes_[k] = boxes[entries[k].ref];
    }
    nodes_.reserve(std::size_t{n} / (b - 1) + 64);
    levels_.push_back(0);
    pack_runs(
        n, b, 0, [&](std::uint32_t k) { return boxes_[k]; }, nodes_);
    levels_.push_back(static_cast<std::uint32_t>(nodes_.size()));

    std::vector<Node> level;
    while (levels_.back() - levels_[levels_.size() - 2] > 1) {
        const std::uint32_t lo = levels_[levels_.size() - 2], hi = levels_.back();
        const std::uint32_t count = hi - lo;
        if (config_.method == BulkLoad::str) {
            // Tile this level's nodes again, by the centroids of their bounds; moving a node
            // moves its child range with it, so the level below is untouched. Only the last
            // node of a level may be less than full: it stays last, outside the tiling.
            const std::uint32_t full = nodes_[hi - 1].count == b ? count : count - 1;
            entries.resize(full);
            for (std::uint32_t k = 0; k < full; ++k) {
                entries[k] = {centroid(nodes_[lo + k].bounds), k};
            }
            const AxisSpread node_spread = axis_spread(
                entries, [&](std::uint32_t k) -> const Box& { return nodes_[lo + k].bounds; });
            str_tile(entries, plan_axes(node_spread), 0, b);
            level.resize(full);
            for (std::uint32_t k = 0; k < full; ++k) level[k] = nodes_[lo + entries[k].ref];
            std::copy(level.begin(), level.end(), nodes_.begin() + lo);
        }
        level.clear();
        pack_runs(
            count, b, lo, [&](std::uint32_t k) { return nodes_[lo + k].bounds; }, level);
        nodes_.insert(nodes_.end(), level.begin(), level.end());
        levels_.push_back(static_cast<std::uint32_t>(nodes_.size()));
    }
    return Status::success();
}

// ---- self pairs ------------------------------------------------------------------------------

void BulkRTree::leaf_self_pairs(const Node& leaf, std::vector<Pair>& out) const {
    ++stats_.leaves_visited;
    const std::uint32_t end = leaf.first + leaf.count;
    for (std::uint32_t a = leaf.first; a < end; ++a) {
        const Box& box = boxes_[a];
        for (std::uint32_t c = a + 1; c < end; ++c) {
            if (overlaps(box, boxes_[c])) {
                report_pair(out, ids_[a], ids_[c]);
            }
        }
    }
    stats_.box_tests += std::uint64_t{leaf.count} * (leaf.count - 1) / 2;
}

void BulkRTree::leaf_cross_pairs(const Node& a, const Node& b, std::vector<Pair>& out) const {
    ++stats_.leaves_visited;
    for (std::uint32_t i = a.first; i < a.first + a.count; ++i) {
        const Box& box = boxes_[i];
        if (!overlaps(box, b.bounds)) continue;
        stats_.box_tests += b.count;
        for (std::uint32_t j = b.first; j < b.first + b.count; ++j) {
            if (overlaps(box, boxes_[j])) {
                report_pair(out, ids_[i], ids_[j]);
            }
        }
    }
}

void BulkRTree::self_pairs(std::vector<Pair>& out) const {
    if (nodes_.empty()) return;
    // Pending node pairs (a, b), both on the same level (all leaves are at one depth), with
    // overlapping bounds. a == b stands for the pairs inside one subtree; otherwise a < b in
    // sibling order, so no unordered node pair is visited twice.
    struct Task {
        std::uint32_t a, b;
    };
    std::vector<Task> stack;
    stack.reserve(256);
    stack.push_back({root(), root()});
    while (!stack.empty()) {
        const Task task = stack.back();
        stack.pop_back();
        const Node& na = nodes_[task.a];
        if (task.a == task.b) {
            if (is_leaf(task.a)) {
                leaf_self_pairs(na, out);
                continue;
            }
            ++stats_.nodes_visited;
            const std::uint32_t end = na.first + na.count;
            for (std::uint32_t i = na.first; i < end; ++i) {
                stack.push_back({i, i});
                const Box& bi = nodes_[i].bounds;
                for (std::uint32_t j = i + 1; j < end; ++j) {
                    if (overlaps(bi, nodes_[j].bounds)) stack.push_back({i, j});
                }
            }
            continue;
        }
        const Node& nb = nodes_[task.b];
        if (is_leaf(task.a)) {
            leaf_cross_pairs(na, nb, out);
            continue;
        }
        ++stats_.nodes_visited;
        for (std::uint32_t i = na.first; i < na.first + na.count; ++i) {
            const Box& bi = nodes_[i].bounds;
            if (!overlaps(bi, nb.bounds)) continue;
            for (std::uint32_t j = nb.first; j < nb.first + nb.count; ++j) {
                if (overlaps(bi, nodes_[j].bounds)) stack.push_back({i, j});
            }
        }
    }
}

// ---- region, point and ray queries -----------------------------------------------------------

template <class Meets>
void BulkRTree::collect(Meets&& meets, std::vector<std::uint32_t>& out) const {
    if (nodes_.empty() || !meets(nodes_[root()].bounds)) return;
    std::vector<std::uint32_t> stack{root()};
    while (!stack.empty()) {
        const std::uint32_t index = stack.back();
        stack.pop_back();
        const Node& node = nodes_[index];
        if (is_leaf(index)) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.count;
            for (std::uint32_t k = node.first; k < node.first + node.count; ++k) {
                if (meets(boxes_[k])) out.push_back(ids_[k]);
            }
            continue;
        }
        ++stats_.nodes_visited;
        for (std::uint32_t c = node.first; c < node.first + node.count; ++c) {
            if (meets(nodes_[c].bounds)) stack.push_back(c);
        }
    }
}

void BulkRTree::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    collect([&](const Box& box) { return overlaps(region, box); }, out);
}

std::optional<RayHit> BulkRTree::ray_cast(const Ray& ray) const {
    if (nodes_.empty()) return std::nullopt;
    // Node bounds key the nodes (best_first::closest_hit).
    const std::optional<float> root_t = ray_box_entry(ray, nodes_[root()].bounds);
    if (!root_t) return std::nullopt;
    return best_first::closest_hit(
        root(), *root_t, [&](std::uint32_t index, std::optional<RayHit>& best, const auto& push) {
            const Node& node = nodes_[index];
            if (is_leaf(index)) {
                ++stats_.leaves_visited;
                stats_.box_tests += node.count;
                for (std::uint32_t k = node.first; k < node.first + node.count; ++k) {
                    keep_closer(best, ids_[k], ray_box_entry(ray, boxes_[k]));
                }
                return;
            }
            ++stats_.nodes_visited;
            for (std::uint32_t c = node.first; c < node.first + node.count; ++c) {
                if (const std::optional<float> t = ray_box_entry(ray, nodes_[c].bounds))
                    push(*t, c);
            }
        });
}

// ---- nearest ---------------------------------------------------------------------------------

Status BulkRTree::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0 || nodes_.empty()) return Status::success();
    // Node keys are point_box_distance of the node bounds (monotone under containment).
    best_first::Queue queue;
    queue.push_node(point_box_distance(p, nodes_[root()].bounds), root());
    queue.search(k, out, [&](std::uint32_t index, best_first::Queue& q) {
        const Node& node = nodes_[index];
        if (is_leaf(index)) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.count;
            for (std::uint32_t s = node.first; s < node.first + node.count; ++s)
                q.push_box(point_box_distance(p, boxes_[s]), ids_[s]);
            return;
        }
        ++stats_.nodes_visited;
        for (std::uint32_t c = node.first; c < node.first + node.count; ++c)
            q.push_node(point_box_distance(p, nodes_[c].bounds), c);
    });
    return Status::success();
}

// ---- validate --------------------------------------------------------------------------------

std::size_t BulkRTree::size() const {
    return boxes_.size();
}

Status BulkRTree::validate() const {
    const BulkLoad m = config_.method;
    const std::size_t n = boxes_.size();
    const std::uint32_t b = config_.node_capacity;
    // A bad Config (build() refuses it), not a broken invariant: it keeps invalid_argument.
    if (b < 2) return invalid("node_capacity below 2");
    if (Status s = validate_slots(boxes_, ids_); !s) return s;
    if (n == 0) {
        return nodes_.empty() && levels_.empty() ? Status::success()
                                                 : broken("nodes in an empty tree");
    }
    if (levels_.size() < 2 || levels_.front() != 0 || levels_.back() != nodes_.size()) {
        return broken("level offsets do not partition the node array");
    }

    // Each level: ceil(children / b) nodes whose ranges tile the level below in order, all
    // full but the last. Leaves only on level 0 and a single root make every leaf equally deep.
    std::size_t children = n;
    for (std::size_t level = 0; level + 1 < levels_.size(); ++level) {
        const std::uint32_t lo = levels_[level], hi = levels_[level + 1];
        const std::string where_level = "level " + std::to_string(level) + ": ";
        if (hi <= lo) return broken(where_level + "empty");
        if (hi - lo != (children + b - 1) / b) {
            return broken(where_level + std::to_string(hi - lo) + " nodes over " +
                          std::to_string(children) + " children");
        }
        const std::uint32_t child_base = level == 0 ? 0 : levels_[level - 1];
        // Child ranges are contiguous and tile the level below; they follow one another in
        // order except where STR re-tiled the nodes of a level.
        std::vector<bool> covered(children, false);
        std::size_t next = 0;
        for (std::uint32_t index = lo; index < hi; ++index) {
            const Node& node = nodes_[index];
            const std::string where = "node " + std::to_string(index) + ": ";
            const bool last = index + 1 == hi;
            if (node.count == 0 || node.count > b || (!last && node.count != b)) {
                return broken(where + "holds " + std::to_string(node.count) +
                              " children; only the last node of a level may be "
                              "less than full");
            }
            if (node.first < child_base ||
                std::size_t{node.first - child_base} + node.count > children) {
                return broken(where + "children outside the level below");
            }
            if (m != BulkLoad::str && node.first != child_base + next) {
                return broken(where + "children do not follow its left neighbour's");
            }
            for (std::uint32_t c = node.first; c < node.first + node.count; ++c) {
                if (covered[c - child_base]) {
                    return broken(where + "child " + std::to_string(c) + " has two parents");
                }
                covered[c - child_base] = true;
            }
            Box expect = level == 0 ? boxes_[node.first] : nodes_[node.first].bounds;
            for (std::uint32_t c = node.first + 1; c < node.first + node.count; ++c) {
                expect = merge(expect, level == 0 ? boxes_[c] : nodes_[c].bounds);
            }
            if (!(expect == node.bounds)) {
                return broken(where + "bounds are not the union of its children");
            }
            next += node.count;
        }
        if (next != children) return broken(where_level + "does not cover the level below");
        children = hi - lo;
    }
    if (children != 1) return broken("the top level has more than one node");
    return validate_leaf_order();
}

// The leaf order each method promises, recomputed from the stored boxes.
Status BulkRTree::validate_leaf_order() const {
    const BulkLoad m = config_.method;
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    if (m == BulkLoad::nearest_x) {
        const int axis = axes_[0];
        for (std::uint32_t k = 1; k < n; ++k) {
            if (before(centroid(boxes_[k])[axis], ids_[k], centroid(boxes_[k - 1])[axis],
                       ids_[k - 1])) {
                return broken("box " + std::to_string(ids_[k]) + " out of centroid order", ids_[k]);
            }
        }
        return Status::success();
    }
    if (m == BulkLoad::hilbert) {
        const std::vector<std::uint64_t> keys = rank_hilbert_keys(boxes_, axes_, tiled_axes_);
        for (std::uint32_t k = 1; k < n; ++k) {
            const std::uint64_t code = keys[k], previous = keys[k - 1];
            if (code < previous || (code == previous && ids_[k] < ids_[k - 1])) {
                return broken("box " + std::to_string(ids_[k]) + " out of Hilbert order", ids_[k]);
            }
        }
        return Status::success();
    }
    // STR: within each range, groups of the tiling sizes ordered along the range's axis (the
    // last key of a group <= the first of the next), the innermost ranges sorted along
    // the last tiled axis.
    struct Range {
        std::uint32_t begin, end;
        int dim;
    };
    std::vector<Range> stack{{0, n, 0}};
    const std::uint64_t b = config_.node_capacity;
    while (!stack.empty()) {
        const Range r = stack.back();
        stack.pop_back();
        const int axis = axes_[r.dim];
        const bool last = r.dim + 1 >= tiled_axes_;
        const std::uint64_t group = last ? 1 : str_group(r.end - r.begin, r.dim, tiled_axes_, b);
        float previous_max = -std::numeric_limits<float>::infinity();
        for (std::uint64_t start = r.begin; start < r.end; start += group) {
            const auto end =
                static_cast<std::uint32_t>(std::min<std::uint64_t>(start + group, r.end));
            float lo = std::numeric_limits<float>::infinity(), hi = -lo;
            for (auto k = static_cast<std::uint32_t>(start); k < end; ++k) {
                const float key = centroid(boxes_[k])[axis];
                lo = std::min(lo, key);
                hi = std::max(hi, key);
            }
            if (lo < previous_max) {
                return broken("STR tile at box " + std::to_string(ids_[start]) +
                                  " out of order along axis " + std::to_string(axis),
                              ids_[start]);
            }
            previous_max = hi;
            if (!last) stack.push_back({static_cast<std::uint32_t>(start), end, r.dim + 1});
        }
    }
    return Status::success();
}

}  // namespace broadphase
